package wire

import (
	"fmt"
	"strings"
)

// DebounceField is the top-level field naming a debounced job's debounce key (exq's own; Exq
// and Sidekiq keep it as any field they do not know), so that a UI or the admin API can tell
// which burst a scheduled job stands for.
const DebounceField = "debounce_key"

// The field is the job's own, not metadata a caller can set with exq.Meta.
func init() { reserved[DebounceField] = true }

// Debounce is exq's own hash holding the state of debounce key key's current burst (the jid
// that burst's job carries, its first enqueue time, its due time and the document it waits
// under in the schedule set), written and read only by debounce.lua.
func (k Keys) Debounce(key string) string { return k.Prefix + "debounce:" + key }

// DebounceParts splits doc, which must be j.Encode(), around the values of its jid and
// enqueued_at fields, which sit together in every document Encode writes: head ends with
// `"jid":`, tail starts with `,"created_at":`. debounce.lua puts a burst's jid and its due
// time between them, on the Redis server's clock.
func (j NewJob) DebounceParts(doc string) (head, tail string, err error) {
	n := len(`{"class":`) + len(AppendQuote(nil, j.Class)) + len(`,"args":`) + len(j.Args) + len(`,"queue":`) +
		len(AppendQuote(nil, j.Queue)) + len(`,"jid":`)
	m := n + len(AppendQuote(nil, j.JID)) + len(`,"enqueued_at":`) + len(FormatStamp(j.EnqueuedAt, j.Unit))
	if m > len(doc) || !strings.HasSuffix(doc[:n], `,"jid":`) || !strings.HasPrefix(doc[m:], `,"created_at":`) {
		return "", "", fmt.Errorf("debounce: the document does not have Encode's layout")
	}
	return doc[:n], doc[m:], nil
}
