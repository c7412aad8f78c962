// Package serverclock is a process's reading of the Redis server's clock, which every time
// several exq nodes rely on is read from.
package serverclock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is this process's reading of the Redis server's clock (TIME). Every time that
// more than one node relies on is read from it: the due times of scheduled, retried and snoozed
// jobs, the scheduler's "due now", periodic ticks and the ticks a new schedule marks as past,
// unique lock lifetimes, dead-set trimming, stats keys. Nodes whose own clocks disagree then
// still agree on all of them, to within a round trip.
//
// A sample pairs a TIME reply with this process's clock read halfway through the round trip;
// between samples the server's time is the sample's plus the time elapsed here, measured on
// the monotonic clock that Go's time.Now carries, so even a step of this machine's wall clock
// (NTP, a user) changes nothing. A node takes a sample at Start and then every heartbeat
// interval (run); a Client or an API takes one at its first call that needs the time and again
// when it is older than clientClockAge (fresh).
type Clock struct {
	read  func(context.Context) (time.Time, error) // the server's TIME
	local func() time.Time                         // this process's clock: time.Now, or a test's skewed one
	log   *slog.Logger
	// syncing is held by the one fresh call that takes a sample: the calls that meet a stale
	// sample at once (a Client's first burst of enqueues) share one TIME round trip.
	syncing chan struct{}

	mu   sync.Mutex             // held by Sync while it compares and replaces the sample
	last atomic.Pointer[sample] // nil before the first sample; read without a lock (Now runs for every job)
}

// sample is one reading of the server's clock.
type sample struct {
	server time.Time     // the server's time at the sample
	at     time.Time     // local's reading at that instant
	skew   time.Duration // server − local, for the logs
}

// clientClockAge is how old the sample of a Client or an API may be before a call that needs
// the server's time takes a new one: the drift of a monotonic clock in that time is far below
// a millisecond.
const clientClockAge = time.Minute

// maxClockRoundTrip is the longest TIME round trip a sample is taken from once the clock has
// one: the sample's error is up to half of it.
const maxClockRoundTrip = time.Second

// clockSkewWarning is the difference between this process's clock and the server's above
// which the first sample, and a change of that size later, is logged.
const clockSkewWarning = time.Second

// New returns the clock that read reads (the server's TIME), measured on local (nil:
// time.Now) between samples; log gets the warnings of a skew or a failing read.
func New(read func(context.Context) (time.Time, error), local func() time.Time, log *slog.Logger) *Clock {
	if local == nil {
		local = time.Now
	}
	return &Clock{read: read, local: local, log: log, syncing: make(chan struct{}, 1)}
}

// Now is the server's time as this process reads it. Before the first sample it is the local
// clock: nodes take one in Start, and Clients and APIs call fresh before they read now.
func (c *Clock) Now() time.Time {
	l := c.local()
	last := c.last.Load()
	if last == nil {
		return l
	}
	return last.server.Add(l.Sub(last.at))
}

// Sync takes a sample of the server's clock.
func (c *Clock) Sync(ctx context.Context) error {
	before := c.local()
	server, err := c.read(ctx)
	if err != nil {
		return fmt.Errorf("read the Redis server's clock (TIME): %w", err)
	}
	after := c.local()
	rtt := after.Sub(before)
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.last.Load()
	if last != nil && rtt > maxClockRoundTrip {
		return nil // a stalled round trip: the sample in hand is the better one
	}
	at := before.Add(rtt / 2)
	// The wall readings, without the monotonic ones, say how far the clocks are apart.
	skew := server.Sub(at.Round(0))
	if c.log != nil && (last == nil && (skew > clockSkewWarning || skew < -clockSkewWarning) ||
		last != nil && (skew-last.skew > clockSkewWarning || last.skew-skew > clockSkewWarning)) {
		c.log.Warn("exq: this process's clock differs from the Redis server's; exq times jobs, ticks and locks by the server's clock",
			"server_minus_local", skew.Round(time.Millisecond))
	}
	c.last.Store(&sample{server: server, at: at, skew: skew})
	return nil
}

// Fresh takes a sample when there is none or the last one is older than maxAge. With a sample
// in hand, a failed TIME is not an error: the sample still reads the server's clock well, and
// the call that needs the time meets Redis' trouble itself.
func (c *Clock) Fresh(ctx context.Context, maxAge time.Duration) error {
	if ok, _ := c.Young(maxAge); ok {
		return nil
	}
	select {
	case c.syncing <- struct{}{}:
		defer func() { <-c.syncing }()
	case <-ctx.Done():
		return fmt.Errorf("read the Redis server's clock: %w", ctx.Err())
	}
	ok, sampled := c.Young(maxAge)
	if ok {
		return nil // another call took a sample meanwhile
	}
	if err := c.Sync(ctx); err != nil && !sampled {
		return err
	}
	return nil
}

// Young reports whether there is a sample younger than maxAge, and whether there is one.
func (c *Clock) Young(maxAge time.Duration) (ok, sampled bool) {
	l := c.local()
	last := c.last.Load()
	return last != nil && l.Sub(last.at) < maxAge, last != nil
}

// Run takes a sample every interval until ctx ends.
func (c *Clock) Run(ctx context.Context, interval, timeout time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := c.Sync(cctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			c.log.Warn("exq: reading the Redis server's clock failed; keeping the last reading", "error", err)
			failing = true
		case err == nil && failing:
			failing = false
		}
	}
}

// FreshForClient is fresh for a Client or an API: a sample at most clientClockAge old.
func (c *Clock) FreshForClient(ctx context.Context) error { return c.Fresh(ctx, clientClockAge) }
