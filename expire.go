package exq

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// ExpiresIn makes the job expire d after it is due (after the enqueue, or for a scheduled job
// after its time, as Sidekiq Pro's expires_in): a job that has not started by then is not run
// (see ExpiresAt for what happens to it). d must be positive.
func ExpiresIn(d time.Duration) EnqueueOption {
	return optionFunc{fmt.Sprintf("ExpiresIn(%s)", d), func(c *enqueueConfig) error {
		if d <= 0 {
			return fmt.Errorf("ExpiresIn must be positive, got %s", d)
		}
		c.expiry = &expiry{in: d}
		return nil
	}}
}

// ExpiresAt makes the job expire at t: a job that has not started by then is not run. The job
// carries it as "expires_at" (float seconds, the field Sidekiq Pro's expiring jobs write and
// read, so a Sidekiq Pro node with expiry honours it too). A node judges it by the Redis
// server's clock when it fetches the job, before every run, retries included (as Sidekiq Pro:
// the expiry is the job's, whenever it would run). An expired job is counted (API.ExpiredJobs),
// reported (JobExpired), and dropped, or with Options.KeepExpiredJobs moved to the dead set
// with error_class "exq.Expired". Dropped, it counts as a success for its batch or workflow
// (as Sidekiq Pro's batches count it); kept dead, as a death. t must be after the enqueue
// (the Redis server's clock), after a scheduled job's time, and not after year 9999.
func ExpiresAt(t time.Time) EnqueueOption {
	return optionFunc{fmt.Sprintf("ExpiresAt(%s)", t.UTC().Format(time.RFC3339Nano)), func(c *enqueueConfig) error {
		if t.IsZero() {
			return fmt.Errorf("ExpiresAt is the zero time")
		}
		c.expiry = &expiry{at: t}
		return nil
	}}
}

// expiry is an ExpiresIn or ExpiresAt option.
type expiry struct {
	in time.Duration
	at time.Time
}

// resolve is the expiry of a job enqueued at now (the Redis server's clock) and due at due
// (zero: at once).
func (e *expiry) resolve(now, due time.Time) (time.Time, error) {
	base := now
	if !due.IsZero() {
		base = due
	}
	at := e.at
	if e.in > 0 {
		at = base.Add(e.in)
	}
	switch {
	case at.After(wire.LatestTime):
		return time.Time{}, fmt.Errorf("expiry %s is after year 9999, the latest exq writes", at.UTC().Format(time.RFC3339))
	case !at.After(now):
		return time.Time{}, fmt.Errorf("expiry %s is not after now (%s by the Redis server's clock)",
			at.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	case !due.IsZero() && !at.After(due):
		return time.Time{}, fmt.Errorf("expiry %s is not after the job's time %s: it would never run",
			at.UTC().Format(time.RFC3339Nano), due.UTC().Format(time.RFC3339Nano))
	}
	return at, nil
}

// ExpiredErrorClass is the error_class of a job moved to the dead set because it expired
// before it started (Options.KeepExpiredJobs).
const ExpiredErrorClass = "exq.Expired"

// expired handles a fetched job whose expiry is at (zero: none) before it runs: when at has
// passed by the Redis server's clock, the job is dropped (or moved to the dead set), counted
// and reported, and expired reports true. A job's expiry is judged on the server's clock, so
// nodes whose own clocks are off agree on it.
func (rn *runner) expired(r *run, job *Job, at time.Time) bool {
	now := rn.now()
	if at.IsZero() || now.Before(at) {
		return false
	}
	if !r.claim() {
		return true // handed back to its queue at shutdown: another run judges it
	}
	if job.uniqueToken != "" && job.uniqueUntil == UntilStart && job.RetryCount == 0 {
		rn.unlock(job) // it never starts: a duplicate may be enqueued
	}
	msg := "Expired at " + at.UTC().Format(time.RFC3339Nano) + " before it started"
	var stored bool
	if rn.keepExpired {
		stored = rn.bury(r, job, msg, ExpiredErrorClass).name == "dead"
	} else {
		stored = rn.dropExpired(r, job)
	}
	rn.log.Info("exq: job expired before it started; not run", "queue", job.Queue, "class", job.Class, "jid", job.JID,
		"expires_at", at, "kept_dead", rn.keepExpired, "stored", stored)
	if !stored {
		return true // still in the backup list: a later run finds it expired and counts it then
	}
	if rn.steps != nil {
		ctx, cancel := context.WithTimeout(context.Background(), rn.redisTimeout)
		if err := rn.steps.store.CountExpired(ctx); err != nil {
			rn.log.Warn("exq: could not count an expired job", "jid", job.JID, "error", err)
		}
		cancel()
	}
	if rn.events.has() {
		rn.events.emit(Event{Kind: JobExpired, Queue: job.Queue, Class: job.Class, JID: job.JID, RetryCount: job.RetryCount, At: at})
	}
	return true
}

// dropExpired takes an expired job off its backup list as a success would (a success lock
// released, its batch or workflow told it succeeded, as Sidekiq Pro's batches count an expired
// job), and reports whether that was stored.
func (rn *runner) dropExpired(r *run, job *Job) bool {
	token := ""
	if job.uniqueUntil == UntilSuccess {
		token = job.uniqueToken
	}
	if token == "" { // its batch or workflow in the acknowledgement's call (ack_flow.go)
		rn.acker.SubmitFlow(r.queue, r.raw, r.epoch, rn.ackFlow(job))
		return true
	}
	return rn.settle(r, job, store.RunSucceeded) && rn.persist(r, "acknowledge an expired job", func(ctx context.Context) error {
		return rn.jq.Ack(ctx, r.queue, r.raw, token, job.JID, r.epoch)
	})
}
