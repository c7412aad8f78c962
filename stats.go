package exq

// The node's Stats component (moved from internal/stats): it counts processed and failed runs
// (Sidekiq's and Exq's counters, in all, per day, and per second for the realtime graphs) and
// each class's run metrics in memory, and writes them in one script call per flush. Start
// builds it and runs it with the other background parts; Stop flushes what is left. The
// public types of what it writes, as API reads them, are at the end of this file.

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Stat key lifetimes, as Sidekiq sets them.
const (
	statDayTTL    = 5 * 365 * 24 * time.Hour
	statSecondTTL = 120 * time.Second
)

// stats counts processed and failed runs, and each class's runs for Sidekiq 7 and 8's
// Metrics tab (addRunLocked), in memory and writes them in one script call per flush: never a
// round trip per job. A Redis outage never blocks a worker; what was counted
// meanwhile is written once Redis answers. (The busy list is the pinger's: node.go.)
//
// A flush whose reply is lost may have been applied, so it is sent again as the same batch,
// with the same id, before anything counted later: the script applies a batch id once.
type stats struct {
	jq       *store.Store
	interval time.Duration // between flushes (1 s)
	now      func() time.Time
	log      *slog.Logger
	disabled bool

	noMetrics bool // Options.DisableMetrics

	mu      sync.Mutex
	pending map[statKey]int64
	cur     statSecond // the second being counted, folded into pending when it changes
	runs    map[metricKey]*runMetrics

	flushMu sync.Mutex // one flush at a time: the batch in flight must go before any other
	sending *statBatch // sent, and not known to be applied; under flushMu
	batches uint64     // under flushMu
}

// statBatch is one flush's counters and run metrics, and its id.
type statBatch struct {
	id     string
	counts map[statKey]int64
	runs   map[metricKey]*runMetrics
}

// statSecond counts the runs that ended in one second. Nearly every run ends in the same
// second as the one before it, so record touches these two integers rather than three map
// entries: the map holds the seconds that are complete.
type statSecond struct {
	sec               int64
	processed, failed int64
}

// statKey is one counter: kind is "processed" or "failed"; at is the second it counts for
// (zero for the all-time total, a UTC midnight for a day, a second for the realtime key).
type statKey struct {
	kind string
	span byte // 't' total, 'd' day, 's' second
	at   int64
}

// newStats returns the stats of the store's node, flushed every interval (by Run) with the times
// of now; disabled counts nothing, noMetrics counts no run metrics.
func newStats(jq *store.Store, interval time.Duration, now func() time.Time, log *slog.Logger, disabled, noMetrics bool) *stats {
	return &stats{noMetrics: noMetrics, jq: jq, interval: interval, now: now, log: log, disabled: disabled, pending: map[statKey]int64{}}
}

// Record counts one run that ended at now: ok for processed, else failed.
func (s *stats) Record(ok bool, now time.Time) { s.RecordRun(ok, now, "", 0) }

// RecordRun counts one run of class that ended at now after took: in the counters, and in the
// Run metrics of Sidekiq 7 and 8's Metrics tab (addRunLocked) unless class is "".
func (s *stats) RecordRun(ok bool, now time.Time, class string, took time.Duration) {
	if s.disabled {
		return
	}
	sec := now.Unix()
	s.mu.Lock()
	if class != "" && !s.noMetrics {
		s.addRunLocked(ok, sec, class, took)
	}
	if sec != s.cur.sec {
		s.foldLocked()
		s.cur.sec = sec
	}
	if ok {
		s.cur.processed++
	} else {
		s.cur.failed++
	}
	s.mu.Unlock()
}

// foldLocked moves the counts of the current second into pending: its all-time, day and
// second counters. Call with mu held.
func (s *stats) foldLocked() {
	c := s.cur
	s.cur = statSecond{sec: c.sec}
	day := c.sec - ((c.sec%86400)+86400)%86400 // the UTC midnight that began its day
	for _, k := range [...]struct {
		kind string
		n    int64
	}{{"processed", c.processed}, {"failed", c.failed}} {
		if k.n == 0 {
			continue
		}
		s.pending[statKey{k.kind, 't', 0}] += k.n
		s.pending[statKey{k.kind, 'd', day}] += k.n
		s.pending[statKey{k.kind, 's', c.sec}] += k.n
	}
}

