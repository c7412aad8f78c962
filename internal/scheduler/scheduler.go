// Package scheduler moves due jobs from the schedule and retry sets to their queues.
package scheduler

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/exqgo/exq/internal/loop"
	"github.com/exqgo/exq/internal/store"
)

// DueWakePrefix starts the payload with which the scripts that add a job to the schedule or
// retry set (enqueue_at.lua, enqueue_all.lua, retry.lua) announce it on the wake channel,
// followed by the job's score: ":due:1796010415.667948". They publish only when the job is due
// before every job the set held. A queue name cannot start with ':' (checkQueueName), so the
// poll loop never mistakes it for a queue, and nodes of earlier versions ignore it.
const DueWakePrefix = ":due:"

// maxSchedulerSleep bounds how long the scheduler sleeps (see Cap).
const maxSchedulerSleep = 5 * time.Second

// Cap is the longest the scheduler sleeps without looking at the sets: 25 ×
// SchedulerPollTimeout, at most maxSchedulerSleep but never less than SchedulerPollTimeout.
// It bounds how late a job is moved when it was added without an announcement (by Sidekiq or
// Exq, by a node of an earlier version, or when the announcement was lost) and is due before
// what the scheduler last read: 5 s with the default SchedulerPollTimeout.
func Cap(interval time.Duration) time.Duration {
	return max(interval, min(25*interval, maxSchedulerSleep))
}

// minSchedulerSleep keeps a scheduler whose clock disagrees with the scores (a test clock)
// from spinning.
const minSchedulerSleep = time.Millisecond

// Store is what the scheduler moves due jobs with: *store.Store, or a test's fake.
type Store interface {
	// EarliestDue is the score of the earliest job of the schedule and retry sets (zero:
	// none).
	EarliestDue(ctx context.Context) (time.Time, error)
	// MoveDue moves up to page jobs of set due at now to their queues, and says how many
	// members it read (a full page: there may be more).
	MoveDue(ctx context.Context, set string, now time.Time, page int) (int, error)
}

// Scheduler moves due jobs from the schedule and retry sets to their queues. Every node runs
// one; each move is one atomic script call, so nodes racing never lose or duplicate a job.
//
// It does not poll: it reads the earliest score of both sets and sleeps until then, at most
// Cap, or until a script announces a job due earlier than that (wake), and passes at
// most once per interval. An idle node thus reads the two heads once every few seconds, a job
// is moved when it is due (within the interval when another pass just ran), and a busy set
// costs no more than polling every interval did.
type Scheduler struct {
	jq       Store
	interval time.Duration // SchedulerPollTimeout: the wait after a failure, and the cap's base
	page     int
	now      func() time.Time
	log      *slog.Logger
	timeout  time.Duration

	wake  chan struct{} // buffered (1): announcements of jobs due before armed
	armed atomic.Int64  // when the sleeping scheduler looks next (Unix µs); 0 while it works
}

// New returns the scheduler of the store's node: it passes at most once per interval
// (SchedulerPollTimeout), moves page jobs per script call, reads the time from now and bounds
// each Redis call by timeout.
func New(jq Store, interval time.Duration, page int, now func() time.Time, log *slog.Logger, timeout time.Duration) *Scheduler {
	return &Scheduler{jq: jq, interval: interval, page: page, now: now, log: log, timeout: timeout, wake: make(chan struct{}, 1)}
}

// Due takes an announcement from the wake channel (manager.listen): it wakes the scheduler
// when the job is due before the scheduler looks next, or while it works (the sets it reads
// may already be behind). A payload it cannot read wakes it too.
func (s *Scheduler) Due(payload string) {
	score, err := strconv.ParseFloat(payload[len(DueWakePrefix):], 64)
	armed := s.armed.Load()
	if err != nil || math.IsNaN(score) || armed == 0 || score*1e6 < float64(armed) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Run moves due jobs, sleeping between passes as the type's comment says, until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	limit := Cap(s.interval)
	failing := false
	for {
		s.armed.Store(0)
		select {
		case <-s.wake: // what it announced, this pass reads
		default:
		}
		began := time.Now()
		next, err := s.pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.log.Warn("exq: scheduler: moving due jobs failed; will retry", "error", err)
			failing = true
		case err == nil && failing:
			s.log.Info("exq: scheduler: moving due jobs works again")
			failing = false
		}
		now := s.now()
		d := limit
		switch {
		case err != nil:
			d = s.interval
		case !next.IsZero():
			d = min(d, max(next.Sub(now), minSchedulerSleep))
		}
		// At most one pass per interval, however many distinct due times follow each other: a
		// busy set costs what polling every interval did, and each job is still moved within
		// the interval of being due.
		d = max(d, s.interval-time.Since(began))
		s.armed.Store(now.Add(d).UnixMicro())
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.wake:
			s.armed.Store(0)
			if rest := s.interval - time.Since(began); rest > 0 && !loop.Sleep(ctx, rest) {
				return
			}
		}
	}
}

// pass moves every job due now, if the heads of the sets say there is one, and returns the
// earliest score left in either set (zero when both are empty).
func (s *Scheduler) pass(ctx context.Context) (time.Time, error) {
	next, err := s.earliest(ctx)
	if err != nil || next.IsZero() || next.After(s.now()) {
		return next, err
	}
	if err := s.Tick(ctx); err != nil {
		return time.Time{}, err
	}
	return s.earliest(ctx)
}

// earliest reads the lowest score of the schedule and retry sets in one round trip.
func (s *Scheduler) earliest(ctx context.Context) (time.Time, error) {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.jq.EarliestDue(cctx)
}

// Tick moves every due job of both sets, a page per script call.
func (s *Scheduler) Tick(ctx context.Context) error {
	now := s.now()
	for _, set := range []string{store.ScheduleSet, store.RetrySet} {
		for ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, s.timeout)
			n, err := s.jq.MoveDue(cctx, set, now, s.page)
			cancel()
			if err != nil {
				return err
			}
			if n < s.page {
				break
			}
		}
	}
	return nil
}
