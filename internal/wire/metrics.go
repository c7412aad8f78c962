package wire

import (
	"strconv"
	"time"
)

// This file names the keys of Sidekiq 7 and 8's per-class run metrics (the Web UI's Metrics
// tab), exactly as Sidekiq's lib/sidekiq/metrics/tracking.rb (ExecutionTracker#flush) and
// metrics/shared.rb (Histogram#persist) write them, and as metrics/query.rb reads them. All
// times are UTC; each key covers one minute (the 10-minute rollup of Sidekiq 8 ten).

// MetricBucketLimits are the upper bounds, in milliseconds, of the run-time histogram's
// buckets (shared.rb BUCKET_INTERVALS): a run of d ms counts in the first bucket whose bound
// exceeds d, and a run of 335 s or more in the last, "Slow" bucket, number
// len(MetricBucketLimits).
var MetricBucketLimits = [...]int64{
	20, 30, 45, 65, 100,
	150, 225, 335, 500, 750,
	1100, 1700, 2500, 3800, 5750,
	8500, 13000, 20000, 30000, 45000,
	65000, 100000, 150000, 225000, 335000,
}

// MetricBuckets is the number of histogram buckets: one u16 counter each, bucket i at bit
// offset 16·i (BITFIELD "u16 #i").
const MetricBuckets = len(MetricBucketLimits) + 1

// MetricBucket is the histogram bucket of a run that took ms milliseconds.
func MetricBucket(ms int64) int {
	for i, limit := range MetricBucketLimits {
		if ms < limit {
			return i
		}
	}
	return len(MetricBucketLimits)
}

// MetricsTTL is how long the one-minute keys live (tracking.rb SHORT_TERM,
// shared.rb HISTOGRAM_TTL: 8 h); MetricsTenMinuteTTL the ten-minute rollup's (Sidekiq 8
// MID_TERM: 3 days).
const (
	MetricsTTL          = 8 * time.Hour
	MetricsTenMinuteTTL = 3 * 24 * time.Hour
)

// MetricsField is a field of the metrics hashes: "<class>|p" (runs, failed ones included),
// "<class>|f" (failed runs) or "<class>|ms" (milliseconds spent in the successful ones).
func MetricsField(class, kind string) string { return class + "|" + kind }

// Metrics7 is Sidekiq 7's hash of the runs of minute t, "j|20261201|9:5"
// (tracking.rb 7.3: strftime("%Y%m%d|%-H:%-M")).
func (k Keys) Metrics7(t time.Time) string {
	t = t.UTC()
	return k.Prefix + "j|" + t.Format("20060102") + "|" + strconv.Itoa(t.Hour()) + ":" + strconv.Itoa(t.Minute())
}

// Metrics8 is Sidekiq 8's hash of the runs of minute t, "j|261201|9:05"
// (tracking.rb 8.1: strftime("%y%m%d|%-H:%M")).
func (k Keys) Metrics8(t time.Time) string {
	t = t.UTC()
	return k.Prefix + "j|" + t.Format("060102") + "|" + strconv.Itoa(t.Hour()) + ":" + t.Format("04")
}

// Metrics8TenMinutes is Sidekiq 8's hash of the runs of the ten minutes around t, "j|261201|9:0"
// for 9:00 to 9:09 (tracking.rb 8.1: the minute key without its last digit).
func (k Keys) Metrics8TenMinutes(t time.Time) string {
	m := k.Metrics8(t)
	return m[:len(m)-1]
}

// Histogram7 is Sidekiq 7's run-time histogram of class for minute t, "HardJob-01-09:5"
// (shared.rb 7.3: "#{klass}-" + strftime("%d-%H:%-M")).
func (k Keys) Histogram7(class string, t time.Time) string {
	t = t.UTC()
	return k.Prefix + class + "-" + t.Format("02-15") + ":" + strconv.Itoa(t.Minute())
}

// Histogram8 is Sidekiq 8's run-time histogram of class for minute t, "h|HardJob-1-9:5"
// (shared.rb 8.1: "h|#{klass}-" + strftime("%-d-%-H:%-M")).
func (k Keys) Histogram8(class string, t time.Time) string {
	t = t.UTC()
	return k.Prefix + "h|" + class + "-" + strconv.Itoa(t.Day()) + "-" + strconv.Itoa(t.Hour()) + ":" + strconv.Itoa(t.Minute())
}
