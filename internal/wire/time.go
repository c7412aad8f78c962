package wire

import (
	"math"
	"strconv"
	"strings"
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

// TimeUnit is how a job document writes its timestamps (created_at, enqueued_at, failed_at,
// retried_at). Sorted-set scores, "at", run_at and a node's beat stay float seconds in every
// version: only these job fields changed.
type TimeUnit uint8

const (
	// Seconds is float epoch seconds ("1796010415.667948"): Exq, and Sidekiq up to 7.
	Seconds TimeUnit = iota
	// Millis is integer epoch milliseconds (1796010415667): Sidekiq 8 (job_util.rb
	// now_in_millis, client.rb atomic_push, job_retry.rb).
	Millis
)

// AppendStamp appends t as a job timestamp in unit u.
func AppendStamp(b []byte, t time.Time, u TimeUnit) []byte {
	if u == Millis {
		return strconv.AppendInt(b, t.UnixMilli(), 10)
	}
	return AppendTime(b, t)
}

// FormatStamp renders t as a job timestamp in unit u.
func FormatStamp(t time.Time, u TimeUnit) string {
	var buf [32]byte
	return string(AppendStamp(buf[:0], t, u))
}

// StampUnitOf tells the unit of a job timestamp from its JSON number literal, as Sidekiq 8
// tells them apart (api.rb time_from_timestamp and calculate_latency, job_retry.rb time_for):
// by the type Ruby's JSON parser gives it. A literal with a fraction or an exponent is a Float,
// float seconds; one without is an Integer, integer milliseconds. (Ruby renders every Float with
// a ".": Time.now.to_f of a whole second is "1796010415.0".)
func StampUnitOf(literal string) TimeUnit {
	if strings.ContainsAny(literal, ".eE") {
		return Seconds
	}
	return Millis
}

// ParseStamp reads a job timestamp field's raw JSON value: float seconds or integer
// milliseconds (StampUnitOf). ok is false when the value is not a number, or is zero.
func ParseStamp(raw string) (t time.Time, unit TimeUnit, ok bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return time.Time{}, Seconds, false
	}
	unit = StampUnitOf(raw)
	if unit == Millis {
		ms, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || ms == 0 {
			return time.Time{}, unit, false
		}
		return time.UnixMilli(ms), unit, true
	}
	sec, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return time.Time{}, unit, false
	}
	t = ParseTime(sec)
	return t, unit, !t.IsZero()
}
