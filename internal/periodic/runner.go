// Package periodic is each node's evaluation of the periodic jobs' schedules: it enqueues
// every tick once, whichever nodes (exq's or sidekiq-cron's) are up.
package periodic

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/exqgo/exq/internal/cronspec"
	"github.com/exqgo/exq/internal/loop"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Runner enqueues the ticks of every periodic job of the namespace. It runs on every node:
// each evaluates every schedule at its ticks, and the enqueue script lets only the first claim
// of a tick push its job (sidekiq-cron's processes claim the same way), so a tick is enqueued
// once whoever is up, and as long as one node is.
type Runner struct {
	Parts

	states map[string]*tickState
	warned map[string]string // schedule name → the problem already logged for it
	// pending are the ticks whose enqueue failed without an answer (a lost reply, or a call
	// that never reached Redis: the runner cannot tell which). Each is sent again, the same job
	// under the same claim, until Redis answers; its EnqueueHooks hear that answer.
	pending []*pendingTick
}

// Parts are what a runner is built from.
type Parts struct {
	Store *store.Store
	// Build validates and renders the job of rec's tick, with jid, at now (the node's
	// enqueuer, whose EnqueueHooks it runs).
	Build    func(ctx context.Context, now time.Time, rec store.CronRecord, jid string) (Job, error)
	Hold     func(jid string) func()        // marks jid as being written until the function is called
	Enqueued func(queue, class, jid string) // reports a written job to the listeners
	Grace    time.Duration                  // how late a tick may still be enqueued (Options.PeriodicGrace)
	Reload   time.Duration                  // how often the schedules are read again
	Timeout  time.Duration                  // bounds each Redis call
	Now      func() time.Time
	Log      *slog.Logger
}

// Job is a tick's job as Build renders it.
type Job struct {
	JID, Doc string
	Finish   func(jid string, err error) // tells the EnqueueHooks how the write went
}

// New returns a runner on the store's namespace.
func New(p Parts) *Runner {
	return &Runner{Parts: p, states: map[string]*tickState{}, warned: map[string]string{}}
}

// Pending is the number of ticks whose enqueue Redis has not answered yet.
func (p *Runner) Pending() int { return len(p.pending) }

// pendingTick is a tick's enqueue that Redis has not answered yet.
type pendingTick struct {
	rec   store.CronRecord
	tick  time.Time
	b     Job
	built time.Time // the job's enqueued_at
	claim store.CronClaim
}

// TickJID is the jid of schedule name's job for tick: the same on every node, so a tick is one
// job whoever enqueues it.
func TickJID(name string, tick time.Time) string {
	sum := sha1.Sum([]byte(name + "\x00" + wire.CronTick(tick)))
	return hex.EncodeToString(sum[:12])
}

// cronClaimTTL is how long the marker of a tick's claim lives: long enough for the node to
// learn, after a lost reply, that the tick is its own (it asks again until Redis answers,
// within PeriodicGrace while it may still enqueue the tick, and once more when it stops).
func (p *Runner) cronClaimTTL() time.Duration { return p.Grace + 10*time.Minute }

// tickState is what the runner knows of one schedule.
type tickState struct {
	rec      store.CronRecord
	sched    cronspec.Schedule
	upcoming time.Time // the first tick not evaluated yet
}

// Bounds of the runner's sleeps: a lower one so that a failing Redis is not hammered, and the
// wait after a failure.
const (
	periodicMinSleep   = 5 * time.Millisecond
	periodicErrorSleep = 200 * time.Millisecond
)

// periodicIdleReload is how often the schedules are read again while the namespace has none
// the runner can enqueue: a schedule added then (through the API, another node or
// sidekiq-cron) starts within this long, and its first tick, if already past, is still
// enqueued within PeriodicGrace.
const periodicIdleReload = 10 * time.Second

// reloadEvery is how long the schedules read last stay good: reload while there are some,
// periodicIdleReload (or reload, if longer) while there are none.
func (p *Runner) reloadEvery() time.Duration {
	if len(p.states) == 0 {
		return max(p.Reload, periodicIdleReload)
	}
	return p.Reload
}

// Run evaluates the schedules at their ticks until ctx ends, then settles the pending ticks.
func (p *Runner) Run(ctx context.Context) {
	defer p.Settle()
	var loaded time.Time
	failing := false
	for ctx.Err() == nil {
		now := p.Now()
		if loaded.IsZero() || now.Sub(loaded) >= p.reloadEvery() || now.Before(loaded) {
			if err := p.Load(ctx); err != nil {
				if !failing && ctx.Err() == nil {
					p.Log.Warn("exq: periodic jobs: reading the schedules failed; will retry", "error", err)
				}
				failing = true
				if !loop.Sleep(ctx, periodicErrorSleep) {
					return
				}
				continue
			}
			if failing {
				p.Log.Info("exq: periodic jobs: reading the schedules works again")
				failing = false
			}
			loaded = now
		}
		next, err := p.Evaluate(ctx, now)
		wait := loaded.Add(p.reloadEvery()).Sub(p.Now())
		if len(p.states) > 0 {
			wait = min(wait, next.Sub(p.Now()))
		}
		if err != nil {
			wait = periodicErrorSleep
		}
		if !loop.Sleep(ctx, max(wait, periodicMinSleep)) {
			return
		}
	}
}

