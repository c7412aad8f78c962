package wire

import (
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"
)

// PoisonClass is the class of the wrapper that carries an undecodable job into the dead set.
const PoisonClass = "<unknown>"

// PoisonErrorClass is the error_class of a dead-lettered poison message.
const PoisonErrorClass = "exq.DecodeError"

// Poison wraps a raw document (kept in "raw", and in "raw_base64" too when it is not valid UTF-8) that cannot run (WIRE.md §2) so it can sit in the dead set, where
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
	if !utf8.ValidString(raw) {
		// A JSON string cannot hold invalid UTF-8 (it becomes U+FFFD): keep the exact bytes too.
		b.WriteString(`,"raw_base64":"` + base64.StdEncoding.EncodeToString([]byte(raw)) + `"`)
	}
	b.WriteString(`,"enqueued_at":` + ts + `,"retry":0,"retry_count":0,"failed_at":` + ts + `,"retried_at":` + ts)
	b.WriteString(`,"error_class":`)
	b.Write(Quote(PoisonErrorClass))
	b.WriteString(`,"error_message":`)
	b.Write(Quote(reason))
	b.WriteByte('}')
	return b.String()
}
