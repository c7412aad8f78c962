package exq

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/exqgo/exq/internal/acker"
	"github.com/exqgo/exq/internal/registry"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// runner runs the jobs the manager fetched, one run at a time per worker goroutine, to their
// end: decode, middleware and worker, outcome written (retry.go), slot freed. It is the one way
// through a run, built from the parts it uses (runnerParts), as the manager is, and it reaches
// Redis only through its JobQueue (runQueue) and the acker built on the same.
type runner struct {
	runnerParts
	handler Handler // the middleware chain around callWorker
}

// runnerParts are what a runner is built from.
type runnerParts struct {
	jq       runQueue
	acker    *acker.Acker               // acknowledges jobs that succeeded, in pipelines
	registry *registry.Registry[Worker] // the workers, by class
	stats    runStats                   // processed and failed counters, per class too
	events   listeners                  // Options.Listeners
	node     jobNode                    // the node, for a job's own calls (SetResult, AddToBatch)
	release  func(*run)                 // frees the run's slot (manager.release); every run ends there
	steps    *stepConfig                // durable steps' and expired jobs' writes (step.go, expire_run.go); nil: none
	setJID   func(r *run, jid string)   // records the decoded jid, for a CANCEL (manager.setJID)
	mayBegin func(*run) bool            // false: the run is not ours to begin (manager.mayBegin); nil: always
	// done is closed when the node is asked to stop; graceOver when the shutdown grace
	// period is over, after which an outcome that Redis does not take is left in the backup list.
	done, graceOver <-chan struct{}
	// after is persist's wait between two attempts (time.After).
	after      func(time.Duration) <-chan time.Time
	middleware []Middleware
	now        func() time.Time // the Redis server's clock
	log        *slog.Logger

	// From Options.
	maxRetries     int
	jobTimeout     time.Duration
	redisTimeout   time.Duration
	deadTimeout    time.Duration
	deadMaxJobs    int
	defaultBackoff func(n int, job *Job) time.Duration // Options.Backoff
	unit           wire.TimeUnit                       // of the failure timestamps written
	keepExpired    bool                                // Options.KeepExpiredJobs
}

// runStats is the Stats component as a run records into it.
type runStats interface {
	Record(ok bool, now time.Time)
	RecordRun(ok bool, now time.Time, class string, took time.Duration)
}

func newRunner(parts runnerParts) *runner {
	rn := &runner{runnerParts: parts}
	if rn.after == nil {
		rn.after = time.After
	}
	rn.handler = chain(rn.callWorker, parts.middleware)
	return rn
}

