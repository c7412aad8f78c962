package textsafe

import (
	"bytes"
	"encoding/json"
	"math"
	"time"
)

// Time is a time for JSON output that never fails to encode. encoding/json writes a
// time.Time as RFC 3339, which has four-digit years: a time outside years 0000–9999 (a stored
// 1e12 seconds is year 33658) makes time.Time.MarshalJSON fail, and with it the whole
// document, so one bad record emptied a listing. Time writes such a time as null: one bad
// record spoils its own field, never the answer. Inside the range it writes what time.Time
// writes.
type Time struct{ time.Time }

// TimeOf is t for JSON output: nil (left out with omitempty) when t is zero.
func TimeOf(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t.UTC()}
}

// InJSONRange reports whether RFC 3339 can write t: its year is 0000–9999.
func InJSONRange(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// MarshalJSON writes t as time.Time does (RFC 3339), or null when RFC 3339 cannot write it.
func (t Time) MarshalJSON() ([]byte, error) {
	if !InJSONRange(t.Time) {
		return []byte("null"), nil
	}
	b, err := t.Time.MarshalJSON()
	if err != nil { // an offset RFC 3339 cannot write either: not a time a reader can use
		return []byte("null"), nil
	}
	return b, nil
}

// Float is a number for JSON output that never fails to encode: encoding/json refuses NaN
// and ±Inf (and with them the whole document); Float writes them as null.
type Float float64

// MarshalJSON writes f as encoding/json writes a float64, or null when it is not finite.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// JSONIndentDepth is how many levels of a JSON document for a command's output are indented;
// deeper values are written compact on one line. Indenting every level makes the output grow
// with the square of the depth (a 2 KB job nested 999 deep printed 2 MB); with this bound
// the indenting adds at most a few bytes per value of the first levels, so the output stays
// within a small multiple of the compact document. The levels an output's own structure uses
// (a list of objects, their fields, a list in a field) are all indented.
const JSONIndentDepth = 4

// MarshalJSON encodes v as JSON for a person and a script alike: without HTML escaping,
// indented by two spaces for JSONIndentDepth levels (Pretty), ending in a line break. The
// work and the output are linear in the size of the compact encoding.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out, _ := Pretty(bytes.TrimRight(b.Bytes(), "\n"), JSONIndentDepth, math.MaxInt)
	return append([]byte(out), '\n'), nil
}
