package wire

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlainDecimalGivesParseFloatsBitsOrDeclines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lit   string
		ok    bool
		isInt bool
	}{
		{"1796010415.667948", true, false}, // exq's own stamps
		{"1796010415667", true, true},      // Sidekiq 8's integer milliseconds
		{"1796010415.66", true, false},
		{"0", true, true},
		{"0.1", true, false},
		{"9007199254740991", true, true},     // 2^53 - 1
		{"9007199254740993", false, false},   // above the mantissa: ParseFloat rounds it
		{"1796010415.6679487", false, false}, // Ruby's 17 digits: ParseFloat
		{"-1.5", false, false},
		{"1e9", false, false},
		{"1.5E3", false, false},
		{"1.", false, false},
		{".5", false, false},
		{"1..5", false, false},
		{"1.2.3", false, false},
		{"", false, false},
		{"12345678901234567890", false, false}, // 20 digits
		{"1234567890123456789", false, false},  // 19 digits, above 2^53
		{`"1"`, false, false},
	} {
		f, isInt, ok := plainDecimal(c.lit)
		require.Equal(t, c.ok, ok, "ok for %q", c.lit)
		if !ok {
			continue
		}
		want, err := strconv.ParseFloat(c.lit, 64)
		require.NoError(t, err)
		assert.Equal(t, math.Float64bits(want), math.Float64bits(f), "bits of %q", c.lit)
		assert.Equal(t, c.isInt, isInt, "isInt of %q", c.lit)
	}
}

// Every literal of up to 16 digits with the '.' anywhere: the same float64 as ParseFloat, and
// numberOf answers as before (Int exactly when StampUnitOf says milliseconds).
func TestPlainDecimalMatchesParseFloatOnRandomStamps(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		digits := strconv.FormatUint(r.Uint64N(1<<53), 10)
		lit := digits
		if dot := r.IntN(len(digits) + 1); dot > 0 && dot < len(digits) {
			lit = digits[:dot] + "." + digits[dot:]
		}
		f, isInt, ok := plainDecimal(lit)
		require.True(t, ok, lit)
		want, err := strconv.ParseFloat(lit, 64)
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(want), math.Float64bits(f), lit)
		require.Equal(t, StampUnitOf(lit) == Millis, isInt, lit)
		n := numberOf(lit)
		require.Equal(t, Number{V: want, OK: true, Int: StampUnitOf(lit) == Millis}, n, lit)
	}
}