// process runs one fetched job to its end: decode, middleware and worker, outcome written,
// slot freed. Nothing a job does can kill the node or leak its slot.
func (rn *runner) process(r *run) {
	defer rn.release(r)
	if rn.mayBegin != nil && !rn.mayBegin(r) {
		return // its node was buried since the fetch: the job was rescued
	}
	if !r.begin() {
		return // handed back to its queue at shutdown, or orphaned, before it started
	}
	h, err := wire.DecodeHeader(r.raw)
	if err != nil {
		if r.claim() {
			rn.stats.Record(false, rn.now())
			rn.deadLetterPoison(r, err)
			if rn.events.has() {
				rn.events.emit(Event{Kind: JobDied, Queue: r.queue, Err: err})
			}
		}
		return
	}
	if h.Key != "" && r.key == "" {
		rn.routeToKey(r, h)
		return
	}
	job := &r.job
	job.fill(h, r.raw, r.queue, rn.maxRetries)
	if n := len(h.Args); n <= len(r.args) {
		copy(r.args[:], h.Args)
		job.Args = r.args[:n:n] // full, so that an append by the worker copies
	} else {
		job.Args = json.RawMessage(h.Args)
	}
	job.node, job.progress = rn.node, &r.progress
	job.steps, job.stepsUsed = rn.steps, &r.stepped
	rn.setJID(r, job.JID)
	if h.ExpiresAt.OK && rn.expired(r, job, h.ExpiresAt.Expiry()) {
		return // not run: it expired before it started (expire.go)
	}
	job.worker, _ = rn.registry.Lookup(job.Class)
	if job.worker == nil && rn.registry.Registering() && rn.awaitWorker(r, job) {
		return // back in its queue: its worker is not registered yet
	}
	if job.uniqueToken != "" && job.uniqueUntil == UntilStart && job.RetryCount == 0 {
		rn.unlock(job) // before the first run only: a duplicate may be enqueued while it runs
	}
	r.ctx.Set(jobKey{}, job) // for JobFromContext
	var ctx context.Context = &r.ctx
	timeout := rn.timeoutFor(job.worker)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimeout)
		defer cancel()
	}
	began := time.Now() // for the run metrics and the events
	if rn.events.has() {
		// A write of this node that made the job runnable reports its event first.
		rn.events.order.Wait(job.JID, rn.redisTimeout)
		began = time.Now()
		rn.events.emit(Event{Kind: JobStarted, Time: began, Queue: job.Queue, Class: job.Class, JID: job.JID, RetryCount: job.RetryCount})
	}
	err = rn.perform(ctx, job)
	if rn.events.has() {
		// The outcome's write may make the job runnable again (a retry, a snooze): its next
		// run on this node reports JobStarted after this run's outcome.
		defer rn.events.order.Hold(job.JID)()
	}
	if !r.claim() {
		// Handed back to its queue at shutdown: not an outcome.
		out := outcome{name: "handed back", retryCount: job.RetryCount}
		if r.orphaned() {
			// This node was buried while the job ran, and the job rescued: it runs again.
			out.name = "rescued"
			rn.log.Warn("exq: a job ended on a node that had been taken for dead; its outcome is not written, the rescued job runs again",
				"queue", r.queue, "class", job.Class, "jid", job.JID, "error", err)
		}
		rn.reportOutcome(job, out)
		if rn.events.has() {
			rn.events.jobOutcome(job, out, time.Since(began))
		}
		return
	}
	var out outcome
	switch {
	case errors.Is(r.ctx.Cause(), errCanceled):
		// Cancelled by a CANCEL signal: dead, whatever the worker returned.
		rn.stats.RecordRun(false, rn.now(), job.Class, time.Since(began))
		out = rn.bury(r, job, "Canceled", "exq.Canceled")
	case timeout > 0 && errors.Is(context.Cause(ctx), errTimeout):
		// Out of time: a failure, whatever the worker returned.
		rn.stats.RecordRun(false, rn.now(), job.Class, time.Since(began))
		out = rn.fail(r, job, &TimeoutError{After: timeout, Err: err})
	case err == nil:
		rn.stats.RecordRun(true, rn.now(), job.Class, time.Since(began))
		out = outcome{name: "done", retryCount: job.RetryCount}
		token := ""
		if job.uniqueUntil == UntilSuccess {
			token = job.uniqueToken
		}
		if token == "" { // its batch or workflow in the acknowledgement's call (ack_flow.go)
			rn.acker.SubmitFlow(r.queue, r.raw, r.epoch, rn.ackFlow(job))
			break
		}
		if !rn.settle(r, job, store.RunSucceeded) { // its batch or workflow first (settle, retry.go)
			out = out.storedIf(false, job.RetryCount)
			break
		}
		ok := rn.persist(r, "acknowledge", func(ctx context.Context) error {
			return rn.jq.Ack(ctx, r.queue, r.raw, token, job.JID, r.epoch) // releases the lock in the same script
		})
		out = out.storedIf(ok, job.RetryCount)
	case errors.Is(err, errIterationInterrupted): // the node stops (iteration.go)
		out = rn.interrupt(r, job)
	case errors.Is(err, errIterationCanceled): // cancelled: dead, as a CANCEL signal
		rn.stats.RecordRun(false, rn.now(), job.Class, time.Since(began))
		out = rn.bury(r, job, "Canceled", "exq.Canceled")
	case snoozeOf(err) != nil:
		rn.stats.RecordRun(true, rn.now(), job.Class, time.Since(began)) // a snooze is not a failure (Exq)
		out = rn.snooze(r, job, snoozeOf(err).Delay)
	default:
		rn.stats.RecordRun(false, rn.now(), job.Class, time.Since(began))
		out = rn.fail(r, job, err)
	}
	rn.steps.end(job, out, rn.now, rn.deadTimeout, rn.log)
	rn.reportOutcome(job, out)
	if rn.events.has() {
		rn.events.jobOutcome(job, out, time.Since(began))
	}
}

// snoozeOf returns the SnoozeError in err's chain, or nil. (A function of its own: the
// variable errors.As fills escapes to the heap, and in process it was allocated for every
// job, failing or not.)
func snoozeOf(err error) *SnoozeError {
	var s *SnoozeError
	if errors.As(err, &s) {
		return s
	}
	return nil
}

// timeoutFor is the run time allowed to w's jobs: its Timeout method when it has one (a
// negative value means none), else Options.JobTimeout.
func (rn *runner) timeoutFor(w Worker) time.Duration {
	if t, ok := w.(interface{ Timeout() time.Duration }); ok {
		if d := t.Timeout(); d != 0 {
			return max(d, 0)
		}
	}
	return rn.jobTimeout
}

