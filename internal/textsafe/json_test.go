package textsafe

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// A time RFC 3339 cannot write, or a number JSON cannot, is null in its own field: the rest
// of the document is written (time.Time and float64 failed the whole encoding).
func TestTimeAndFloatOutOfRangeAreNullNotAnError(t *testing.T) {
	type doc struct {
		Good, Far, Before, Huge *Time
		Zero                    *Time `json:",omitempty"`
		N, Inf, F               Float
	}
	v := doc{
		Good: TimeOf(time.Date(2024, 1, 2, 3, 4, 5, 6e8, time.FixedZone("x", 3600))), Far: TimeOf(time.Unix(1e12, 0)),
		Before: TimeOf(time.Unix(-1e12, 0)), Huge: TimeOf(time.Unix(math.MaxInt64, 0)), Zero: TimeOf(time.Time{}),
		N: Float(math.NaN()), Inf: Float(math.Inf(-1)), F: 1.5,
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Good":"2024-01-02T02:04:05.6Z","Far":null,"Before":null,"Huge":null,"N":null,"Inf":null,"F":1.5}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back doc
	if err := json.Unmarshal(b, &back); err != nil || !back.Good.Equal(v.Good.Time) || back.Far != nil {
		t.Errorf("reads back: %v %+v", err, back)
	}
}

// MarshalJSON indents the first JSONIndentDepth levels and writes deeper ones compact: its
// output is a small multiple of the compact document however deep it nests (indenting every
// level made a 2 KB document nested 999 deep 2 MB).
func TestMarshalJSONIsLinearInDepth(t *testing.T) {
	deep := json.RawMessage(strings.Repeat("[", 999) + strings.Repeat("]", 999))
	compact, _ := json.Marshal([]any{map[string]any{"args": deep, "n": 1}})
	out, err := MarshalJSON([]any{map[string]any{"args": deep, "n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("not JSON: %.200s", out)
	}
	if len(out) > 2*len(compact)+200 {
		t.Errorf("%d bytes for a %d-byte document", len(out), len(compact))
	}
	small, _ := MarshalJSON(map[string]any{"a": []int{1, 2}, "b": map[string]any{}, "c": "<&>"})
	if want := "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {},\n  \"c\": \"<&>\"\n}\n"; string(small) != want {
		t.Errorf("got %q, want %q", small, want)
	}
}

func TestDistinctKeepsFirstOrderCapsAndCounts(t *testing.T) {
	out, distinct, repeats := Distinct([]string{"a", "b", "a", "c", "a", "d"}, 2)
	if len(out) != 2 || out[0] != "a" || out[1] != "b" || distinct != 4 || repeats != 2 {
		t.Errorf("Distinct = %q, %d, %d", out, distinct, repeats)
	}
	if out, distinct, _ := Distinct([]string{"x", "x"}, 0); len(out) != 1 || distinct != 1 {
		t.Errorf("Distinct without a cap = %q, %d", out, distinct)
	}
}
