package wire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The fuzz targets below run their seed corpus (testdata/fuzz/<FuzzName>/) in every plain
// `go test`. A short fuzzing run in CI, one target per invocation:
//
//	for f in FuzzDecodeHeader FuzzObjectRewrite FuzzPoisonWrapper; do
//		go test -run '^$' -fuzz "^$f\$" -fuzztime 10s ./internal/wire || exit 1
//	done

// FuzzDecodeHeader: any input is either a runnable header (a class, args that are a JSON
// list) or a poison message; it never panics, and a runnable job can always be rewritten for
// a retry or a death (worker.go relies on ParseObject accepting what DecodeHeader accepted).
func FuzzDecodeHeader(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string) {
		h, err := DecodeHeader(raw)
		if want := runnableByEncodingJSON(raw); (err == nil) != want {
			t.Fatalf("DecodeHeader(%q): error %v, but encoding/json says runnable=%v", raw, err, want)
		}
		if err != nil {
			if !errors.Is(err, ErrPoison) {
				t.Fatalf("DecodeHeader(%q) failed without ErrPoison: %v", raw, err)
			}
			return
		}
		if h.Class == "" {
			t.Fatalf("DecodeHeader(%q) accepted an empty class", raw)
		}
		if len(h.Args) == 0 || h.Args[0] != '[' {
			t.Fatalf("DecodeHeader(%q): args %q do not start with '['", raw, h.Args)
		}
		if !json.Valid([]byte(h.Args)) {
			t.Fatalf("DecodeHeader(%q): args %q are not valid JSON", raw, h.Args)
		}
		if _, err := ParseObject(raw); err != nil {
			t.Fatalf("DecodeHeader accepted %q but ParseObject refuses it (a failure could not be written): %v", raw, err)
		}
	})
}

// runnableByEncodingJSON is DecodeHeader's verdict worked out with encoding/json: a JSON
// object whose class is a non-empty string and whose args are absent, null or a list.
func runnableByEncodingJSON(raw string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil || m == nil {
		return false
	}
	var class string
	if c, ok := m["class"]; !ok || len(c) == 0 || c[0] != '"' || json.Unmarshal(c, &class) != nil || class == "" {
		return false
	}
	args, ok := m["args"]
	return !ok || string(args) == "null" || args[0] == '['
}

// FuzzObjectRewrite: for any document ParseObject accepts, String() is valid JSON and stable
// under a second round trip, and the rewrite a failure does (retry_count, error_message,
// failed_at) changes those three fields only: every other field keeps its exact bytes and its
// place.
func FuzzObjectRewrite(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string, n int, msg string, sec, nsec int64) {
		o, err := ParseObject(raw)
		if err != nil {
			if !errors.Is(err, ErrPoison) {
				t.Fatalf("ParseObject(%q) failed without ErrPoison: %v", raw, err)
			}
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(raw), &m) == nil && m != nil {
				t.Fatalf("ParseObject refuses %q, a JSON object: %v", raw, err)
			}
			return
		}
		orig, ok := rawFields(raw)
		if !ok {
			t.Fatalf("ParseObject accepted %q, which is not a JSON object", raw)
		}

		out := o.String()
		if !json.Valid([]byte(out)) {
			t.Fatalf("String() of %q is not valid JSON: %q", raw, out)
		}
		again, err := ParseObject(out)
		if err != nil {
			t.Fatalf("ParseObject refuses its own output %q (from %q): %v", out, raw, err)
		}
		if got := again.String(); got != out {
			t.Fatalf("round trip not stable for %q:\nfirst  %q\nsecond %q", raw, out, got)
		}
		assertFields(t, raw, out, orig.fields)

		// Times beyond ±292 000 years do not fit in int64 microseconds (time.UnixMicro).
		at := time.Unix(sec%1e12, nsec%1e9)
		o.SetInt("retry_count", n)
		o.SetString("error_message", msg)
		o.SetTime("failed_at", at)
		rewritten := o.String()
		if !json.Valid([]byte(rewritten)) {
			t.Fatalf("rewrite of %q is not valid JSON: %q", raw, rewritten)
		}
		// The three set fields keep their place (or come last, in the order set) with new values,
		// checked below; every other field must be unchanged.
		want := append([]field(nil), orig.fields...)
		for _, k := range []string{"retry_count", "error_message", "failed_at"} {
			if i, ok := orig.index[k]; ok {
				want[i].val = ""
			} else {
				want = append(want, field{key: k})
			}
		}
		got := assertFields(t, raw, rewritten, want)
		for _, g := range got {
			switch g.key {
			case "retry_count":
				var v int
				if err := json.Unmarshal([]byte(g.val), &v); err != nil || v != n {
					t.Fatalf("retry_count of %q is %s (%v), want %d", rewritten, g.val, err, n)
				}
			case "error_message":
				var v string
				// A JSON string cannot hold invalid UTF-8: each bad byte becomes U+FFFD.
				if err := json.Unmarshal([]byte(g.val), &v); err != nil || v != string([]rune(msg)) {
					t.Fatalf("error_message of %q is %s (%v), want %q", rewritten, g.val, err, msg)
				}
			case "failed_at":
				if us, ok := parseMicros(g.val); !ok || us != at.UnixMicro() {
					t.Fatalf("failed_at of %q is %s, want %d µs (%s)", rewritten, g.val, at.UnixMicro(), at.UTC())
				}
			}
		}
	})
}

