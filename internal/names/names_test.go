package names

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQueueNamesAcceptedAndRefused(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"default", "mail", "mail:high", "gitlab:pipeline_processing:build", "a.b-c_d", "Émails", "a b"} {
		assert.NoError(t, CheckQueue(q), q)
	}
	for q, want := range map[string]string{
		"":           "queue name is empty",
		"a::b":       `contains "::"`,
		"backup::n":  `contains "::"`,
		":a":         "starts or ends with ':'",
		"a:":         "starts or ends with ':'",
		"a/b":        "contains '/' or '$'",
		"a$":         "contains '/' or '$'",
		"a\nb":       "control character",
		" default":   "leading or trailing space",
		"default\t":  "control character",
		"mail:high ": "leading or trailing space",
	} {
		err := CheckQueue(q)
		if assert.Error(t, err, "%q", q) {
			assert.Contains(t, err.Error(), want, "%q", q)
		}
	}
}

// FuzzQueueNameFastPathAgreesWithTheFullCheck: the fast path accepts only names the full
// check accepts (anything else goes to the full check, so refusals keep their messages).
func FuzzQueueNameFastPathAgreesWithTheFullCheck(f *testing.F) {
	for _, q := range []string{"default", "mail:high", "a::b", ":a", "a:", "a/b", "a$", " a", "a ", "a\x7f", "É", "a:b:c", ""} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if PlainQueue(q) && QueueProblem(q) != nil {
			t.Fatalf("the fast path accepts %q, which the full check refuses: %v", q, QueueProblem(q))
		}
	})
}

func TestHashTagIsWhatRedisClusterReads(t *testing.T) {
	t.Parallel()
	for ns, tag := range map[string]string{
		"exq": "", "{exq}": "exq", "app{exq}": "exq", "{exq}:x": "exq", "{}exq": "", "{exq": "",
		"exq}": "", "{}{exq}": "", "{a}{b}": "a", "": "",
	} {
		assert.Equal(t, tag, HashTag(ns), "namespace %q", ns)
	}
}
