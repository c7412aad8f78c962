package textsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerminalEscapesControlsInvalidUTF8AndBidi(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain é ✓", "plain é ✓"},
		{"\x1b]0;owned\x07", `\x1b]0;owned\x07`},
		{"\x1b]52;c;ZWNobyBoaQ==\x07", `\x1b]52;c;ZWNobyBoaQ==\x07`},
		{"\x1b[2J", `\x1b[2J`},
		{"a\u009b2Jb", `a\u009b2Jb`},
		{"bad\xff\xfe", `bad\xff\xfe`},
		{"nul\x00cr\rtab\tnl\n", `nul\x00cr\x0dtab\x09nl\x0a`},
		{"rtl\u202egnp.exe", `rtl\u202egnp.exe`},
	} {
		if got := Terminal(tc.in); got != tc.want {
			t.Errorf("Terminal(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTerminalWriterKeepsLinesAndJoinsSplitRunes(t *testing.T) {
	var b bytes.Buffer
	w := NewTerminalWriter(&b)
	in := "a\tb\n\x1b[31m✓" // ✓ is 3 bytes: write it split
	for i := 0; i < len(in); i++ {
		if _, err := w.Write([]byte{in[i]}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = w.Write([]byte("\xe2\x9c")) // an incomplete rune at the very end
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "a\tb\n\\x1b[31m✓\\xe2\\x9c"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestJSONWriterMakesValidJSON(t *testing.T) {
	var b bytes.Buffer
	w := NewJSONWriter(&b)
	_, _ = w.Write([]byte("{\"a\":\"x\xffy\u009b\x7fz\u202e\"}\n"))
	_ = w.Flush()
	if !utf8.Valid(b.Bytes()) || !json.Valid(b.Bytes()) {
		t.Fatalf("not valid JSON: %q", b.String())
	}
	if want := `{"a":"x\ufffdy\u009b\u007fz\u202e"}` + "\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestPrettyIsBoundedInDepthAndSize(t *testing.T) {
	deep := []byte(strings.Repeat("[", 10000) + "1" + strings.Repeat("]", 10000))
	out, cut := Pretty(deep, 20, 1<<20)
	if cut || len(out) > 3*len(deep) {
		t.Errorf("10 000-deep: %d bytes (cut %v); want at most %d", len(out), cut, 3*len(deep))
	}
	got, _ := Pretty([]byte(`{"a":[1,{"b":[]}],"c":"x,y{"}`), 20, 1<<20)
	want := "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": \"x,y{\"\n}"
	if got != want {
		t.Errorf("Pretty = %q, want %q", got, want)
	}
	big := []byte(`["` + strings.Repeat("é", 100000) + `"]`)
	out, cut = Pretty(big, 20, 1000)
	if !cut || len(out) > 1010 || !utf8.ValidString(out) {
		t.Errorf("big: %d bytes, cut %v, valid %v", len(out), cut, utf8.ValidString(out))
	}
	if Depth(deep) != 10000 {
		t.Errorf("Depth = %d", Depth(deep))
	}
}
