package exq

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/exqgo/exq/internal/cronspec"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// periodicRunner enqueues the ticks of every periodic job of the namespace. It runs on every
// node: each evaluates every schedule at its ticks, and the enqueue script lets only the first
// claim of a tick push its job (sidekiq-cron's processes claim the same way), so a tick is
// enqueued once whoever is up, and as long as one node is.
type periodicRunner struct {
	jq      *store.Store
	en      *enqueuer
	grace   time.Duration // how late a tick may still be enqueued
	reload  time.Duration // how often the schedules are read again
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger

	states map[string]*tickState
	warned map[string]string // schedule name → the problem already logged for it
	// pending are the ticks whose enqueue failed without an answer (a lost reply, or a call
	// that never reached Redis: the runner cannot tell which). Each is sent again, the same job
	// under the same claim, until Redis answers; its EnqueueHooks hear that answer.
	pending []*pendingTick
}

// pendingTick is a tick's enqueue that Redis has not answered yet.
type pendingTick struct {
	rec   store.CronRecord
	tick  time.Time
	b     built
	built time.Time // the job's enqueued_at
	claim store.CronClaim
}

// cronClaimTTL is how long the marker of a tick's claim lives: long enough for the node to
// learn, after a lost reply, that the tick is its own (it asks again until Redis answers,
// within PeriodicGrace while it may still enqueue the tick, and once more when it stops).
func (p *periodicRunner) cronClaimTTL() time.Duration { return p.grace + 10*time.Minute }

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
func (p *periodicRunner) reloadEvery() time.Duration {
	if len(p.states) == 0 {
		return max(p.reload, periodicIdleReload)
	}
	return p.reload
}

func (p *periodicRunner) run(ctx context.Context) {
	defer p.settle()
	var loaded time.Time
	failing := false
	for ctx.Err() == nil {
		now := p.now()
		if loaded.IsZero() || now.Sub(loaded) >= p.reloadEvery() || now.Before(loaded) {
			if err := p.load(ctx); err != nil {
				if !failing && ctx.Err() == nil {
					p.log.Warn("exq: periodic jobs: reading the schedules failed; will retry", "error", err)
				}
				failing = true
				if !sleepCtx(ctx, periodicErrorSleep) {
					return
				}
				continue
			}
			if failing {
				p.log.Info("exq: periodic jobs: reading the schedules works again")
				failing = false
			}
			loaded = now
		}
		next, err := p.evaluate(ctx, now)
		wait := loaded.Add(p.reloadEvery()).Sub(p.now())
		if len(p.states) > 0 {
			wait = min(wait, next.Sub(p.now()))
		}
		if err != nil {
			wait = periodicErrorSleep
		}
		if !sleepCtx(ctx, max(wait, periodicMinSleep)) {
			return
		}
	}
}

// load reads the schedules again, keeping what the runner knows of those whose spec did not
// change.
func (p *periodicRunner) load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	recs, err := p.jq.LoadCron(ctx)
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
				p.log.Warn("exq: periodic job cannot be read; exq does not enqueue it", "name", r.Name, "problem", problem)
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

