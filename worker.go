package exq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/exqgo/exq/internal/wire"
)

// Worker runs jobs of one class. Perform returns nil when the job succeeded; an error (or a
// panic) makes it a failure that is retried with backoff or, once its retries are used up,
// moved to the dead set. ctx ends when the node stops and the shutdown grace period is over.
type Worker interface {
	Perform(ctx context.Context, job *Job) error
}

// WorkerFunc lets a plain function be a Worker.
type WorkerFunc func(ctx context.Context, job *Job) error

// Perform calls f.
func (f WorkerFunc) Perform(ctx context.Context, job *Job) error { return f(ctx, job) }

// registry maps classes to workers.
type registry struct {
	mu      sync.RWMutex
	workers map[string]Worker
}

func newRegistry(ws map[string]Worker) *registry {
	r := &registry{workers: make(map[string]Worker, len(ws))}
	for c, w := range ws {
		r.workers[c] = w
	}
	return r
}

func (r *registry) set(class string, w Worker) {
	r.mu.Lock()
	r.workers[class] = w
	r.mu.Unlock()
}

// lookup finds the worker of class. Text after a "/" is ignored, as in Exq ("Mod/perform").
func (r *registry) lookup(class string) (Worker, bool) {
	if i := strings.IndexByte(class, '/'); i >= 0 {
		class = class[:i]
	}
	r.mu.RLock()
	w, ok := r.workers[class]
	r.mu.RUnlock()
	return w, ok
}

// errShutdown is the cause of job contexts cancelled when the shutdown grace period ends. By
// then their jobs have been handed back to their queues, so whatever the worker returns is
// not written.
var errShutdown = errors.New("exq: node stopping: shutdown grace period over")

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
			e.stats.record(false, e.opts.now())
			e.deadLetterPoison(r, err)
		}
		return
	}
	job := newJob(h, r.raw, r.queue, e.opts.MaxRetries)
	e.mgr.setJID(r, job.JID)
	job.worker, _ = e.registry.lookup(job.Class)
	if job.uniqueToken != "" && job.uniqueUntil == UntilStart && job.RetryCount == 0 {
		e.unlock(job) // before the first run only: a duplicate may be enqueued while it runs
	}
	ctx := r.ctx
	timeout := e.timeoutFor(job.worker)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimeout)
		defer cancel()
	}
	err = e.perform(ctx, job)
	if !r.claim() {
		// Handed back to its queue at shutdown: not an outcome.
		e.reportOutcome(job, outcome{name: "handed back", retryCount: job.RetryCount})
		return
	}
	var snooze *SnoozeError
	var out outcome
	switch {
	case errors.Is(context.Cause(r.ctx), errCanceled):
		// Cancelled by a CANCEL signal: dead, whatever the worker returned.
		e.stats.record(false, e.opts.now())
		out = e.bury(r, job, "Canceled", "exq.Canceled")
	case timeout > 0 && errors.Is(context.Cause(ctx), errTimeout):
		// Out of time: a failure, whatever the worker returned.
		e.stats.record(false, e.opts.now())
		out = e.fail(r, job, &TimeoutError{After: timeout, Err: err})
	case err == nil:
		e.stats.record(true, e.opts.now())
		out = outcome{name: "done", retryCount: job.RetryCount}
		token := ""
		if job.uniqueUntil == UntilSuccess {
			token = job.uniqueToken
		}
		if token == "" {
			e.acker.submit(r.queue, r.raw)
			break
		}
		ok := e.persist(r, "acknowledge", func(ctx context.Context) error {
			return e.jq.ack(ctx, r.queue, r.raw, token, job.JID) // releases the lock in the same script
		})
		out = out.storedIf(ok, job.RetryCount)
	case errors.As(err, &snooze):
		e.stats.record(true, e.opts.now()) // a snooze is not a failure (Exq)
		out = e.snooze(r, job, snooze.Delay)
	default:
		e.stats.record(false, e.opts.now())
		out = e.fail(r, job, err)
	}
	e.reportOutcome(job, out)
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
// failure.
func (e *Exq) perform(ctx context.Context, job *Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = newPanicError(v)
			e.log.Error("exq: job panicked", "class", job.Class, "jid", job.JID, "panic", v, "stack", string(err.(*PanicError).Stack))
		}
	}()
	return e.handler(WithJob(ctx, job), job)
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
		err = e.jq.unlock(ctx, job.uniqueToken, job.JID)
		cancel()
		if err == nil {
			return
		}
	}
	e.log.Warn("exq: could not release a unique lock; it expires by itself", "jid", job.JID, "token", job.uniqueToken, "error", err)
}

