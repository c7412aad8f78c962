package exq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// snooze puts the job in the retry set to run again after d, as Exq's Snooze: retry_count
// unchanged, a success lock kept.
func (rn *runner) snooze(r *run, job *Job, d time.Duration) outcome {
	now := rn.now()
	obj, err := wire.ParseObject(r.raw)
	if err != nil {
		rn.deadLetterPoison(r, err)
		return outcome{name: "dead", retryCount: job.RetryCount, err: err, errorClass: wire.PoisonErrorClass}
	}
	job.writeMeta(obj)
	obj.MarkRetried(r.queue, "Snoozed for "+strconv.FormatFloat(d.Seconds(), 'f', -1, 64)+" seconds", now, rn.unit)
	doc := obj.String()
	at := now.Add(d)
	ok := rn.persist(r, "snooze", func(ctx context.Context) error {
		return rn.retry(ctx, r, job, doc, at)
	})
	return outcome{name: "snoozed", retryCount: job.RetryCount, at: at}.storedIf(ok, job.RetryCount)
}

// retry writes a retry (or snooze) of r: a keyed job's into its queue's delayed set, where
// no Sidekiq or Exq node runs it, holding its key in a sequence (retry_keyed.lua).
func (rn *runner) retry(ctx context.Context, r *run, job *Job, doc string, at time.Time) error {
	if r.key != "" {
		_, err := rn.jq.RetryKeyed(ctx, r.queue, r.key, job.JID, r.hold, r.raw, doc, at, r.epoch)
		return err
	}
	_, err := rn.jq.Retry(ctx, r.queue, r.raw, doc, at, r.epoch)
	return err
}

// fail writes a failed job to the retry set, or to the dead set when its retries are used up,
// keeping every field of the document it does not own.
func (rn *runner) fail(r *run, job *Job, cause error) outcome {
	now := rn.now()
	before := job.RetryCount
	obj, err := wire.ParseObject(r.raw)
	if err != nil { // DecodeHeader accepted it, so this cannot happen; never lose the job anyway
		rn.deadLetterPoison(r, err)
		return outcome{name: "dead", retryCount: before, err: err, errorClass: wire.PoisonErrorClass}
	}
	count := job.RetryCount + 1
	class := errorClass(cause)
	job.writeMeta(obj)
	doc := failedDoc(obj, r.queue, count, errorMessage(cause), class, cause, now, rn.unit)
	out := outcome{name: "dead", retryCount: count, err: cause, errorClass: class}
	if count <= job.MaxRetries && !permanent(cause) {
		job.RetryCount = count
		at := now.Add(rn.backoff(count, job, cause))
		rn.log.Debug("exq: job failed; retrying", "class", job.Class, "jid", job.JID, "retry_count", count, "at", at, "error", cause)
		ok := rn.settle(r, job, store.RunFailed) && rn.persist(r, "retry", func(ctx context.Context) error {
			return rn.retry(ctx, r, job, doc, at)
		})
		out.name, out.at = "retry", at
		return out.storedIf(ok, before)
	}
	msg := "exq: job failed with no retries left; moved to the dead set"
	if count <= job.MaxRetries {
		msg = "exq: job's args do not decode, which no retry can mend; moved to the dead set"
	}
	rn.log.Log(context.Background(), deadLevel(job), msg, "class", job.Class, "jid", job.JID, "retry_count", count, "error", cause)
	return out.storedIf(rn.deadLetter(r, job, doc, now), before)
}

// deadLetter writes a dead job and, for a success lock, releases it. It reports whether the
// job was stored.
func (rn *runner) deadLetter(r *run, job *Job, doc string, now time.Time) bool {
	token := ""
	if job.uniqueUntil == UntilSuccess {
		token = job.uniqueToken
	}
	if !rn.settle(r, job, store.RunDied) { // its batch or workflow first (settle)
		return false
	}
	return rn.persist(r, "dead-letter", func(ctx context.Context) error {
		_, err := rn.jq.Dead(ctx, r.queue, r.raw, doc, now, rn.deadTimeout, rn.deadMaxJobs, token, job.JID, r.epoch)
		return err
	})
}

