package exq

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Worker runs jobs of one class. Perform returns nil when the job succeeded; an error (or a
// panic) makes it a failure that is retried with backoff or, once its retries are used up,
// moved to the dead set. ctx ends when the node stops and the shutdown grace period is over.
type Worker interface {
	Perform(ctx context.Context, job *Job) error
}

// WorkerFunc lets a plain function be a Worker. Middleware calls the same type Handler.
type WorkerFunc func(ctx context.Context, job *Job) error

// Perform calls f.
func (f WorkerFunc) Perform(ctx context.Context, job *Job) error { return f(ctx, job) }

// process runs one fetched job to its end: decode, middleware and worker, outcome written,
// slot freed. Nothing a job does can kill the node or leak its slot.
func (e *Exq) process(r *run) {
	defer e.mgr.release(r)
	if !r.begin() {
		return // handed back to its queue at shutdown before it started
	}
	h, err := wire.DecodeHeader(r.raw)
	if err != nil {
		if r.claim() {
			e.stats.Record(false, e.opts.now())
			e.deadLetterPoison(r, err)
			if e.events.has() {
				e.events.emit(Event{Kind: JobDied, Queue: r.queue, Err: err})
			}
		}
		return
	}
	job := &r.job
	job.fill(h, r.raw, r.queue, e.opts.MaxRetries)
	if n := len(h.Args); n <= len(r.args) {
		copy(r.args[:], h.Args)
		job.Args = r.args[:n:n] // full, so that an append by the worker copies
	} else {
		job.Args = json.RawMessage(h.Args)
	}
	job.node, job.progress = e, &r.progress
	e.mgr.setJID(r, job.JID)
	job.worker, _ = e.registry.Lookup(job.Class)
	if job.worker == nil && e.registry.Registering() && e.awaitWorker(r, job) {
		return // back in its queue: its worker is not registered yet
	}
	if job.uniqueToken != "" && job.uniqueUntil == UntilStart && job.RetryCount == 0 {
		e.unlock(job) // before the first run only: a duplicate may be enqueued while it runs
	}
	r.ctx.Set(jobKey{}, job) // for JobFromContext
	var ctx context.Context = &r.ctx
	timeout := e.timeoutFor(job.worker)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimeout)
		defer cancel()
	}
	began := time.Now() // for the run metrics and the events
	if e.events.has() {
		// A write of this node that made the job runnable reports its event first.
		e.events.order.Wait(job.JID, e.opts.RedisTimeout)
		began = time.Now()
		e.events.emit(Event{Kind: JobStarted, Time: began, Queue: job.Queue, Class: job.Class, JID: job.JID, RetryCount: job.RetryCount})
	}
	err = e.perform(ctx, job)
	if e.events.has() {
		// The outcome's write may make the job runnable again (a retry, a snooze): its next
		// run on this node reports JobStarted after this run's outcome.
		defer e.events.order.Hold(job.JID)()
	}
	if !r.claim() {
		// Handed back to its queue at shutdown: not an outcome.
		out := outcome{name: "handed back", retryCount: job.RetryCount}
		if r.orphaned() {
			// This node was buried while the job ran, and the job rescued: it runs again.
			out.name = "rescued"
			e.log.Warn("exq: a job ended on a node that had been taken for dead; its outcome is not written, the rescued job runs again",
				"queue", r.queue, "class", job.Class, "jid", job.JID, "error", err)
		}
		e.reportOutcome(job, out)
		if e.events.has() {
			e.events.jobOutcome(job, out, time.Since(began))
		}
		return
	}
	var out outcome
	switch {
	case errors.Is(r.ctx.Cause(), errCanceled):
		// Cancelled by a CANCEL signal: dead, whatever the worker returned.
		e.stats.RecordRun(false, e.opts.now(), job.Class, time.Since(began))
		out = e.bury(r, job, "Canceled", "exq.Canceled")
	case timeout > 0 && errors.Is(context.Cause(ctx), errTimeout):
		// Out of time: a failure, whatever the worker returned.
		e.stats.RecordRun(false, e.opts.now(), job.Class, time.Since(began))
		out = e.fail(r, job, &TimeoutError{After: timeout, Err: err})
	case err == nil:
		e.stats.RecordRun(true, e.opts.now(), job.Class, time.Since(began))
		out = outcome{name: "done", retryCount: job.RetryCount}
		token := ""
		if job.uniqueUntil == UntilSuccess {
			token = job.uniqueToken
		}
		if token == "" { // its batch or workflow in the acknowledgement's call (ack_flow.go)
			e.acker.SubmitFlow(r.queue, r.raw, r.epoch, e.ackFlow(job))
			break
		}
		if !e.settle(r, job, store.RunSucceeded) { // its batch or workflow first (flows.go)
			out = out.storedIf(false, job.RetryCount)
			break
		}
		ok := e.persist(r, "acknowledge", func(ctx context.Context) error {
			return e.jq.Ack(ctx, r.queue, r.raw, token, job.JID, r.epoch) // releases the lock in the same script
		})
		out = out.storedIf(ok, job.RetryCount)
	case snoozeOf(err) != nil:
		e.stats.RecordRun(true, e.opts.now(), job.Class, time.Since(began)) // a snooze is not a failure (Exq)
		out = e.snooze(r, job, snoozeOf(err).Delay)
	default:
		e.stats.RecordRun(false, e.opts.now(), job.Class, time.Since(began))
		out = e.fail(r, job, err)
	}
	e.reportOutcome(job, out)
	if e.events.has() {
		e.events.jobOutcome(job, out, time.Since(began))
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
func (e *Exq) timeoutFor(w Worker) time.Duration {
	if t, ok := w.(interface{ Timeout() time.Duration }); ok {
		if d := t.Timeout(); d != 0 {
			return max(d, 0)
		}
	}
	return e.opts.JobTimeout
}

// jobKey is the context key of the running job.
type jobKey struct{}

// JobFromContext returns the job whose run ctx belongs to, or nil outside a job, for code
// below a worker that has only its ctx (a worker itself gets the *Job).
func JobFromContext(ctx context.Context) *Job {
	j, _ := ctx.Value(jobKey{}).(*Job)
	return j
}

// perform runs the middleware chain and the worker, turning a panic anywhere in them into a
// failure. ctx carries the job (WithJob, or a run's context).
func (e *Exq) perform(ctx context.Context, job *Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = newPanicError(v)
			e.log.Error("exq: job panicked", "class", job.Class, "jid", job.JID, "panic", v, "stack", string(err.(*PanicError).Stack))
		}
	}()
	return e.handler(ctx, job)
}

// callWorker is the innermost Handler.
func (e *Exq) callWorker(ctx context.Context, job *Job) error {
	if job.worker == nil {
		return &unknownClassError{class: job.Class}
	}
	return job.worker.Perform(ctx, job)
}

// unlock releases the job's unique lock if it still holds it, trying a few times: a lock
// that stays merely delays duplicates until it expires.
func (e *Exq) unlock(job *Job) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), e.opts.RedisTimeout)
		err = e.jq.Unlock(ctx, job.uniqueToken, job.JID)
		cancel()
		if err == nil {
			return
		}
	}
	e.log.Warn("exq: could not release a unique lock; it expires by itself", "jid", job.JID, "token", job.uniqueToken, "error", err)
}
