// Package bind is Job.Bind: it decodes a job's JSON args array into the caller's destinations.
package bind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is Job.Bind's fast path. Bind splits the args array in place (scanArgs, which
// accepts exactly the texts json.Unmarshal accepts into a []json.RawMessage) and decodes
// each arg whose destination is a pointer to a common built-in type (bindArg) without
// reflection. Every other destination, and every arg the fast path declines, goes through
// Decode (encoding/json with UseNumber), as before. The fast path never reports an
// error of its own: it either stores exactly what encoding/json would store and succeeds,
// or it declines before writing anything, and Decode then decides (and words the error).
// FuzzBindMatchesEncodingJSON checks both halves against encoding/json.

// bindSpans is how many args Bind splits without allocating.
const bindSpans = 8

// argSpan is one arg's text in Job.Args: Args[start:end].
type argSpan struct{ start, end int }

// Args decodes args, a job's JSON args array, into dst (one destination per arg; a nil one
// skips its arg), as encoding/json with UseNumber would. Errors name class, the job's class.
func Args(class string, args []byte, dst []any) error {
	j := job{Class: class, Args: args}
	var buf [bindSpans]argSpan
	spans, ok := scanArgs(j.Args, buf[:0])
	if !ok {
		return j.bindSlow(dst)
	}
	if len(spans) != len(dst) {
		return fmt.Errorf("exq: bind %s: job has %d args, want %d", j.Class, len(spans), len(dst))
	}
	for i, d := range dst {
		if d == nil {
			continue
		}
		raw := j.Args[spans[i].start:spans[i].end:spans[i].end]
		if bindArg(raw, d) {
			continue
		}
		if err := Decode(raw, d); err != nil {
			return fmt.Errorf("exq: bind %s: arg %d (%s): %w", j.Class, i, raw, err)
		}
	}
	return nil
}

// job is what Args reads of a job.
type job struct {
	Class string
	Args  []byte
}

// bindSlow is Bind with encoding/json splitting the args: it words the error for args that
// are not a JSON array.
func (j job) bindSlow(dst []any) error {
	var args []json.RawMessage
	if err := json.Unmarshal(j.Args, &args); err != nil {
		return fmt.Errorf("exq: bind %s: args are not a JSON array: %w", j.Class, err)
	}
	if len(args) != len(dst) {
		return fmt.Errorf("exq: bind %s: job has %d args, want %d", j.Class, len(args), len(dst))
	}
	for i, d := range dst {
		if d == nil {
			continue
		}
		if err := Decode(args[i], d); err != nil {
			return fmt.Errorf("exq: bind %s: arg %d (%s): %w", j.Class, i, args[i], err)
		}
	}
	return nil
}

// maxJSONDepth is encoding/json's nesting limit (maxNestingDepth in its scanner): a text
// nesting arrays and objects deeper than this is invalid.
const maxJSONDepth = 10000

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// scanArgs appends the span of each element of the JSON array data to spans. ok is false
// exactly when json.Unmarshal(data, new([]json.RawMessage)) fails; a JSON null (which
// json.Unmarshal takes as no args) gives no spans.
func scanArgs(data []byte, spans []argSpan) (_ []argSpan, ok bool) {
	i := skipSpace(data, 0)
	if i == len(data) {
		return spans, false
	}
	switch data[i] {
	case 'n':
		i, ok = scanLiteral(data, i, "null")
		return spans, ok && skipSpace(data, i) == len(data)
	case '[':
	default:
		return spans, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return spans, skipSpace(data, i+1) == len(data)
	}
	for {
		start := i
		if i, ok = scanValue(data, i, 1); !ok {
			return spans, false
		}
		spans = append(spans, argSpan{start, i})
		i = skipSpace(data, i)
		if i == len(data) {
			return spans, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return spans, skipSpace(data, i+1) == len(data)
		default:
			return spans, false
		}
	}
}