// snooze puts the job in the retry set to run again after d, as Exq's Snooze: retry_count
// unchanged, a success lock kept.
func (e *Exq) snooze(r *run, job *Job, d time.Duration) outcome {
	now := e.opts.now()
	obj, err := wire.ParseObject(r.raw)
	if err != nil {
		e.deadLetterPoison(r, err)
		return outcome{name: "dead", retryCount: job.RetryCount, err: err, errorClass: wire.PoisonErrorClass}
	}
	markRetried(obj, r.queue, "Snoozed for "+strconv.FormatFloat(d.Seconds(), 'f', -1, 64)+" seconds", now)
	doc := obj.String()
	at := now.Add(d)
	ok := e.persist(r, "snooze", func(ctx context.Context) error {
		_, err := e.jq.retry(ctx, r.queue, r.raw, doc, at)
		return err
	})
	return outcome{name: "snoozed", retryCount: job.RetryCount, at: at}.storedIf(ok, job.RetryCount)
}

// fail writes a failed job to the retry set, or to the dead set when its retries are used up,
// keeping every field of the document it does not own.
func (e *Exq) fail(r *run, job *Job, cause error) outcome {
	now := e.opts.now()
	before := job.RetryCount
	obj, err := wire.ParseObject(r.raw)
	if err != nil { // DecodeHeader accepted it, so this cannot happen; never lose the job anyway
		e.deadLetterPoison(r, err)
		return outcome{name: "dead", retryCount: before, err: err, errorClass: wire.PoisonErrorClass}
	}
	count := job.RetryCount + 1
	class := errorClass(cause)
	doc := failedDoc(obj, r.queue, count, errorMessage(cause), class, cause, now)
	out := outcome{name: "dead", retryCount: count, err: cause, errorClass: class}
	if count <= job.MaxRetries {
		job.RetryCount = count
		at := now.Add(e.backoff(count, job))
		e.log.Debug("exq: job failed; retrying", "class", job.Class, "jid", job.JID, "retry_count", count, "at", at, "error", cause)
		ok := e.persist(r, "retry", func(ctx context.Context) error {
			_, err := e.jq.retry(ctx, r.queue, r.raw, doc, at)
			return err
		})
		out.name, out.at = "retry", at
		return out.storedIf(ok, before)
	}
	e.log.Warn("exq: job failed with no retries left; moved to the dead set", "class", job.Class, "jid", job.JID, "retry_count", count, "error", cause)
	return out.storedIf(e.deadLetter(r, job, doc, now), before)
}

// deadLetter writes a dead job and, for a success lock, releases it. It reports whether the
// job was stored.
func (e *Exq) deadLetter(r *run, job *Job, doc string, now time.Time) bool {
	token := ""
	if job.uniqueUntil == UntilSuccess {
		token = job.uniqueToken
	}
	return e.persist(r, "dead-letter", func(ctx context.Context) error {
		_, err := e.jq.dead(ctx, r.queue, r.raw, doc, now, e.opts.DeadTimeout, e.opts.DeadMaxJobs, token, job.JID)
		return err
	})
}

// bury moves a job to the dead set whatever its retries (a cancelled job).
func (e *Exq) bury(r *run, job *Job, message, class string) outcome {
	now := e.opts.now()
	obj, err := wire.ParseObject(r.raw)
	if err != nil {
		e.deadLetterPoison(r, err)
		return outcome{name: "dead", retryCount: job.RetryCount, err: err, errorClass: wire.PoisonErrorClass}
	}
	doc := failedDoc(obj, r.queue, job.RetryCount+1, message, class, nil, now)
	e.log.Warn("exq: job moved to the dead set", "class", job.Class, "jid", job.JID, "reason", message)
	out := outcome{name: "dead", retryCount: job.RetryCount + 1, err: errors.New(message), errorClass: class}
	return out.storedIf(e.deadLetter(r, job, doc, now), job.RetryCount)
}

// failedDoc rewrites a job document after a failure (cause, nil for a cancel): only the
// fields exq owns change.
func failedDoc(obj *wire.Object, queue string, count int, message, class string, cause error, now time.Time) string {
	obj.SetInt("retry_count", count)
	obj.SetString("error_class", class)
	markRetried(obj, queue, message, now)
	setBacktrace(obj, cause)
	return obj.String()
}

