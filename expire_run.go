package exq

import (
	"context"
	"time"

	"github.com/exqgo/exq/internal/store"
)

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
