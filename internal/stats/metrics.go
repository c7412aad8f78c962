package stats

import (
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// This file keeps the per-class run metrics that Sidekiq 7 and 8's Web UI shows in its Metrics
// tab, as their metrics/tracking.rb counts them: per class and minute, the runs (failed ones
// included), the failed runs, the milliseconds spent in successful runs and a histogram of
// those run times. They are counted in memory with the other stats and written by the same
// once-a-second flush, in the same script call, once per batch (stats_flush.lua): under
// Sidekiq 7's key names and Sidekiq 8's, which differ (wire/metrics.go).

// metricKey is one class in one minute (Unix time / 60).
type metricKey = store.MetricKey

// runMetrics are one class's runs in one minute.
type runMetrics = store.MinuteRuns

// addRunLocked counts one run of class that ended in second sec after took. Sidekiq counts
// the time of successful runs only (a failure's time says little). Call with mu held.
func (s *Stats) addRunLocked(ok bool, sec int64, class string, took time.Duration) {
	k := metricKey{Minute: sec / 60, Class: class}
	if sec < 0 {
		k.Minute = (sec - 59) / 60
	}
	if s.runs == nil {
		s.runs = map[metricKey]*runMetrics{}
	}
	m := s.runs[k]
	if m == nil {
		m = &runMetrics{}
		s.runs[k] = m
	}
	m.Runs++
	if !ok {
		m.Failed++
		return
	}
	ms := max(took.Milliseconds(), 0)
	m.MS += ms
	m.Hist[wire.MetricBucket(ms)]++
}