// panicBacktraceLines is how many frames of a panic's stack a job without a "backtrace" field
// keeps in error_backtrace.
const panicBacktraceLines = 50

// setBacktrace writes error_backtrace as Sidekiq does for a job with "backtrace": true (every
// line) or N (the first N): the failure's backtrace, base64 of the zlib-deflated JSON array.
// Only a panic has one (a Go error carries no stack), so for any other failure of such a job
// a stale error_backtrace, from an earlier failure, is removed. A panic in a job without the
// field keeps its first panicBacktraceLines frames too (Sidekiq would store none: exq's
// choice, README); "backtrace": false stores none.
func setBacktrace(obj *wire.Object, cause error) {
	var pe *PanicError
	isPanic := errors.As(cause, &pe)
	raw, present := obj.Get("backtrace")
	limit, want := wire.BacktraceLimit(raw)
	if !present && isPanic {
		limit, want = panicBacktraceLines, true
	}
	if !want {
		return
	}
	var lines []string
	if isPanic {
		lines = pe.backtrace()
	}
	if limit >= 0 && len(lines) > limit {
		lines = lines[:limit]
	}
	if len(lines) == 0 {
		obj.Delete("error_backtrace")
		return
	}
	obj.SetString("error_backtrace", wire.CompressBacktrace(lines))
}

// markRetried sets the fields every failure, snooze and death rewrites: error_message,
// failed_at (the first time only), retried_at, and queue when it is missing.
func markRetried(obj *wire.Object, queue, message string, now time.Time) {
	obj.SetString("error_message", message)
	if !obj.Has("failed_at") {
		obj.SetTime("failed_at", now)
	}
	obj.SetTime("retried_at", now)
	if !obj.Has("queue") {
		obj.SetString("queue", queue) // the scheduler routes by this field
	}
}

// deadLetterPoison moves a document that can never run to the dead set, wrapped so that it
// is readable there, and takes it off the backup list.
// The caller has claimed the run.
func (e *Exq) deadLetterPoison(r *run, cause error) {
	now := e.opts.now()
	doc := wire.Poison(r.raw, r.queue, "poison-"+uuid.NewString(), cause.Error(), now)
	e.log.Error("exq: undecodable job moved to the dead set", "queue", r.queue, "error", cause)
	e.persist(r, "dead-letter poison message", func(ctx context.Context) error {
		_, err := e.jq.dead(ctx, r.queue, r.raw, doc, now, e.opts.DeadTimeout, e.opts.DeadMaxJobs, "", "")
		return err
	})
}

// persist writes a job's outcome, retrying while Redis fails, until it is stored or the
// shutdown grace period is over. In that case the job stays in the backup list, from which a
// restart with the same NodeID or a live node's rescue runs it again: never lost. It reports
// whether the outcome was stored.
func (e *Exq) persist(r *run, what string, write func(ctx context.Context) error) bool {
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		// Each attempt runs to its end even during shutdown: a cancelled write could have
		// happened in Redis with nobody knowing.
		ctx, cancel := context.WithTimeout(context.Background(), e.opts.RedisTimeout)
		err := write(ctx)
		cancel()
		if err == nil {
			if attempt > 1 {
				e.log.Info(fmt.Sprintf("exq: %s succeeded after %d attempts", what, attempt), "queue", r.queue)
			}
			return true
		}
		if attempt == 1 || attempt%50 == 0 {
			e.log.Warn(fmt.Sprintf("exq: %s failed; retrying until Redis answers", what), "queue", r.queue, "attempt", attempt, "error", err)
		}
		select {
		case <-e.graceOver:
			e.log.Error(fmt.Sprintf("exq: %s failed and the node is stopping; the job stays in the backup list", what),
				"queue", r.queue, "backup", e.jq.keys.Backup(e.jq.node, r.queue), "error", err)
			return false
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// backoff asks Options.Backoff for the delay of retry n. A Backoff that panics or returns a
// negative delay must not kill the node or lose the job: Exq's formula stands in for it.
func (e *Exq) backoff(n int, job *Job) (d time.Duration) {
	defer func() {
		if v := recover(); v != nil {
			e.log.Error("exq: Options.Backoff panicked; using Exq's backoff", "panic", v)
			d = ExqBackoff(n, job)
		}
	}()
	if d = e.opts.Backoff(n, job); d < 0 {
		d = 0
	}
	return d
}
