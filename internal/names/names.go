// Package names holds exq's rules for the names it writes into Redis and shows to other
// runtimes' tools: queue names, Sidekiq labels, the default node id and tag, and the hash tag
// of a Cluster namespace.
package names

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// CheckQueue refuses queue names that would make keys other runtimes and tools misread,
// or that Sidekiq's Web UI cannot open. A single ':' inside a name is allowed: Sidekiq and Exq
// accept any string, and Sidekiq applications name queues "namespace:queue" (GitLab does), so
// refusing it would stop exq from sharing their queues. What is refused, and why:
//   - "::", and ':' at either end: "::" separates node and queue in backup list keys
//     (queue:backup::<node>::<queue>), so a name containing it, or starting with ':' (node
//     "n:" and queue "q" would read like node "n" and queue ":q"), could be split wrongly;
//   - '/' and '$': Sidekiq Web routes /queues/<name> with the pattern [^$/]+, so it could
//     not show or clear such a queue;
//   - control characters and leading or trailing space: invisible in every UI and log.
func CheckQueue(q string) error {
	if PlainQueue(q) {
		return nil
	}
	return QueueProblem(q)
}

// QueueProblem says what is wrong with a queue name, or nil.
func QueueProblem(q string) error {
	switch {
	case q == "":
		return errors.New("queue name is empty")
	case strings.Contains(q, "::"):
		return fmt.Errorf("queue name %q contains \"::\", which separates node and queue in backup list keys", q)
	case q[0] == ':' || q[len(q)-1] == ':':
		return fmt.Errorf("queue name %q starts or ends with ':' (a ':' must sit between other characters, as in \"mail:high\"): "+
			"backup list keys (queue:backup::<node>::<queue>) could not be split", q)
	case strings.ContainsAny(q, "/$"):
		return fmt.Errorf("queue name %q contains '/' or '$', which Sidekiq's Web UI cannot route to", q)
	case strings.IndexFunc(q, unicode.IsControl) >= 0:
		return fmt.Errorf("queue name %q contains a control character", q)
	case strings.TrimSpace(q) != q:
		return fmt.Errorf("queue name %q has leading or trailing space", q)
	}
	return nil
}

// PlainQueue is CheckQueue's fast path, for every enqueued job: true for a name of
// printable ASCII without '/', '$', "::", a ':' or space at either end, which it accepts.
func PlainQueue(q string) bool {
	if q == "" || q[0] == ':' || q[0] == ' ' || q[len(q)-1] == ':' || q[len(q)-1] == ' ' {
		return false
	}
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c < 0x20 || c > 0x7e, c == '/', c == '$':
			return false
		case c == ':' && i+1 < len(q) && q[i+1] == ':':
			return false
		}
	}
	return true
}

// CheckLabel refuses what Sidekiq's Web UI would render as markup (it does not escape tags
// and labels) and what cannot be shown on one line.
func CheckLabel(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return errors.New("is empty")
	case strings.ContainsAny(s, "<>&\"'"):
		return fmt.Errorf("%q contains one of < > & \" ', which Sidekiq's Web UI would render as markup", s)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("%q contains a control character", s)
	case len(s) > 100:
		return fmt.Errorf("is %d bytes long, more than 100", len(s))
	}
	return nil
}

// DefaultTag is the binary's name, with what CheckLabel refuses taken out.
func DefaultTag() string {
	tag := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || strings.ContainsRune("<>&\"'", r) {
			return -1
		}
		return r
	}, filepath.Base(os.Args[0]))
	if len(tag) > 100 {
		tag = tag[:100]
	}
	if CheckLabel(tag) != nil {
		return "exq"
	}
	return tag
}

// DefaultNodeID is "<hostname>:<pid>:<random>", unique per process (DESIGN.md §2).
func DefaultNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// HashTag returns the hash tag that Redis Cluster reads in a key starting with ns + ":": what
// lies between the first '{' and the next '}', when that is not empty and within ns. "" means
// the slot depends on the rest of the key.
func HashTag(ns string) string {
	i := strings.IndexByte(ns, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(ns[i+1:], '}')
	if j <= 0 {
		return ""
	}
	return ns[i+1 : i+1+j]
}
