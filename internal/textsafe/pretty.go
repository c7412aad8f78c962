package textsafe

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Pretty indents a JSON document by two spaces per level, within bounds: values nested
// deeper than maxDepth are written compact on one line (indenting them is what makes a
// 20 KB document nested 10 000 deep a 200 MB page), and the output stops after about
// maxBytes with "…" (truncated reports it). A document that is not JSON is returned as it is,
// cut to maxBytes. The work is linear in the size of raw.
func Pretty(raw []byte, maxDepth, maxBytes int) (out string, truncated bool) {
	if !IsJSON(raw) {
		if len(raw) > maxBytes {
			return string(cutUTF8(raw, maxBytes)) + "…", true
		}
		return string(raw), false
	}
	var b bytes.Buffer
	depth := 0
	inString, escaped := false, false
	newline := func(d int) {
		b.WriteByte('\n')
		for range min(d, maxDepth) {
			b.WriteString("  ")
		}
	}
	for i := 0; i < len(raw); i++ {
		if b.Len() >= maxBytes {
			return string(cutUTF8(b.Bytes(), maxBytes)) + "…", true
		}
		c := raw[i]
		if inString {
			b.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
			b.WriteByte(c)
		case '{', '[':
			b.WriteByte(c)
			depth++
			// An empty container stays "{}" / "[]".
			if j := nextNonSpace(raw, i+1); j < len(raw) && (raw[j] == '}' || raw[j] == ']') {
				b.WriteByte(raw[j])
				depth--
				i = j
				continue
			}
			if depth <= maxDepth {
				newline(depth)
			}
		case '}', ']':
			depth--
			if depth < maxDepth {
				newline(depth)
			}
			b.WriteByte(c)
		case ',':
			b.WriteByte(c)
			if depth <= maxDepth {
				newline(depth)
			}
		case ':':
			b.WriteString(": ")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), false
}

// IsJSON reports whether raw is JSON, however deep it nests (json.Valid refuses more than
// 10 000 levels): what Pretty lays out, where anything else is returned as it is.
func IsJSON(raw []byte) bool { return json.Valid(raw) || deepValid(raw) }

func nextNonSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// deepValid reports whether raw is JSON that encoding/json refuses only for its depth
// (json.Valid stops at 10 000 levels): brackets balanced outside strings, strings closed.
// Pretty's own walk needs no more than that.
func deepValid(raw []byte) bool {
	var stack []byte
	var skip stringSkipper
	for _, c := range raw {
		if !skip.outside(c) {
			continue
		}
		switch c {
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			if len(stack) == 0 || (c == '}') != (stack[len(stack)-1] == '{') {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return !skip.inString && len(stack) == 0
}

// stringSkipper follows JSON strings byte by byte, so that a walk over a document sees only
// the bytes outside them: the one state machine deepValid and Depth share.
type stringSkipper struct{ inString, escaped bool }

// outside reports whether c lies outside every string; a string's quotes count as inside.
func (s *stringSkipper) outside(c byte) bool {
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
		}
		return false
	}
	if c == '"' {
		s.inString = true
		return false
	}
	return true
}

// cutUTF8 cuts b to at most n bytes without splitting a UTF-8 sequence.
func cutUTF8(b []byte, n int) []byte {
	if len(b) > n {
		for n > 0 && b[n]&0xC0 == 0x80 {
			n--
		}
		b = b[:n]
	}
	// Drop a sequence the cut (or the caller's) left incomplete at the end.
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return b
}

// Depth is how deep raw's brackets nest (outside strings): a cheap bound check before a
// document is handed to encoding/json, which refuses more than 10 000 levels.
func Depth(raw []byte) int {
	depth, deepest := 0, 0
	var skip stringSkipper
	for _, c := range raw {
		if !skip.outside(c) {
			continue
		}
		switch c {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
