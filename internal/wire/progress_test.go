package wire

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBusyCarriesProgressOnlyWhenThereIsOne(t *testing.T) {
	at := time.Unix(1796010417, 0)
	plain := Busy("q", `{"jid":"j"}`, at, "h", "r1", nil)
	assert.Equal(t, `{"queue":"q","payload":"{\"jid\":\"j\"}","run_at":1796010417,"host":"h","pid":"r1"}`, plain,
		"without progress the entry is what it always was")
	with := Busy("q", `{"jid":"j"}`, at, "h", "r1", &Progress{Fraction: 0.125, Message: "copy \"a\" <b>"})
	var w struct {
		Queue    string          `json:"queue"`
		Progress json.RawMessage `json:"progress"`
	}
	require.NoError(t, json.Unmarshal([]byte(with), &w), with)
	assert.Equal(t, "q", w.Queue)
	assert.Equal(t, &Progress{Fraction: 0.125, Message: "copy \"a\" <b>"}, ParseProgress(w.Progress))
}

func TestParseProgressBoundsWhatAnotherProgramWrote(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want *Progress
	}{
		{``, nil},
		{`null`, nil},
		{`0.5`, nil},
		{`"0.5"`, nil},
		{`{}`, nil},
		{`{"fraction":"0.5"}`, nil},
		{`{"fraction":null,"message":"m"}`, nil},
		{`{"fraction":1e300}`, nil},
		{`{"fraction":-0.1}`, nil},
		{`{"fraction":1.0000001}`, nil},
		{`{"fraction":0,"message":null}`, &Progress{}},
		{`{"fraction":1,"message":["x"]}`, &Progress{Fraction: 1}},
		{`{"fraction":0.5,"message":"` + strings.Repeat("ab", 200) + `"}`, &Progress{0.5, strings.Repeat("ab", 100)}},
		{`{"fraction":0.5,"message":"` + strings.Repeat("x", 199) + `€"}`, &Progress{0.5, strings.Repeat("x", 199)}},
	} {
		assert.Equal(t, tc.want, ParseProgress(json.RawMessage(tc.raw)), tc.raw)
	}
}

func TestCheckProgress(t *testing.T) {
	assert.NoError(t, CheckProgress(0, ""))
	assert.NoError(t, CheckProgress(1, strings.Repeat("x", MaxProgressMessage)))
	for _, f := range []float64{-1e-9, 1 + 1e-9, math.NaN(), math.Inf(-1)} {
		assert.Error(t, CheckProgress(f, ""), "%v", f)
	}
	assert.Error(t, CheckProgress(0.5, strings.Repeat("x", MaxProgressMessage+1)))
	assert.Error(t, CheckProgress(0.5, "\xff"))
}

// FuzzParseProgress: whatever the field holds, a progress read is a fraction from 0 to 1 and a
// valid UTF-8 message of at most MaxProgressMessage bytes.
func FuzzParseProgress(f *testing.F) {
	f.Add(`{"fraction":0.5,"message":"m"}`)
	f.Add(`{"fraction":1,"message":"\ud800\udc00\u00e9"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		p := ParseProgress(json.RawMessage(raw))
		if p == nil {
			return
		}
		if !(p.Fraction >= 0 && p.Fraction <= 1) || len(p.Message) > MaxProgressMessage || !utf8.ValidString(p.Message) {
			t.Fatalf("ParseProgress(%q) = %+v", raw, *p)
		}
	})
}