// FuzzPoisonWrapper: the wrapper of a poison message is always valid JSON, readable as a job
// of class "<unknown>", and gives back the exact document it carries.
func FuzzPoisonWrapper(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw, queue, jid, reason string, sec int64) {
		doc := Poison(raw, queue, jid, reason, time.Unix(sec%1e12, 0))
		if !json.Valid([]byte(doc)) {
			t.Fatalf("Poison(%q) is not valid JSON: %q", raw, doc)
		}
		var m struct {
			Raw       *string `json:"raw"`
			RawBase64 *string `json:"raw_base64"`
		}
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("Poison(%q) does not decode: %v", raw, err)
		}
		if m.Raw == nil {
			t.Fatalf("Poison(%q) has no raw field: %s", raw, doc)
		}
		if utf8.ValidString(raw) {
			if *m.Raw != raw {
				t.Fatalf("raw of Poison(%q) is %q", raw, *m.Raw)
			}
			if m.RawBase64 != nil {
				t.Fatalf("Poison(%q) has raw_base64 for valid UTF-8", raw)
			}
		} else {
			if m.RawBase64 == nil {
				t.Fatalf("Poison(%q) of invalid UTF-8 has no raw_base64: %s", raw, doc)
			}
			b, err := base64.StdEncoding.DecodeString(*m.RawBase64)
			if err != nil || string(b) != raw {
				t.Fatalf("raw_base64 of Poison(%q) gives %q (%v)", raw, b, err)
			}
		}
		h, err := DecodeHeader(doc)
		if err != nil || h.Class != PoisonClass {
			t.Fatalf("the wrapper of %q is not a readable %s job: %+v, %v", raw, PoisonClass, h, err)
		}
		if _, err := ParseObject(doc); err != nil {
			t.Fatalf("the wrapper of %q cannot be parsed for a rewrite: %v", raw, err)
		}
	})
}

// field is one member of a JSON object: its decoded key and its value's exact bytes.
type field struct{ key, val string }

type fields struct {
	fields []field        // first-appearance order, last value wins (as Ruby and Elixir read it)
	index  map[string]int // key → position in fields
}

// rawFields splits a top-level JSON object into its members, cutting each value's bytes out of
// the input itself (so the check does not depend on how ParseObject keeps them).
func rawFields(doc string) (fields, bool) {
	fs := fields{index: map[string]int{}}
	dec := json.NewDecoder(strings.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fs, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fs, false
		}
		key, ok := tok.(string)
		if !ok {
			return fs, false
		}
		start := dec.InputOffset()
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fs, false
		}
		val := strings.Trim(doc[start:dec.InputOffset()], " \t\r\n")
		val = strings.TrimLeft(strings.TrimPrefix(val, ":"), " \t\r\n")
		if i, dup := fs.index[key]; dup {
			fs.fields[i].val = val
			continue
		}
		fs.index[key] = len(fs.fields)
		fs.fields = append(fs.fields, field{key, val})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return fs, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return fs, false
	}
	return fs, true
}

// assertFields checks that out has exactly the keys of want, in that order, each with want's
// exact value bytes (an empty val is not compared), and returns out's members.
func assertFields(t *testing.T, raw, out string, want []field) []field {
	t.Helper()
	got, ok := rawFields(out)
	if !ok {
		t.Fatalf("output %q (from %q) is not a JSON object", out, raw)
	}
	if len(got.fields) != len(want) {
		t.Fatalf("output of %q has %d fields, want %d:\nout  %q\nwant %q", raw, len(got.fields), len(want), out, want)
	}
	for i, w := range want {
		g := got.fields[i]
		if g.key != w.key {
			t.Fatalf("field %d of the output of %q is %q, want %q:\nout %q", i, raw, g.key, w.key, out)
		}
		if w.val != "" && g.val != w.val {
			t.Fatalf("field %q of %q changed:\nwas %q\nnow %q", w.key, raw, w.val, g.val)
		}
	}
	return got.fields
}

// parseMicros reads a "<seconds>.<6 digits>" timestamp into integer microseconds, exactly.
func parseMicros(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	whole, frac, ok := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if !ok || len(frac) != 6 || whole == "" || strings.ContainsAny(whole+frac, "+-") {
		return 0, false
	}
	w, err1 := strconv.ParseInt(whole, 10, 64)
	fr, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	us := w*1e6 + fr
	if neg {
		us = -us
	}
	return us, true
}
