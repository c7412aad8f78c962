package wire

// pow10 holds the powers of ten that a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// plainDecimal reads the timestamps every job carries ("1796010415.667948", 1796010415667)
// without strconv.ParseFloat, which was a measurable part of decoding a job. It takes only
// digits with at most one '.' between digits, whose digits, read as one integer, fit in a
// float64's 53-bit mantissa; then the integer and the power of ten are exact and one IEEE
// division rounds correctly, so the result is bit for bit ParseFloat's (whose own fast path
// does the same). isInt reports a literal without a fraction. Anything else (a sign, an
// exponent, more digits) gives ok false, and the caller falls back to ParseFloat.
func plainDecimal(v string) (f float64, isInt, ok bool) {
	if len(v) == 0 || len(v) > 19 {
		return 0, false, false
	}
	var mant uint64
	frac := -1 // digits after the '.'; -1: no '.'
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0 && i > 0 && i < len(v)-1:
			frac = 0
		default:
			return 0, false, false
		}
	}
	// 19 characters hold at most 19 digits, which a uint64 holds: mant did not overflow.
	if mant >= 1<<53 || frac >= len(pow10) {
		return 0, false, false
	}
	if frac <= 0 {
		return float64(mant), true, true
	}
	return float64(mant) / pow10[frac], false, true
}
