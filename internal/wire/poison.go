package wire

import (
	"strings"
	"time"
)

// PoisonClass is the class of the wrapper that carries an undecodable job into the dead set.
const PoisonClass = "<unknown>"

// PoisonErrorClass is the error_class of a dead-lettered poison message.
const PoisonErrorClass = "exq.DecodeError"

// Poison wraps a raw document that cannot run (WIRE.md §2) so it can sit in the dead set, where
// people and the admin API can read it, without anything trying to run it again.
func Poison(raw, queue, jid, reason string, now time.Time) string {
	ts := FormatTime(now)
	var b strings.Builder
	b.WriteString(`{"class":`)
	b.Write(Quote(PoisonClass))
	b.WriteString(`,"args":[],"queue":`)
	b.Write(Quote(queue))
	b.WriteString(`,"jid":`)
	b.Write(Quote(jid))
	b.WriteString(`,"raw":`)
	b.Write(Quote(raw))
	b.WriteString(`,"enqueued_at":` + ts + `,"retry":0,"retry_count":0,"failed_at":` + ts + `,"retried_at":` + ts)
	b.WriteString(`,"error_class":`)
	b.Write(Quote(PoisonErrorClass))
	b.WriteString(`,"error_message":`)
	b.Write(Quote(reason))
	b.WriteByte('}')
	return b.String()
}
