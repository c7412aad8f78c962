package exq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// This file reads the per-class run metrics that every node writes in Sidekiq 7's and 8's
// layouts (docs/wire.md, "Stats"): what Sidekiq Web's Metrics tab shows, for exq's dashboard
// and `exq metrics`.

// ErrInvalidMetricsOptions is wrapped by API.Metrics when a MetricsOptions field is out of
// range; the message names the field. Nothing is read.
var ErrInvalidMetricsOptions = errors.New("exq: invalid metrics options")

// Bounds of a metrics read.
const (
	// MetricsMaxWindow is the longest window API.Metrics reads: how long the per-minute keys
	// live (Sidekiq's 8 hours).
	MetricsMaxWindow = 8 * time.Hour
	// MetricsDefaultWindow is the window of a MetricsOptions without one.
	MetricsDefaultWindow = time.Hour
	// MetricsDefaultTop and MetricsMaxTop bound the classes API.Metrics returns.
	MetricsDefaultTop = 25
	MetricsMaxTop     = 1000
	// MetricsMaxClassBytes bounds MetricsOptions.Class.
	MetricsMaxClassBytes = 1024
)

// Internal bounds: the fields read of one minute's hash, the classes kept in memory at once,
// and the minutes read in one round trip.
const (
	metricsMaxFields   = 1000
	metricsMaxClasses  = 10000
	metricsChunkMinute = 60
)

// MetricsOptions choose what API.Metrics reads.
type MetricsOptions struct {
	// Window is how far back from the Redis server's clock to read, in whole minutes: at
	// least one minute, at most MetricsMaxWindow. 0 means MetricsDefaultWindow.
	Window time.Duration
	// Top bounds the classes returned, those that took the most time first: at most
	// MetricsMaxTop. 0 means MetricsDefaultTop.
	Top int
	// Class, when set, reads this class alone, with its run-time histogram.
	Class string
}

// minuteRuns are one class's counts of one minute in one layout.
type minuteRuns struct{ runs, failed, ms int64 }

// Metrics reads the per-class run metrics of the last o.Window: per class, the runs, the
// failures and the time the successful runs took, summed over the minutes (Sidekiq 7 and
// 8's Metrics tab). Every node writes each minute under Sidekiq 7's and 8's names, a Sidekiq
// node under its own only: per class and minute the layout with more runs is counted, so no
// run counts twice. Everything read is untrusted: a value that is not a count is left out
// (Metrics.Invalid), a huge one saturates, a key of another type reads as empty, and the
// read is bounded (Metrics.Truncated). It writes nothing.
func (a *API) Metrics(ctx context.Context, o MetricsOptions) (Metrics, error) {
	if err := o.check(); err != nil {
		return Metrics{}, err
	}
	now, err := a.now(ctx)
	if err != nil {
		return Metrics{}, fmt.Errorf("exq: metrics: %w", err)
	}
	last := now.UTC().Truncate(time.Minute).Add(time.Minute)
	n := int(o.Window/time.Minute) + 1
	minutes := make([]time.Time, n)
	for i := range minutes {
		minutes[i] = last.Add(-time.Duration(n-1-i) * time.Minute)
	}
	m := Metrics{From: minutes[0], To: last}
	sums := map[string]*ClassMetrics{}
	for start := 0; start < n; start += metricsChunkMinute {
		chunk := minutes[start:min(start+metricsChunkMinute, n)]
		v7, v8, truncated, err := a.jq.MetricsMinutes(ctx, chunk, metricsMaxFields)
		if err != nil {
			return Metrics{}, fmt.Errorf("exq: metrics: %w", err)
		}
		m.Truncated = m.Truncated || truncated
		for i := range chunk {
			p7, bad7 := parseMinute(v7[i], o.Class)
			p8, bad8 := parseMinute(v8[i], o.Class)
			m.Invalid += bad7 + bad8
			for class, r := range mergeLayouts(p7, p8) {
				c := sums[class]
				if c == nil {
					if len(sums) >= metricsMaxClasses {
						m.Truncated = true
						continue
					}
					c = &ClassMetrics{Class: class}
					sums[class] = c
				}
				c.Runs = satAdd(c.Runs, r.runs)
				c.Failed = satAdd(c.Failed, r.failed)
				c.TotalMS = satAdd(c.TotalMS, r.ms)
			}
		}
	}
	for _, c := range sums {
		c.Succeeded = max(c.Runs-c.Failed, 0)
		if c.Succeeded > 0 {
			c.MeanMS = float64(c.TotalMS) / float64(c.Succeeded)
		}
		m.Classes = append(m.Classes, *c)
	}
	sort.Slice(m.Classes, func(i, j int) bool {
		x, y := m.Classes[i], m.Classes[j]
		if x.TotalMS != y.TotalMS {
			return x.TotalMS > y.TotalMS
		}
		if x.Runs != y.Runs {
			return x.Runs > y.Runs
		}
		return x.Class < y.Class
	})
	m.Total = len(m.Classes)
	m.Classes = m.Classes[:min(len(m.Classes), o.Top)]
	if o.Class != "" {
		h, err := a.histogram(ctx, o.Class, minutes)
		if err != nil {
			return Metrics{}, err
		}
		if len(m.Classes) == 0 {
			m.Classes = []ClassMetrics{{Class: o.Class}} // no counts (expired, or written by no node): the histogram may still hold runs
		}
		m.Classes[0].Histogram = h
	}
	return m, nil
}

