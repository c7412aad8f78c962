package exq

import (
	"sort"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// This file keeps the per-class run metrics that Sidekiq 7 and 8's Web UI shows in its Metrics
// tab, as their metrics/tracking.rb counts them: per class and minute, the runs (failed ones
// included), the failed runs, the milliseconds spent in successful runs and a histogram of
// those run times. They are counted in memory with the other stats and written by the same
// once-a-second flush, in the same script call, once per batch (stats_flush.lua): under
// Sidekiq 7's key names and Sidekiq 8's, which differ (wire/metrics.go).

// metricKey is one class in one minute (Unix time / 60).
type metricKey struct {
	minute int64
	class  string
}

// runMetrics are one class's runs in one minute.
type runMetrics struct {
	runs, failed, ms int64
	hist             [wire.MetricBuckets]int64
}

// addRunLocked counts one run of class that ended in second sec after took. Sidekiq counts
// the time of successful runs only (a failure's time says little). Call with mu held.
func (s *stats) addRunLocked(ok bool, sec int64, class string, took time.Duration) {
	k := metricKey{minute: sec / 60, class: class}
	if sec < 0 {
		k.minute = (sec - 59) / 60
	}
	if s.runs == nil {
		s.runs = map[metricKey]*runMetrics{}
	}
	m := s.runs[k]
	if m == nil {
		m = &runMetrics{}
		s.runs[k] = m
	}
	m.runs++
	if !ok {
		m.failed++
		return
	}
	ms := max(took.Milliseconds(), 0)
	m.ms += ms
	m.hist[wire.MetricBucket(ms)]++
}

// appendMetrics adds the flush steps that write runs: per minute, Sidekiq 7's and Sidekiq 8's
// hashes of "<class>|p", "|f" and "|ms" and Sidekiq 8's ten-minute rollup, and per class and
// minute both histograms. A minute whose keys would already have expired is left out.
func appendMetrics(steps []counter, keys wire.Keys, runs map[metricKey]*runMetrics, now time.Time) []counter {
	if len(runs) == 0 {
		return steps
	}
	order := make([]metricKey, 0, len(runs))
	for k := range runs {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].minute != order[j].minute {
			return order[i].minute < order[j].minute
		}
		return order[i].class < order[j].class
	})
	hashes := map[string]int{} // key → index of its step, so a key's fields go in one step
	addFields := func(key string, ttl time.Duration, pairs ...any) {
		i, ok := hashes[key]
		if !ok {
			i = len(steps)
			hashes[key] = i
			steps = append(steps, counter{key: key, ttl: ttl, kind: 'h'})
		}
		steps[i].pairs = append(steps[i].pairs, pairs...)
	}
	for _, k := range order {
		m := runs[k]
		at := time.Unix(k.minute*60, 0)
		age := now.Sub(at)
		if age > wire.MetricsTenMinuteTTL {
			continue
		}
		fields := []any{wire.MetricsField(k.class, "p"), m.runs}
		if m.failed > 0 {
			fields = append(fields, wire.MetricsField(k.class, "f"), m.failed)
		}
		if m.runs > m.failed {
			fields = append(fields, wire.MetricsField(k.class, "ms"), m.ms)
		}
		addFields(keys.Metrics8TenMinutes(at), wire.MetricsTenMinuteTTL, fields...)
		if age > wire.MetricsTTL {
			continue
		}
		addFields(keys.Metrics7(at), wire.MetricsTTL, fields...)
		addFields(keys.Metrics8(at), wire.MetricsTTL, fields...)
		if m.runs == m.failed {
			continue // no successful run: no time to show
		}
		var buckets []any
		for b, n := range m.hist {
			if n > 0 {
				buckets = append(buckets, b, n)
			}
		}
		steps = append(steps,
			counter{key: keys.Histogram7(k.class, at), ttl: wire.MetricsTTL, kind: 'b', pairs: buckets},
			counter{key: keys.Histogram8(k.class, at), ttl: wire.MetricsTTL, kind: 'b', pairs: buckets})
	}
	return steps
}
