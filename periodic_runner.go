package exq

import (
	"context"
	"log/slog"
	"time"
)

// periodicRunner enqueues the ticks of every periodic job of the namespace. It runs on every
// node: each evaluates every schedule at its ticks, and the enqueue script lets only the first
// claim of a tick push its job (sidekiq-cron's processes claim the same way), so a tick is
// enqueued once whoever is up, and as long as one node is.
type periodicRunner struct {
	jq      *jobQueue
	en      *enqueuer
	grace   time.Duration // how late a tick may still be enqueued
	reload  time.Duration // how often the schedules are read again
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger

	states map[string]*tickState
	warned map[string]string // schedule name → the problem already logged for it
}

// tickState is what the runner knows of one schedule.
type tickState struct {
	rec      cronRecord
	sched    schedule
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
	recs, err := p.jq.loadCron(ctx)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		seen[r.name] = true
		problem := r.problem
		var s schedule
		if problem == "" {
			if s, err = parseSpec(r.spec, ""); err != nil {
				problem = err.Error()
			}
		}
		if problem != "" {
			if p.warned[r.name] != problem {
				p.log.Warn("exq: periodic job cannot be read; exq does not enqueue it", "name", r.name, "problem", problem)
				p.warned[r.name] = problem
			}
			delete(p.states, r.name)
			continue
		}
		delete(p.warned, r.name)
		if st, ok := p.states[r.name]; ok && st.rec.spec == r.spec {
			st.rec = r
			continue
		}
		p.states[r.name] = &tickState{rec: r, sched: s}
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
	var lastErr error
	for _, st := range p.states {
		if st.upcoming.IsZero() {
			st.upcoming = st.sched.next(now.Add(-p.grace - time.Nanosecond))
		}
		var due time.Time
		for !st.upcoming.IsZero() && !st.upcoming.After(now) {
			due, st.upcoming = st.upcoming, st.sched.next(st.upcoming)
		}
		if !due.IsZero() && st.rec.enabled && now.Sub(due) <= p.grace {
			if err := p.enqueue(ctx, st.rec, due, now); err != nil {
				lastErr = err
				st.upcoming = due // try that tick again, while it is within grace
				if ctx.Err() == nil {
					p.log.Warn("exq: periodic job: enqueueing a tick failed; will retry", "name", st.rec.name, "tick", due, "error", err)
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
func (p *periodicRunner) enqueue(ctx context.Context, rec cronRecord, tick, now time.Time) error {
	jid := tickJID(rec.name, tick)
	b, err := p.en.buildAt(ctx, now, "periodic "+rec.name, rec.queue, rec.class, rec.args, time.Time{}, []EnqueueOption{JID(jid)})
	if err != nil {
		if p.warned[rec.name] != err.Error() {
			p.log.Warn("exq: periodic job cannot be enqueued", "name", rec.name, "error", err)
			p.warned[rec.name] = err.Error()
		}
		return nil // a bad record is not retried: it would fail the same way
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	ok, err := p.jq.cronEnqueue(ctx, rec.name, rec.queue, jid, b.doc, tick, now)
	if err == nil && ok {
		p.log.Debug("exq: periodic job enqueued", "name", rec.name, "tick", tick, "jid", jid)
		p.en.enqueued(rec.queue, rec.class, jid, time.Time{})
		b.finish(jid, nil)
	} else {
		b.finish("", err) // not written: an error, or the tick was another's
	}
	return err
}