// Load reads the schedules again, keeping what the runner knows of those whose spec did not
// change.
func (p *Runner) Load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	recs, err := p.Store.LoadCron(ctx)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		seen[r.Name] = true
		problem := r.Problem
		var s cronspec.Schedule
		if problem == "" {
			if s, err = cronspec.Parse(r.Spec, ""); err != nil {
				problem = err.Error()
			}
		}
		if problem != "" {
			if p.warned[r.Name] != problem {
				p.Log.Warn("exq: periodic job cannot be read; exq does not enqueue it", "name", r.Name, "problem", problem)
				p.warned[r.Name] = problem
			}
			delete(p.states, r.Name)
			continue
		}
		delete(p.warned, r.Name)
		if st, ok := p.states[r.Name]; ok && st.rec.Spec == r.Spec {
			st.rec = r
			continue
		}
		p.states[r.Name] = &tickState{rec: r, sched: s}
	}
	for name := range p.states {
		if !seen[name] {
			delete(p.states, name)
		}
	}
	return nil
}

// Evaluate enqueues, for every enabled schedule, its latest tick at or before now if it is at
// most grace old and not yet enqueued; earlier missed ticks are skipped. It returns the soonest
// tick still to come, and the last error.
func (p *Runner) Evaluate(ctx context.Context, now time.Time) (time.Time, error) {
	next := now.Add(p.Reload)
	lastErr := p.resend(ctx, now)
	for _, st := range p.states {
		if st.upcoming.IsZero() {
			st.upcoming = st.sched.Next(now.Add(-p.Grace - time.Nanosecond))
		}
		var due time.Time
		for !st.upcoming.IsZero() && !st.upcoming.After(now) {
			due, st.upcoming = st.upcoming, st.sched.Next(st.upcoming)
		}
		if !due.IsZero() && st.rec.Enabled && now.Sub(due) <= p.Grace {
			if err := p.enqueue(ctx, st.rec, due, now); err != nil {
				lastErr = err // p.pending holds the tick: it is sent again
				if ctx.Err() == nil {
					p.Log.Warn("exq: periodic job: enqueueing a tick failed; will retry", "name", st.rec.Name, "tick", due, "error", err)
				}
			}
		}
		if !st.upcoming.IsZero() && st.upcoming.Before(next) {
			next = st.upcoming
		}
	}
	return next, lastErr
}

// enqueue pushes the job of rec for tick, if no one (node or sidekiq-cron) claimed the tick.
func (p *Runner) enqueue(ctx context.Context, rec store.CronRecord, tick, now time.Time) error {
	jid := TickJID(rec.Name, tick)
	b, err := p.Build(ctx, now, rec, jid)
	if err != nil {
		if p.warned[rec.Name] != err.Error() {
			p.Log.Warn("exq: periodic job cannot be enqueued", "name", rec.Name, "error", err)
			p.warned[rec.Name] = err.Error()
		}
		return nil // a bad record is not retried: it would fail the same way
	}
	pt := &pendingTick{rec: rec, tick: tick, b: b, built: now, claim: store.CronClaim{ID: wire.NewJID(), TTL: p.cronClaimTTL()}}
	return p.send(ctx, pt)
}

// send sends a tick's enqueue, and on an answer tells the hooks and listeners. Without one,
// the tick joins p.pending (once).
func (p *Runner) send(ctx context.Context, pt *pendingTick) error {
	cctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	jid := pt.b.JID
	release := p.Hold(jid)
	defer release()
	ok, err := p.Store.CronEnqueue(cctx, pt.rec.Name, pt.rec.Queue, jid, pt.b.Doc, pt.tick, pt.built, pt.claim)
	if err != nil {
		if !slices.Contains(p.pending, pt) {
			p.pending = append(p.pending, pt)
		}
		return err
	}
	p.pending = slices.DeleteFunc(p.pending, func(x *pendingTick) bool { return x == pt })
	if ok {
		p.Log.Debug("exq: periodic job enqueued", "name", pt.rec.Name, "tick", pt.tick, "jid", jid)
		p.Enqueued(pt.rec.Queue, pt.rec.Class, jid)
		pt.b.Finish(jid, nil)
	} else {
		pt.b.Finish("", nil) // the tick was another's, or the schedule is disabled or gone
	}
	return nil
}

// resend sends the pending ticks again, oldest first: to enqueue one while it is within grace
// (or learn that an earlier send did), and after that only to learn whether an earlier send
// did. It stops at the first error (Redis does not answer: the rest would wait for it too). A
// tick older than its claim's marker can no longer be learnt about: its hooks hear that.
func (p *Runner) resend(ctx context.Context, now time.Time) error {
	for _, pt := range slices.Clone(p.pending) {
		if now.Sub(pt.tick) >= pt.claim.TTL {
			p.giveUp(pt, "Redis did not answer while the claim's marker lived", nil)
			continue
		}
		pt.claim.Check = now.Sub(pt.tick) > p.Grace
		if err := p.send(ctx, pt); err != nil {
			return err
		}
	}
	return nil
}

// Settle asks once more, when the runner stops, about each tick still pending; the hooks of a
// tick Redis does not answer for hear that.
func (p *Runner) Settle() {
	for _, pt := range slices.Clone(p.pending) {
		pt.claim.Check = true
		if err := p.send(context.Background(), pt); err != nil {
			p.giveUp(pt, "Redis did not answer before the node stopped", err)
		}
	}
}

// giveUp drops a pending tick, telling its hooks that whether its job was written is unknown.
func (p *Runner) giveUp(pt *pendingTick, why string, cause error) {
	p.pending = slices.DeleteFunc(p.pending, func(x *pendingTick) bool { return x == pt })
	p.Log.Warn("exq: periodic job: whether a tick's job was written is unknown", "name", pt.rec.Name, "tick", pt.tick, "why", why, "error", cause)
	err := fmt.Errorf("exq: periodic job %q, tick %s: %s, so whether its job was written is unknown", pt.rec.Name, pt.tick.UTC().Format(time.RFC3339), why)
	if cause != nil {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	pt.b.Finish("", err)
}
