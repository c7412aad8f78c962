package exq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQueueNamesAcceptedAndRefused(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"default", "mail", "mail:high", "gitlab:pipeline_processing:build", "a.b-c_d", "Émails", "a b"} {
		assert.NoError(t, checkQueueName(q), q)
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
		err := checkQueueName(q)
		if assert.Error(t, err, "%q", q) {
			assert.Contains(t, err.Error(), want, "%q", q)
		}
	}
}

func TestQueueNamesAreCheckedEverywhereAQueueIsNamed(t *testing.T) {
	t.Parallel()
	_, err := PrepareJob(time.Now(), JobSpec{Queue: ":mail", Class: "W"})
	assert.ErrorIs(t, err, ErrInvalidJob)
	assert.ErrorContains(t, err, `exq: enqueue: queue name ":mail" starts or ends with ':'`)
	_, err = Options{Queues: []Queue{{Name: "a/b"}}}.withDefaults(testHooks{})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "Queues[0].Name")
	_, err = PrepareJob(time.Now(), JobSpec{Queue: "mail:high", Class: "W"})
	assert.NoError(t, err, "a ':' inside a name is fine, as in Sidekiq")
}

func TestClientOptionsAreValidatedOnTheirOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := NewClient(ctx, ClientOptions{MaxRetries: -2})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "MaxRetries")
	_, err = NewAPI(ctx, ClientOptions{NoNamespace: true, Namespace: "x"})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "Namespace")
	c, err := ClientOptions{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, ClientOptions{RedisURL: DefaultRedisURL, RedisTimeout: DefaultRedisTimeout, Namespace: DefaultNamespace,
		MaxRetries: DefaultMaxRetries, Logger: c.Logger}, c)
	o := Options{RedisURL: "redis://h:1/2", Namespace: "n", MaxRetries: 3, Queues: []Queue{{Name: "q"}}}
	assert.Equal(t, ClientOptions{RedisURL: "redis://h:1/2", Namespace: "n", MaxRetries: 3}, o.ClientOptions())
}

func TestUniqueOptionNamesItsSettings(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "Unique(until success, for 1h0m0s)", Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour}).String())
	assert.Equal(t, `Unique(until expiry, for 1m0s, token "t")`, Unique(UniqueOpts{Until: UntilExpiry, For: time.Minute, Token: "t"}).String())
}

// FuzzQueueNameFastPathAgreesWithTheFullCheck: the fast path accepts only names the full
// check accepts (anything else goes to the full check, so refusals keep their messages).
func FuzzQueueNameFastPathAgreesWithTheFullCheck(f *testing.F) {
	for _, q := range []string{"default", "mail:high", "a::b", ":a", "a:", "a/b", "a$", " a", "a ", "a\x7f", "É", "a:b:c", ""} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if plainQueueName(q) && queueNameProblem(q) != nil {
			t.Fatalf("the fast path accepts %q, which the full check refuses: %v", q, queueNameProblem(q))
		}
	})
}