// perform runs the middleware chain and the worker, turning a panic anywhere in them into a
// failure. ctx carries the job (WithJob, or a run's context).
func (rn *runner) perform(ctx context.Context, job *Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = newPanicError(v)
			rn.log.Error("exq: job panicked", "class", job.Class, "jid", job.JID, "panic", v, "stack", string(err.(*PanicError).Stack))
		}
	}()
	return rn.handler(ctx, job)
}

// callWorker is the innermost Handler.
func (rn *runner) callWorker(ctx context.Context, job *Job) error {
	if job.worker == nil {
		return &unknownClassError{class: job.Class}
	}
	return job.worker.Perform(ctx, job)
}

// unlock releases the job's unique lock if it still holds it, trying a few times: a lock
// that stays merely delays duplicates until it expires.
func (rn *runner) unlock(job *Job) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), rn.redisTimeout)
		err = rn.jq.Unlock(ctx, job.uniqueToken, job.JID)
		cancel()
		if err == nil {
			return
		}
	}
	rn.log.Warn("exq: could not release a unique lock; it expires by itself", "jid", job.JID, "token", job.uniqueToken, "error", err)
}

// reportOutcome calls the job's outcome functions. One that panics is logged and skipped: it
// cannot kill the node, and the outcome is already stored.
func (rn *runner) reportOutcome(job *Job, o outcome) {
	for _, f := range job.outcomeHooks {
		func() {
			defer func() {
				if v := recover(); v != nil {
					rn.log.Error("exq: a middleware's outcome function panicked", "class", job.Class, "jid", job.JID, "panic", v)
				}
			}()
			f(o)
		}()
	}
}

// registerWait is how long a fetched job whose class has no worker waits, holding its slot,
// for the worker to be registered before it goes back to its queue. It bounds how often a
// node that is still registering fetches such a job again: once per registerWait per slot.
const registerWait = time.Second

// routeToKey moves a keyed job that was fetched from its queue's own list (a Sidekiq Web
// "retry now" of a dead keyed job puts it there) to the head of its key's list, where the
// key's policy applies, instead of running it in breach of the policy.
func (rn *runner) routeToKey(r *run, h wire.Header) {
	if !r.claim() {
		return // handed back by the shutdown (requeue.lua routes it too)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(&r.ctx), rn.redisTimeout)
	defer cancel()
	if _, err := rn.jq.PutBack(ctx, r.queue, r.raw); err != nil {
		rn.log.Error("exq: could not move a keyed job found in its queue's list to its key; it stays in this node's backup list until it is recovered",
			"queue", r.queue, "class", h.Class, "jid", h.JID, "key", h.Key, "error", err)
		return
	}
	rn.log.Info("exq: a keyed job was in its queue's list; moved to its key's list", "queue", r.queue, "class", h.Class, "jid", h.JID, "key", h.Key)
}

// awaitWorker is the path of a fetched job whose class has no worker while registration is
// open (the workers of a deploy are being registered): the job waits a moment, holding its
// slot, for its worker, and runs if it comes. Otherwise, while registration is still open, it
// goes back to the enqueue end of its queue, unchanged: not a failure, no retry used, and
// jobs behind it run first. It reports whether the job was put back (or the shutdown took
// it); false means run it: with the worker found, or as an unknown class once registration
// is over.
func (rn *runner) awaitWorker(r *run, job *Job) bool {
	if w := rn.registry.Await(job.Class, registerWait, rn.done); w != nil {
		job.worker = w
		return false
	}
	select {
	case <-rn.done: // stopping: back to its queue rather than a failure
	default:
		if !rn.registry.Registering() {
			return false // registration is over: an ordinary unknown class
		}
	}
	if !r.claim() {
		return true // handed back by the shutdown
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(&r.ctx), rn.redisTimeout)
	defer cancel()
	moved, err := rn.jq.PutBack(ctx, r.queue, r.raw)
	switch {
	case err != nil:
		rn.log.Error("exq: could not put back a job whose class has no worker yet; it stays in this node's backup list until it is recovered",
			"queue", r.queue, "class", job.Class, "jid", job.JID, "error", err)
	case moved:
		rn.registry.PutBacks.Add(1)
		rn.log.Debug("exq: no worker registered yet for this class; the job went back to its queue", "queue", r.queue, "class", job.Class, "jid", job.JID)
	}
	return true
}
