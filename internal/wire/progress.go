package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxProgressMessage bounds a progress message in bytes: SetProgress refuses a longer one, and
// a reader cuts one written by another program to it.
const MaxProgressMessage = 200

// Progress is what a running job last reported: a fraction of its work done, from 0 to 1, and
// a message. It travels in the job's busy-list entry (WIRE §4) as the field
// "progress":{"fraction":0.42,"message":"…"}, exq's own; UIs that do not know it ignore it.
type Progress struct {
	Fraction float64
	Message  string
}

// appendProgress appends the progress field to a busy entry under construction.
func appendProgress(b *strings.Builder, p *Progress) {
	b.WriteString(`,"progress":{"fraction":`)
	b.WriteString(strconv.FormatFloat(p.Fraction, 'g', -1, 64))
	b.WriteString(`,"message":`)
	b.Write(Quote(p.Message))
	b.WriteByte('}')
}

// ParseProgress reads the progress field of a busy entry written by any program: nil when it
// is absent or not an object with a numeric fraction from 0 to 1 (a string, 1e300, a negative
// number); a message that is not a string is left out, a longer one than MaxProgressMessage is
// cut to it (at a character boundary) and invalid UTF-8 replaced.
func ParseProgress(raw json.RawMessage) *Progress {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var v struct {
		Fraction json.RawMessage `json:"fraction"`
		Message  json.RawMessage `json:"message"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var f *float64 // nil for null
	if json.Unmarshal(v.Fraction, &f) != nil || f == nil || math.IsNaN(*f) || *f < 0 || *f > 1 {
		return nil
	}
	p := &Progress{Fraction: *f}
	var msg string
	if json.Unmarshal(v.Message, &msg) == nil {
		p.Message = cutUTF8(strings.ToValidUTF8(cutUTF8(msg, MaxProgressMessage), "\uFFFD"), MaxProgressMessage)
	}
	return p
}

// cutUTF8 returns s cut to at most n bytes, not inside a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// CheckProgress says what is wrong with a progress a job reports, or returns nil: the fraction
// must be a number from 0 to 1, the message valid UTF-8 of at most MaxProgressMessage bytes.
func CheckProgress(fraction float64, message string) error {
	switch {
	case math.IsNaN(fraction) || fraction < 0 || fraction > 1:
		return fmt.Errorf("fraction %v is not a number from 0 to 1", fraction)
	case len(message) > MaxProgressMessage:
		return fmt.Errorf("message of %d bytes is longer than %d", len(message), MaxProgressMessage)
	case !utf8.ValidString(message):
		return errors.New("message is not valid UTF-8")
	}
	return nil
}
