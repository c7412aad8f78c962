package store

import (
	"context"
	"sort"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// MetricKey is one class in one minute (Unix time / 60).
type MetricKey struct {
	Minute int64
	Class  string
}

// MinuteRuns are one class's runs in one minute: all of them, the failed ones, the
// milliseconds spent in the successful ones and their histogram (wire.MetricBucket).
type MinuteRuns struct {
	Runs, Failed, MS int64
	Hist             [wire.MetricBuckets]int64
}

// StatCount is one increment N of the counter Name ("processed" or "failed") of a span: 't'
// the all-time total, 'd' the UTC day of At, 's' the second of At; TTL is its key's lifetime
// (0: none).
type StatCount struct {
	Name string
	Span byte
	At   time.Time
	N    int64
	TTL  time.Duration
}

// FlushStats applies one batch of counter increments and run metrics (Sidekiq 7 and 8's
// layouts, metrics of minutes whose keys would already have expired at now left out), once per
// batch id however often it is sent: Redis remembers the id for markerTTL (stats_flush.lua).
func (jq *Store) FlushStats(ctx context.Context, id string, markerTTL time.Duration, counts []StatCount, runs map[MetricKey]*MinuteRuns, now time.Time) error {
	steps := make([]counter, 0, len(counts))
	for _, c := range counts {
		var key string
		switch c.Span {
		case 't':
			key = jq.keys.Stat(c.Name)
		case 'd':
			key = jq.keys.StatDay(c.Name, c.At)
		default:
			key = jq.keys.StatSecond(c.Name, c.At)
		}
		steps = append(steps, counter{Key: key, N: c.N, TTL: c.TTL})
	}
	return jq.addCounters(ctx, id, markerTTL, appendMetrics(steps, jq.keys, runs, now))
}

// appendMetrics adds the flush steps that write runs: per minute, Sidekiq 7's and Sidekiq 8's
// hashes of "<class>|p", "|f" and "|ms" and Sidekiq 8's ten-minute rollup, and per class and
// minute both histograms. A minute whose keys would already have expired is left out.
func appendMetrics(steps []counter, keys wire.Keys, runs map[MetricKey]*MinuteRuns, now time.Time) []counter {
	if len(runs) == 0 {
		return steps
	}
	order := make([]MetricKey, 0, len(runs))
	for k := range runs {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].Minute != order[j].Minute {
			return order[i].Minute < order[j].Minute
		}
		return order[i].Class < order[j].Class
	})
	hashes := map[string]int{} // key → index of its step, so a key's fields go in one step
	addFields := func(key string, ttl time.Duration, pairs ...any) {
		i, ok := hashes[key]
		if !ok {
			i = len(steps)
			hashes[key] = i
			steps = append(steps, counter{Key: key, TTL: ttl, Kind: 'h'})
		}
		steps[i].Pairs = append(steps[i].Pairs, pairs...)
	}
	for _, k := range order {
		m := runs[k]
		at := time.Unix(k.Minute*60, 0)
		age := now.Sub(at)
		if age > wire.MetricsTenMinuteTTL {
			continue
		}
		fields := []any{wire.MetricsField(k.Class, "p"), m.Runs}
		if m.Failed > 0 {
			fields = append(fields, wire.MetricsField(k.Class, "f"), m.Failed)
		}
		if m.Runs > m.Failed {
			fields = append(fields, wire.MetricsField(k.Class, "ms"), m.MS)
		}
		addFields(keys.Metrics8TenMinutes(at), wire.MetricsTenMinuteTTL, fields...)
		if age > wire.MetricsTTL {
			continue
		}
		addFields(keys.Metrics7(at), wire.MetricsTTL, fields...)
		addFields(keys.Metrics8(at), wire.MetricsTTL, fields...)
		if m.Runs == m.Failed {
			continue // no successful run: no time to show
		}
		var buckets []any
		for b, n := range m.Hist {
			if n > 0 {
				buckets = append(buckets, b, n)
			}
		}
		steps = append(steps,
			counter{Key: keys.Histogram7(k.Class, at), TTL: wire.MetricsTTL, Kind: 'b', Pairs: buckets},
			counter{Key: keys.Histogram8(k.Class, at), TTL: wire.MetricsTTL, Kind: 'b', Pairs: buckets})
	}
	return steps
}
