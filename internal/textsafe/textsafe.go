// Package textsafe makes strings read from Redis safe to show: on a terminal (no control
// sequence reaches it: ESC, OSC 52, bidi overrides are shown escaped), in JSON (always valid
// UTF-8), and pretty-printed within a bound of depth and size.
package textsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// dangerous reports a rune a terminal may act on: C0 controls (but for the line breaks and
// tabs that the caller allows), DEL, C1 controls (U+0080–U+009F, 8-bit CSI and OSC), and the
// bidirectional overrides and isolates that reorder what is shown.
func dangerous(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// escapeRune writes how a dangerous rune is shown: \x1b for one byte, \u202e above.
func escapeRune(b *strings.Builder, r rune) {
	if r < 0x80 {
		fmt.Fprintf(b, `\x%02x`, r)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}

// Terminal returns s with every control character, invalid UTF-8 byte and bidi control shown
// escaped (\x1b, \xff, \u202e), tabs and line breaks too: one safe line for a table cell or a
// message.
func Terminal(s string) string { return terminal(s, false) }

// terminal escapes s; with keepLines, "\n" and "\t" pass through.
func terminal(s string, keepLines bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || (dangerous(r) && !(keepLines && (r == '\n' || r == '\t'))) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case dangerous(r):
			escapeRune(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Writer passes text to a terminal with what Terminal escapes escaped, but for line breaks
// and tabs (a table's layout). A UTF-8 sequence split across writes is held until it is whole;
// Flush writes what is held. For JSON output use NewJSONWriter.
type Writer struct {
	w       io.Writer
	pending []byte
	fix     func(s string) string
}

// NewTerminalWriter returns a Writer onto w for a terminal (or a file a person reads).
func NewTerminalWriter(w io.Writer) *Writer {
	return &Writer{w: w, fix: func(s string) string { return terminal(s, true) }}
}

// NewJSONWriter returns a Writer onto w for JSON text: every byte of invalid UTF-8 becomes
// \ufffd and DEL, C1 controls and bidi controls become \u escapes, so the output is valid
// JSON (RFC 8259 wants UTF-8) that no terminal acts on. Outside strings JSON is ASCII, so
// only strings are changed, and only in how they are spelled or where they were not UTF-8.
func NewJSONWriter(w io.Writer) *Writer { return &Writer{w: w, fix: jsonFix} }

func jsonFix(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || (r >= 0x7f && dangerous(r)) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\ufffd`)
		case r >= 0x7f && dangerous(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Write writes p made safe. It reports len(p) when it wrote everything (held bytes count as
// written).
func (w *Writer) Write(p []byte) (int, error) {
	data := p
	if len(w.pending) > 0 {
		data = append(w.pending, p...)
		w.pending = nil
	}
	// Hold an incomplete UTF-8 sequence at the end for the next write.
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	if cut < len(data) {
		w.pending = append([]byte(nil), data[cut:]...)
	}
	if _, err := io.WriteString(w.w, w.fix(string(data[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the bytes held (an incomplete UTF-8 sequence at the very end), escaped.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	s := w.fix(string(w.pending))
	w.pending = nil
	_, err := io.WriteString(w.w, s)
	return err
}