// Validate reports the first field of o that is out of range, wrapping
// ErrInvalidMetricsOptions; API.Metrics refuses such options. It reads nothing.
func (o MetricsOptions) Validate() error { return o.check() }

// check completes o with its defaults and refuses what is out of range.
func (o *MetricsOptions) check() error {
	switch {
	case o.Window == 0:
		o.Window = MetricsDefaultWindow
	case o.Window < time.Minute || o.Window > MetricsMaxWindow:
		return fmt.Errorf("%w: Window %s: want 1m to %s", ErrInvalidMetricsOptions, o.Window, MetricsMaxWindow)
	}
	o.Window = o.Window.Truncate(time.Minute)
	switch {
	case o.Top == 0:
		o.Top = MetricsDefaultTop
	case o.Top < 0 || o.Top > MetricsMaxTop:
		return fmt.Errorf("%w: Top %d: want 1 to %d", ErrInvalidMetricsOptions, o.Top, MetricsMaxTop)
	}
	if len(o.Class) > MetricsMaxClassBytes {
		return fmt.Errorf("%w: Class is %d bytes long, at most %d", ErrInvalidMetricsOptions, len(o.Class), MetricsMaxClassBytes)
	}
	if !utf8.ValidString(o.Class) || strings.IndexFunc(o.Class, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: Class %q: not UTF-8 text, or a control character", ErrInvalidMetricsOptions, o.Class)
	}
	return nil
}

// parseMinute reads one minute's hash: class → its counts (only class's when only is set),
// and how many values were not counts.
func parseMinute(f store.MinuteFields, only string) (map[string]minuteRuns, int) {
	out := map[string]minuteRuns{}
	bad := 0
	for field, v := range f {
		i := strings.LastIndexByte(field, '|')
		if i < 0 {
			continue // not a metrics field: another writer's, left alone
		}
		class, kind := field[:i], field[i+1:]
		if kind != "p" && kind != "f" && kind != "ms" || only != "" && class != only {
			continue
		}
		n, ok := metricCount(v)
		if !ok {
			bad++
			continue
		}
		r := out[class]
		switch kind {
		case "p":
			r.runs = n
		case "f":
			r.failed = n
		default:
			r.ms = n
		}
		out[class] = r
	}
	return out, bad
}

// mergeLayouts takes, per class, the layout that counted more runs (then more time): the same
// runs are in both when exq wrote them, and in one when a Sidekiq node did.
func mergeLayouts(p7, p8 map[string]minuteRuns) map[string]minuteRuns {
	for class, r := range p8 {
		if q, ok := p7[class]; !ok || r.runs > q.runs || r.runs == q.runs && r.ms > q.ms {
			p7[class] = r
		}
	}
	return p7
}

// metricCount parses a stored count: a non-negative integer (a float, as some writers store
// milliseconds, is cut to one); a huge one saturates. Anything else is not a count.
func metricCount(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err == nil:
		return n, n >= 0
	case errors.Is(err, strconv.ErrRange):
		return math.MaxInt64, n > 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return int64(f), true
}

// satAdd adds two non-negative counts, saturating at the largest int64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// histogram sums class's run-time histograms over minutes, per minute the layout that counted
// more runs.
func (a *API) histogram(ctx context.Context, class string, minutes []time.Time) ([]MetricsBucket, error) {
	var sum [wire.MetricBuckets]int64
	for start := 0; start < len(minutes); start += metricsChunkMinute {
		chunk := minutes[start:min(start+metricsChunkMinute, len(minutes))]
		v7, v8, err := a.jq.MetricsHistograms(ctx, class, chunk)
		if err != nil {
			return nil, fmt.Errorf("exq: metrics: histogram of %q: %w", class, err)
		}
		for i := range chunk {
			h := v7[i]
			if total(v8[i]) > total(h) {
				h = v8[i]
			}
			for b, n := range h {
				sum[b] = satAdd(sum[b], max(n, 0))
			}
		}
	}
	out := make([]MetricsBucket, wire.MetricBuckets)
	for b := range out {
		out[b].Runs = sum[b]
		if b < len(wire.MetricBucketLimits) {
			out[b].UpToMS = wire.MetricBucketLimits[b]
		}
	}
	return out, nil
}

// total is the runs of a histogram.
func total(h [wire.MetricBuckets]int64) int64 {
	var n int64
	for _, v := range h {
		n = satAdd(n, max(v, 0))
	}
	return n
}