// deadLevel is the level of the node's own line for a job it moves to the dead set: Warn, or
// Debug when LogJobs writes the job's outcome line (the only middleware that registers an
// outcome function), so that a dead job is not logged twice.
func deadLevel(job *Job) slog.Level {
	if len(job.outcomeHooks) > 0 {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// bury moves a job to the dead set whatever its retries (a cancelled job).
func (rn *runner) bury(r *run, job *Job, message, class string) outcome {
	now := rn.now()
	obj, err := wire.ParseObject(r.raw)
	if err != nil {
		rn.deadLetterPoison(r, err)
		return outcome{name: "dead", retryCount: job.RetryCount, err: err, errorClass: wire.PoisonErrorClass}
	}
	job.writeMeta(obj)
	doc := failedDoc(obj, r.queue, job.RetryCount+1, message, class, nil, now, rn.unit)
	rn.log.Log(context.Background(), deadLevel(job), "exq: job moved to the dead set", "class", job.Class, "jid", job.JID, "reason", message)
	out := outcome{name: "dead", retryCount: job.RetryCount + 1, err: errors.New(message), errorClass: class}
	return out.storedIf(rn.deadLetter(r, job, doc, now), job.RetryCount)
}

// failedDoc rewrites a job document after a failure (cause, nil for a cancel): only the
// fields exq owns change. Only a panic has a backtrace (a Go error carries no stack).
func failedDoc(obj *wire.Object, queue string, count int, message, class string, cause error, now time.Time, unit wire.TimeUnit) string {
	var pe *PanicError
	isPanic := errors.As(cause, &pe)
	var lines []string
	if isPanic {
		lines = pe.backtrace()
	}
	return obj.Failed(queue, count, message, class, isPanic, lines, now, unit)
}

// deadLetterPoison moves a document that can never run to the dead set, wrapped so that it
// is readable there, and takes it off the backup list.
// The caller has claimed the run.
func (rn *runner) deadLetterPoison(r *run, cause error) {
	now := rn.now()
	doc := wire.Poison(r.raw, r.queue, "poison-"+uuid.NewString(), cause.Error(), now)
	rn.log.Error("exq: undecodable job moved to the dead set", "queue", r.queue, "error", cause)
	rn.persist(r, "dead-letter poison message", func(ctx context.Context) error {
		_, err := rn.jq.Dead(ctx, r.queue, r.raw, doc, now, rn.deadTimeout, rn.deadMaxJobs, "", "", r.epoch)
		return err
	})
}

// persist writes a job's outcome, retrying while Redis fails, until it is stored or the
// shutdown grace period is over. In that case the job stays in the backup list, from which a
// restart with the same NodeID or a live node's rescue runs it again: never lost. It reports
// whether the outcome was stored.
func (rn *runner) persist(r *run, what string, write func(ctx context.Context) error) bool {
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		// Each attempt runs to its end even during shutdown: a cancelled write could have
		// happened in Redis with nobody knowing.
		ctx, cancel := context.WithTimeout(context.Background(), rn.redisTimeout)
		err := write(ctx)
		cancel()
		if err == nil {
			if attempt > 1 {
				rn.log.Info(fmt.Sprintf("exq: %s succeeded after %d attempts", what, attempt), "queue", r.queue)
			}
			return true
		}
		if attempt == 1 || attempt%50 == 0 {
			rn.log.Warn(fmt.Sprintf("exq: %s failed; retrying until Redis answers", what), "queue", r.queue, "attempt", attempt, "error", err)
		}
		select {
		case <-rn.graceOver:
			rn.log.Error(fmt.Sprintf("exq: %s failed and the node is stopping; the job stays in the backup list", what),
				"queue", r.queue, "backup", rn.jq.BackupListName(r.queue), "error", err)
			return false
		case <-rn.after(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// backoff is the delay of retry n of job, which failed with cause: what its worker's NextRetry
// method says when the worker has one and it says a positive delay, else what Options.Backoff
// says. A NextRetry or a Backoff that panics, or a Backoff that returns a negative delay, must
// not kill the node or lose the job: Options.Backoff stands in for the first, Exq's formula for
// the second, 0 for the third.
func (rn *runner) backoff(n int, job *Job, cause error) (d time.Duration) {
	if w, ok := job.worker.(interface {
		NextRetry(job *Job, err error) time.Duration
	}); ok {
		if d := rn.nextRetry(w.NextRetry, job, cause); d > 0 {
			return d
		}
	}
	defer func() {
		if v := recover(); v != nil {
			rn.log.Error("exq: Options.Backoff panicked; using Exq's backoff", "panic", v)
			d = ExqBackoff(n, job)
		}
	}()
	if d = rn.defaultBackoff(n, job); d < 0 {
		d = 0
	}
	return d
}

// nextRetry calls a worker's NextRetry; one that panics counts as none (0).
func (rn *runner) nextRetry(next func(*Job, error) time.Duration, job *Job, cause error) (d time.Duration) {
	defer func() {
		if v := recover(); v != nil {
			rn.log.Error("exq: a worker's NextRetry panicked; using Options.Backoff", "class", job.Class, "jid", job.JID, "panic", v)
			d = 0
		}
	}()
	return next(job, cause)
}

// settle records the end of a run of a job of a batch or a workflow (store.RunSucceeded,
// RunFailed or RunDied) before the caller writes the run's ordinary outcome, retrying while
// Redis fails as persist does; when it cannot (the node is stopping and Redis still fails),
// the caller writes no outcome either and the job stays in the backup list. Why this order
// makes each transition exactly once: flows.Items.
func (rn *runner) settle(r *run, job *Job, out string) bool {
	items := flows.Items(job.bid, job.wf, job.wfJob, job.JID, out)
	if len(items) == 0 {
		return true
	}
	var replies [][]any
	ok := rn.persist(r, "batch or workflow outcome", func(context.Context) (err error) {
		replies, err = flows.Record(rn.jq, items, rn.now, rn.redisTimeout)
		return err
	})
	if !ok || !rn.events.has() {
		return ok
	}
	for _, o := range flows.Outcomes(items, replies) { // each reported by the node whose write did it
		for _, f := range o.Fired {
			rn.events.emit(Event{Kind: BatchCallback, Queue: job.Queue, Class: job.Class, JID: job.JID, Flow: job.bid, Callback: f})
		}
		if !o.Batch {
			rn.events.emit(Event{Kind: WorkflowReleased, Queue: job.Queue, Class: job.Class, JID: job.JID, Flow: job.wf,
				Count: o.Released, Canceled: o.Canceled, Callback: o.Callback})
		}
	}
	return ok
}

// interrupt puts a job whose iteration stopped for the node's stop back at the front of its
// queue, byte for byte: no retry counted, and the next run resumes from the saved cursor.
func (rn *runner) interrupt(r *run, job *Job) outcome {
	ok := rn.persist(r, "interrupted iteration hand-back", func(ctx context.Context) error {
		_, err := rn.jq.Requeue(ctx, r.queue, []string{r.raw})
		return err
	})
	return outcome{name: "interrupted", retryCount: job.RetryCount}.storedIf(ok, job.RetryCount)
}
