package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

var validSeeds = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a" 1}`, `{"a":}`, `{1:2}`, `"x"`, `"\u00e9\ud83d\ude00"`,
	`"\u00g0"`, `"\x"`, "\"a\tb\"", "\"\x01\"", `"\/\b\f\n\r\t\"\\"`, `-0`, `-`, `01`, `1.`, `1.5e`, `1e+5`, `1E-5`, `-1.25e3`,
	`true`, `tru`, `false `, ` null`, `nul`, `[true,false,null]`, `{"a":[{"b":{}}]}`, `{"a":[{"b":{}}]`, `[[[]]]]`,
	"\xff", "\"\xff\xfe\"", `{"class":"W","args":[1,"a",{"b":[null]}],"queue":"q"}`, `1 2`, `[1 2]`, `{"a":1 "b":2}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 9999) + "1" + strings.Repeat("}", 9999),
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, s := range validSeeds {
		if got, want := Valid(s), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.80q) = %v, encoding/json says %v", s, got, want)
		}
	}
}

func FuzzValidMatchesEncodingJSON(f *testing.F) {
	for _, s := range validSeeds {
		if len(s) < 200 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}

func BenchmarkValidJob(b *testing.B) {
	doc := `{"class":"MyApp.Worker","args":[12345,67890],"queue":"default","jid":"1b4e28ba-2fa1-41d2-883f-0016d3cca427","enqueued_at":1796071145.003984,"created_at":1796071145.003984,"retry":25}`
	b.Run("wire.Valid", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if !Valid(doc) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if !json.Valid([]byte(doc)) {
				b.Fatal("invalid")
			}
		}
	})
}
