package exqprom

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/exqgo/exq"
)

// snapshot holds the values last read from Redis. Each part keeps its last good value when a
// later read of it fails; a part never read successfully is not exported.
type snapshot struct {
	sizes       map[string]int64         // nil until read
	latencies   map[string]time.Duration // nil until read
	sets        [3]int64                 // retry, scheduled, dead
	setsOK      [3]bool
	nodes       int
	nodesOK     bool
	stats       exq.Stats
	statsOK     bool
	outbox      exq.OutboxStatus
	outboxOK    bool
	keys        map[string]exq.KeysReport // by queue of Options.KeyQueues; a queue's last good read
	lastSuccess time.Time                 // when every part was last read successfully
}

var sets = [3]exq.Set{exq.RetrySet, exq.ScheduledSet, exq.DeadSet}

// flight is a read of Redis in progress. Scrapes that find one wait for it, until its
// deadline, instead of starting their own: a Redis that does not answer is never read by more
// than one read at a time, however many scrapers there are.
type flight struct {
	done     chan struct{}
	deadline time.Time
	counted  bool // the read was counted as an error (by itself or by a scrape that gave up on it); guarded by Collector.mu
}

// snapshot returns the values to export: the cached ones while they are fresh, otherwise
// those of a new read (or of the read in progress) if it ends within ScrapeTimeout, otherwise
// the last ones.
func (c *Collector) snapshot() snapshot {
	c.mu.Lock()
	if c.flight == nil && (c.readAt.IsZero() || c.opts.CacheFor < 0 || time.Since(c.readAt) >= c.opts.CacheFor) {
		c.startRead()
	}
	f := c.flight
	c.mu.Unlock()
	if f != nil {
		t := time.NewTimer(time.Until(f.deadline))
		select {
		case <-f.done:
		case <-t.C:
			c.mu.Lock()
			if !f.counted {
				f.counted = true
				c.failed(fmt.Errorf("no answer within the scrape timeout of %s", c.opts.ScrapeTimeout))
			}
			c.mu.Unlock()
		}
		t.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}

// startRead starts reading Redis in the background; c.mu is held. The read's context ends at
// its deadline, and every part runs concurrently, so a scrape costs one round trip's time (two
// for the parts that list the queues or nodes first), not the sum of them.
func (c *Collector) startRead() {
	now := time.Now()
	f := &flight{done: make(chan struct{}), deadline: now.Add(c.opts.ScrapeTimeout)}
	c.flight, c.readAt = f, now
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), f.deadline)
		defer cancel()
		var (
			wg      sync.WaitGroup
			r       snapshot
			errs    [5]error
			setErrs [3]error
		)
		run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
		run(func() { r.sizes, errs[0] = c.api.QueueSizes(ctx) })
		run(func() { r.latencies, errs[1] = c.api.QueueLatencies(ctx) })
		for i, s := range sets {
			run(func() { r.sets[i], setErrs[i] = c.api.Size(ctx, s) })
		}
		run(func() {
			ps, err := c.api.Processes(ctx)
			r.nodes, errs[2] = len(ps), err
		})
		run(func() { r.stats, errs[3] = c.api.Stats(ctx) })
		run(func() { r.outbox, errs[4] = c.api.Outbox(ctx) })
		keys := make([]exq.KeysReport, len(c.opts.KeyQueues))
		keyErrs := make([]error, len(c.opts.KeyQueues))
		for i, q := range c.opts.KeyQueues {
			run(func() { keys[i], keyErrs[i] = c.api.Keys(ctx, q, exq.KeysOptions{Limit: c.opts.TopKeys}) })
		}
		wg.Wait()

		c.mu.Lock()
		defer c.mu.Unlock()
		s := c.snap
		if errs[0] == nil {
			s.sizes = validKeys(r.sizes)
		}
		if errs[1] == nil {
			s.latencies = validKeys(r.latencies)
		}
		for i := range sets {
			if setErrs[i] == nil {
				s.sets[i], s.setsOK[i] = r.sets[i], true
			}
		}
		if errs[2] == nil {
			s.nodes, s.nodesOK = r.nodes, true
		}
		if errs[3] == nil {
			s.stats, s.statsOK = r.stats, true
		}
		if errs[4] == nil {
			s.outbox, s.outboxOK = r.outbox, true
		}
		if len(c.opts.KeyQueues) > 0 {
			m := make(map[string]exq.KeysReport, len(c.opts.KeyQueues))
			for i, q := range c.opts.KeyQueues {
				if keyErrs[i] == nil {
					m[q] = keys[i]
				} else if old, ok := s.keys[q]; ok {
					m[q] = old
				}
			}
			s.keys = m
		}
		err := errors.Join(append(append(errs[:], setErrs[:]...), keyErrs...)...)
		if err == nil {
			s.lastSuccess = time.Now()
		} else if !f.counted {
			f.counted = true
			c.failed(err)
		}
		c.snap = s
		c.flight = nil
		close(f.done)
	}()
}

// failed counts a failed read and logs it.
func (c *Collector) failed(err error) {
	c.scrapeErrors.Inc()
	if c.opts.Logger != nil {
		c.opts.Logger.Warn("exqprom: reading Redis for a scrape failed; serving the last values", "error", err)
	}
}

// validKeys returns m with its keys made valid UTF-8 (Prometheus refuses other label values);
// m itself when they all are, as they nearly always are.
func validKeys[V any](m map[string]V) map[string]V {
	for k := range m {
		if !utf8.ValidString(k) {
			out := make(map[string]V, len(m))
			for k, v := range m {
				out[strings.ToValidUTF8(k, "\uFFFD")] = v
			}
			return out
		}
	}
	return m
}