// evaluate enqueues, for every enabled schedule, its latest tick at or before now if it is at
// most grace old and not yet enqueued; earlier missed ticks are skipped. It returns the soonest
// tick still to come, and the last error.
func (p *periodicRunner) evaluate(ctx context.Context, now time.Time) (time.Time, error) {
	next := now.Add(p.reload)
	lastErr := p.resend(ctx, now)
	for _, st := range p.states {
		if st.upcoming.IsZero() {
			st.upcoming = st.sched.Next(now.Add(-p.grace - time.Nanosecond))
		}
		var due time.Time
		for !st.upcoming.IsZero() && !st.upcoming.After(now) {
			due, st.upcoming = st.upcoming, st.sched.Next(st.upcoming)
		}
		if !due.IsZero() && st.rec.Enabled && now.Sub(due) <= p.grace {
			if err := p.enqueue(ctx, st.rec, due, now); err != nil {
				lastErr = err // p.pending holds the tick: it is sent again
				if ctx.Err() == nil {
					p.log.Warn("exq: periodic job: enqueueing a tick failed; will retry", "name", st.rec.Name, "tick", due, "error", err)
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
func (p *periodicRunner) enqueue(ctx context.Context, rec store.CronRecord, tick, now time.Time) error {
	jid := tickJID(rec.Name, tick)
	b, err := p.en.buildAt(ctx, now, "periodic "+rec.Name, rec.Queue, rec.Class, rec.Args, time.Time{}, []EnqueueOption{JID(jid)})
	if err != nil {
		if p.warned[rec.Name] != err.Error() {
			p.log.Warn("exq: periodic job cannot be enqueued", "name", rec.Name, "error", err)
			p.warned[rec.Name] = err.Error()
		}
		return nil // a bad record is not retried: it would fail the same way
	}
	pt := &pendingTick{rec: rec, tick: tick, b: b, built: now, claim: store.CronClaim{ID: wire.NewJID(), TTL: p.cronClaimTTL()}}
	return p.send(ctx, pt)
}

// send sends a tick's enqueue, and on an answer tells the hooks and listeners. Without one,
// the tick joins p.pending (once).
func (p *periodicRunner) send(ctx context.Context, pt *pendingTick) error {
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	jid := pt.b.jid
	release := p.en.hold(jid)
	defer release()
	ok, err := p.jq.CronEnqueue(cctx, pt.rec.Name, pt.rec.Queue, jid, pt.b.doc, pt.tick, pt.built, pt.claim)
	if err != nil {
		if !slices.Contains(p.pending, pt) {
			p.pending = append(p.pending, pt)
		}
		return err
	}
	p.pending = slices.DeleteFunc(p.pending, func(x *pendingTick) bool { return x == pt })
	if ok {
		p.log.Debug("exq: periodic job enqueued", "name", pt.rec.Name, "tick", pt.tick, "jid", jid)
		p.en.enqueued(pt.rec.Queue, pt.rec.Class, jid, time.Time{})
		pt.b.finish(jid, nil)
	} else {
		pt.b.finish("", nil) // the tick was another's, or the schedule is disabled or gone
	}
	return nil
}

// resend sends the pending ticks again, oldest first: to enqueue one while it is within grace
// (or learn that an earlier send did), and after that only to learn whether an earlier send
// did. It stops at the first error (Redis does not answer: the rest would wait for it too). A
// tick older than its claim's marker can no longer be learnt about: its hooks hear that.
func (p *periodicRunner) resend(ctx context.Context, now time.Time) error {
	for _, pt := range slices.Clone(p.pending) {
		if now.Sub(pt.tick) >= pt.claim.TTL {
			p.giveUp(pt, "Redis did not answer while the claim's marker lived", nil)
			continue
		}
		pt.claim.Check = now.Sub(pt.tick) > p.grace
		if err := p.send(ctx, pt); err != nil {
			return err
		}
	}
	return nil
}

// settle asks once more, when the runner stops, about each tick still pending; the hooks of a
// tick Redis does not answer for hear that.
func (p *periodicRunner) settle() {
	for _, pt := range slices.Clone(p.pending) {
		pt.claim.Check = true
		if err := p.send(context.Background(), pt); err != nil {
			p.giveUp(pt, "Redis did not answer before the node stopped", err)
		}
	}
}

// giveUp drops a pending tick, telling its hooks that whether its job was written is unknown.
func (p *periodicRunner) giveUp(pt *pendingTick, why string, cause error) {
	p.pending = slices.DeleteFunc(p.pending, func(x *pendingTick) bool { return x == pt })
	p.log.Warn("exq: periodic job: whether a tick's job was written is unknown", "name", pt.rec.Name, "tick", pt.tick, "why", why, "error", cause)
	err := fmt.Errorf("exq: periodic job %q, tick %s: %s, so whether its job was written is unknown", pt.rec.Name, pt.tick.UTC().Format(time.RFC3339), why)
	if cause != nil {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	pt.b.finish("", err)
}
