package wire

import (
	"math"
	"time"
)

// FormatTime renders t as float epoch seconds with microsecond precision ("1796010415.667948"),
// the encoding of every timestamp and sorted-set score in the shared layout. It is built from
// the integer microseconds so no float rounding can move a job across a scheduler boundary.
func FormatTime(t time.Time) string {
	var buf [32]byte
	return string(AppendTime(buf[:0], t))
}

// ParseTime turns float epoch seconds back into a time. The zero value and non-finite values
// give the zero time.
func ParseTime(sec float64) time.Time {
	if sec == 0 || math.IsNaN(sec) || math.IsInf(sec, 0) {
		return time.Time{}
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(math.Round(frac*1e6))*1e3)
}