// Run flushes every interval until ctx ends.
func (s *stats) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.Flush(ctx)
		switch {
		case err != nil && !failing:
			s.log.Warn("exq: stats: writing counters failed; keeping them until Redis answers", "error", err)
			failing = true
		case err == nil && failing:
			s.log.Info("exq: stats: writing counters works again")
			failing = false
		}
	}
}

// statFlushMarkerTTL is how long Redis remembers the id of the last batch a node applied: a
// batch is sent again within seconds, or after an outage of at most this long.
const statFlushMarkerTTL = time.Hour

// Flush writes the batch whose reply was lost, if any, then the pending counters.
func (s *stats) Flush(ctx context.Context) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	for {
		if s.sending == nil {
			s.mu.Lock()
			s.foldLocked()
			counts, runs := s.pending, s.runs
			s.pending, s.runs = map[statKey]int64{}, nil
			s.mu.Unlock()
			if len(counts) == 0 && len(runs) == 0 {
				return nil
			}
			s.batches++
			s.sending = &statBatch{id: s.jq.Node() + ":" + strconv.FormatUint(s.batches, 36), counts: counts, runs: runs}
		}
		if err := s.send(ctx, s.sending); err != nil {
			return err
		}
		s.sending = nil
	}
}

// send applies one batch in one script call, once however often it is sent.
func (s *stats) send(ctx context.Context, b *statBatch) error {
	now := s.now()
	counts := make([]store.StatCount, 0, len(b.counts))
	for k, n := range b.counts {
		c := store.StatCount{Name: k.kind, Span: k.span, At: time.Unix(k.at, 0), N: n}
		switch k.span {
		case 'd':
			c.TTL = statDayTTL
		case 's':
			if now.Unix()-k.at > int64(statSecondTTL/time.Second) {
				// Already expired had it been written in time: writing it late would only
				// distort the realtime graph.
				continue
			}
			c.TTL = statSecondTTL
		}
		counts = append(counts, c)
	}
	return s.jq.FlushStats(ctx, b.id, statFlushMarkerTTL, counts, b.runs, now)
}

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
func (s *stats) addRunLocked(ok bool, sec int64, class string, took time.Duration) {
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

// Stats are the processed (successful runs) and failed (failed runs) counters.
type Stats struct {
	Processed, Failed int64
}

// DayStats are the counters of one UTC day.
type DayStats struct {
	Day time.Time
	Stats
}

// SecondStats are the counters of one UTC second (kept for 120 s).
type SecondStats struct {
	At time.Time
	Stats
}

// Metrics are the per-class run metrics of a window of minutes.
type Metrics struct {
	// From and To are the first and the last minute read (UTC, To the minute after the
	// server's current one, for nodes whose clocks run a little ahead).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Classes are the classes that ran, the most time taken first (then the most runs, then
	// by name), at most Top of them.
	Classes []ClassMetrics `json:"classes"`
	// Total is how many classes ran in the window (more than len(Classes) when Top cut).
	Total int `json:"total"`
	// Invalid counts the stored values that were not counts (not a number, negative, NaN)
	// and were left out; a huge one counts as the largest int64.
	Invalid int `json:"invalid,omitempty"`
	// Truncated says that Redis held more than one read takes (a minute with more than about
	// 1000 fields, more than 10000 classes): what is shown is a part.
	Truncated bool `json:"truncated,omitempty"`
}

// ClassMetrics are one class's runs in a window.
type ClassMetrics struct {
	Class string `json:"class"`
	// Runs counts every run, the failed ones included; Failed the failed ones; Succeeded the
	// others.
	Runs      int64 `json:"runs"`
	Failed    int64 `json:"failed"`
	Succeeded int64 `json:"succeeded"`
	// TotalMS is the milliseconds spent in successful runs; MeanMS TotalMS per successful
	// run (0 without one).
	TotalMS int64   `json:"total_ms"`
	MeanMS  float64 `json:"mean_ms"`
	// Histogram is, with MetricsOptions.Class, how many successful runs took how long (all
	// 26 of Sidekiq's buckets, fastest first); nil otherwise.
	Histogram []MetricsBucket `json:"histogram,omitempty"`
}

// MetricsBucket is one bucket of a run-time histogram: the runs that took less than UpToMS
// milliseconds and at least the previous bucket's bound; UpToMS is 0 for the last, open
// bucket (335 s or more).
type MetricsBucket struct {
	UpToMS int64 `json:"up_to_ms"`
	Runs   int64 `json:"runs"`
}