// scanValue returns the end of the JSON value starting at data[i] (whitespace already
// skipped), nested in depth arrays and objects.
func scanValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '"':
		return scanString(data, i)
	case c == '-' || '0' <= c && c <= '9':
		return scanNumber(data, i)
	case c == 't':
		return scanLiteral(data, i, "true")
	case c == 'f':
		return scanLiteral(data, i, "false")
	case c == 'n':
		return scanLiteral(data, i, "null")
	case c == '[' || c == '{':
		return scanComposite(data, i, depth)
	}
	return i, false
}

func scanLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanNumber scans a number as JSON's grammar has it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
		if i == len(data) {
			return i, false
		}
	}
	switch c := data[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i++
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i == len(data) || !isDigit(data[i]) {
			return i, false
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i == len(data) || !isDigit(data[i]) {
			return i, false
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	return i, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanString scans a string literal: no control characters, only JSON's escapes. Bytes
// that are not UTF-8 are allowed (encoding/json decodes them as U+FFFD).
func scanString(data []byte, i int) (int, bool) {
	i++ // opening quote
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i == len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(data)-i < 5 {
					return i, false
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 5
			default:
				return i, false
			}
		default:
			i++
		}
	}
	return i, false
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// scanComposite scans the array or object at data[i], which is nested in depth others.
func scanComposite(data []byte, i, depth int) (int, bool) {
	var inObject [maxJSONDepth/64 + 1]uint64 // one bit per open container: set for an object
	open := 0                                // containers open here
	for {
		// data[i] starts a value.
		if i >= len(data) {
			return i, false
		}
		c := data[i]
		if c != '[' && c != '{' {
			var ok bool
			if i, ok = scanValue(data, i, depth+open); !ok {
				return i, false
			}
		} else {
			if depth+open+1 > maxJSONDepth {
				return i, false
			}
			if c == '{' {
				inObject[open/64] |= 1 << (open % 64)
			} else {
				inObject[open/64] &^= 1 << (open % 64)
			}
			open++
			i = skipSpace(data, i+1)
			if i == len(data) {
				return i, false
			}
			if c == '[' && data[i] != ']' {
				continue // first element
			}
			if c == '{' && data[i] != '}' {
				var ok bool
				if i, ok = scanKey(data, i); !ok {
					return i, false
				}
				continue // first member's value
			}
			i++
			open--
		}
		// After a value: close containers until one continues with a comma.
		for {
			if open == 0 {
				return i, true
			}
			i = skipSpace(data, i)
			if i == len(data) {
				return i, false
			}
			obj := inObject[(open-1)/64]&(1<<((open-1)%64)) != 0
			c := data[i]
			if c == ',' {
				i = skipSpace(data, i+1)
				if obj {
					var ok bool
					if i, ok = scanKey(data, i); !ok {
						return i, false
					}
				}
				break
			}
			if obj && c == '}' || !obj && c == ']' {
				i++
				open--
				continue
			}
			return i, false
		}
	}
}

// scanKey scans an object member's key and colon, and the space after it.
func scanKey(data []byte, i int) (int, bool) {
	if i == len(data) || data[i] != '"' {
		return i, false
	}
	i, ok := scanString(data, i)
	if !ok {
		return i, false
	}
	i = skipSpace(data, i)
	if i == len(data) || data[i] != ':' {
		return i, false
	}
	return skipSpace(data, i+1), true
}

// bindArg stores the JSON value raw (valid and without surrounding space, as scanArgs
// splits it) into dst as encoding/json would (with UseNumber), and reports true, when dst
// is a non-nil pointer to one of the types handled here and encoding/json would succeed.
// Otherwise it changes nothing and reports false. The types are unnamed built-in ones
// (and json.RawMessage and json.Number, whose behavior it copies), so no UnmarshalJSON
// or UnmarshalText method is bypassed.
func bindArg(raw []byte, dst any) bool {
	switch p := dst.(type) {
	case *int:
		n, ok := bindInt(raw, p != nil, strconv.IntSize)
		if ok && raw[0] != 'n' {
			*p = int(n)
		}
		return ok
	case *int64:
		n, ok := bindInt(raw, p != nil, 64)
		if ok && raw[0] != 'n' {
			*p = n
		}
		return ok
	case *int32:
		n, ok := bindInt(raw, p != nil, 32)
		if ok && raw[0] != 'n' {
			*p = int32(n)
		}
		return ok
	case *int16:
		n, ok := bindInt(raw, p != nil, 16)
		if ok && raw[0] != 'n' {
			*p = int16(n)
		}
		return ok
	case *int8:
		n, ok := bindInt(raw, p != nil, 8)
		if ok && raw[0] != 'n' {
			*p = int8(n)
		}
		return ok
	case *uint:
		n, ok := bindUint(raw, p != nil, strconv.IntSize)
		if ok && raw[0] != 'n' {
			*p = uint(n)
		}
		return ok
	case *uint64:
		n, ok := bindUint(raw, p != nil, 64)
		if ok && raw[0] != 'n' {
			*p = n
		}
		return ok
	case *uint32:
		n, ok := bindUint(raw, p != nil, 32)
		if ok && raw[0] != 'n' {
			*p = uint32(n)
		}
		return ok
	case *uint16:
		n, ok := bindUint(raw, p != nil, 16)
		if ok && raw[0] != 'n' {
			*p = uint16(n)
		}
		return ok
	case *uint8:
		n, ok := bindUint(raw, p != nil, 8)
		if ok && raw[0] != 'n' {
			*p = uint8(n)
		}
		return ok
	case *float64:
		f, ok := bindFloat(raw, p != nil, 64)
		if ok && raw[0] != 'n' {
			*p = f
		}
		return ok
	case *float32:
		f, ok := bindFloat(raw, p != nil, 32)
		if ok && raw[0] != 'n' {
			*p = float32(f)
		}
		return ok
	case *string:
		if p == nil {
			return false
		}
		switch raw[0] {
		case 'n':
			return true // null leaves a string as it is
		case '"':
			*p = unquoteJSON(raw)
			return true
		}
		return false
	case *bool:
		if p == nil {
			return false
		}
		switch raw[0] {
		case 'n':
		case 't':
			*p = true
		case 'f':
			*p = false
		default:
			return false
		}
		return true
	case *[]string:
		return p != nil && bindStrings(raw, p)
	case *json.RawMessage:
		if p == nil {
			return false
		}
		*p = append((*p)[:0], raw...) // what RawMessage.UnmarshalJSON does, null included
		return true
	case *json.Number:
		if p == nil {
			return false
		}
		switch c := raw[0]; {
		case c == 'n':
			return true
		case c == '"':
			s := unquoteJSON(raw)
			if !isJSONNumber(s) {
				return false
			}
			*p = json.Number(s)
			return true
		case c == '-' || isDigit(c):
			*p = json.Number(raw)
			return true
		}
		return false
	case *any:
		if p == nil {
			return false
		}
		if cur := *p; cur != nil {
			// encoding/json decodes through a non-nil pointer held in the interface.
			if v := reflect.ValueOf(cur); v.Kind() == reflect.Pointer && !v.IsNil() {
				return false
			}
		}
		switch c := raw[0]; {
		case c == 'n':
			*p = nil
		case c == 't':
			*p = true
		case c == 'f':
			*p = false
		case c == '"':
			*p = unquoteJSON(raw)
		case c == '-' || isDigit(c):
			*p = json.Number(raw) // Bind's UseNumber
		default:
			return false // arrays and objects: encoding/json builds them
		}
		return true
	}
	return false
}

// bindInt parses raw for a signed integer of the given size: ok is false unless
// strconv.ParseInt (what encoding/json uses) would succeed and the value fits. A null
// is ok (encoding/json leaves the destination as it is).
func bindInt(raw []byte, nonNil bool, bits uint) (int64, bool) {
	if !nonNil {
		return 0, false
	}
	if raw[0] == 'n' {
		return 0, true
	}
	neg := raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	u, ok := parseDigits(raw)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<(bits-1) {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<(bits-1)-1 {
		return 0, false
	}
	return int64(u), true
}

// bindUint is bindInt for an unsigned integer: strconv.ParseUint takes no sign, not even
// in -0.
func bindUint(raw []byte, nonNil bool, bits uint) (uint64, bool) {
	if !nonNil {
		return 0, false
	}
	if raw[0] == 'n' {
		return 0, true
	}
	u, ok := parseDigits(raw)
	if !ok || bits < 64 && u > 1<<bits-1 {
		return 0, false
	}
	return u, true
}

// parseDigits parses a non-empty run of decimal digits that fits in a uint64.
func parseDigits(raw []byte) (uint64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range raw {
		if !isDigit(c) {
			return 0, false // a string, a bool, a fraction or an exponent
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	return u, true
}

// bindFloat parses raw as encoding/json does for a float of the given size.
func bindFloat(raw []byte, nonNil bool, bits int) (float64, bool) {
	if !nonNil {
		return 0, false
	}
	switch c := raw[0]; {
	case c == 'n':
		return 0, true
	case c != '-' && !isDigit(c):
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), bits)
	if err != nil || bits == 32 && math.Abs(f) > math.MaxFloat32 {
		return 0, false
	}
	return f, true
}

// bindStrings decodes an array of strings (or null) into *p as encoding/json does: null
// sets nil; otherwise the slice's backing array is reused, a null element leaves its
// element as it is, and an empty array gives an empty non-nil slice.
func bindStrings(raw []byte, p *[]string) bool {
	switch raw[0] {
	case 'n':
		*p = nil
		return true
	case '[':
	default:
		return false
	}
	// Every element must be a string or null, or encoding/json fails: check before writing.
	n := 0
	for i := skipSpace(raw, 1); raw[i] != ']'; n++ {
		switch raw[i] {
		case '"':
			i, _ = scanString(raw, i)
		case 'n':
			i += len("null")
		default:
			return false
		}
		i = skipSpace(raw, i)
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if n == 0 {
		*p = []string{}
		return true
	}
	s := *p
	k := 0
	for i := skipSpace(raw, 1); raw[i] != ']'; k++ {
		if k >= cap(s) {
			s = append(s, "")
		} else if k >= len(s) {
			s = s[:k+1]
		}
		if raw[i] == '"' {
			end, _ := scanString(raw, i)
			s[k] = unquoteJSON(raw[i:end])
			i = end
		} else {
			i += len("null")
		}
		i = skipSpace(raw, i)
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if k < len(s) {
		s = s[:k]
	}
	*p = s
	return true
}

// isJSONNumber reports whether s is a JSON number (what json.Number accepts from a string).
func isJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	end, ok := scanNumber([]byte(s), 0)
	return ok && end == len(s)
}

// unquoteJSON returns the string literal raw (valid JSON) decoded as encoding/json decodes
// it: escapes resolved, a lone or broken surrogate and each byte that is not UTF-8 replaced
// by U+FFFD.
func unquoteJSON(raw []byte) string {
	s := raw[1 : len(raw)-1]
	r := 0
	for r < len(s) {
		c := s[r]
		if c == '\\' || c == '"' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			r++
			continue
		}
		rr, size := utf8.DecodeRune(s[r:])
		if rr == utf8.RuneError && size == 1 {
			break
		}
		r += size
	}
	if r == len(s) {
		return string(s)
	}
	// As encoding/json's unquoteBytes, for text scanString accepted.
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	b = append(b, s[:r]...)
	for r < len(s) {
		switch c := s[r]; {
		case c == '\\':
			r++
			switch s[r] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getU4(s[r+1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					if len(s)-r >= 6 && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, getU4(s[r+2:])); dec != unicode.ReplacementChar {
							r += 6
							b = utf8.AppendRune(b, dec)
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, s[r])
			}
			r++
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return string(b)
}

// getU4 decodes the four hex digits at the start of s, or returns -1.
func getU4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case isDigit(c):
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// Decode decodes one arg into dst with encoding/json, numbers as json.Number where dst takes
// any: what Bind does with every arg its fast path declines.
func Decode(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(dst)
}
