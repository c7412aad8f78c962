package exq

import (
	"context"
	"errors"

	"github.com/exqgo/exq/internal/flows"
)

// settle records the end of a run of a job of a batch or a workflow (store.RunSucceeded, store.RunFailed
// or store.RunDied) in Redis, before the caller writes the run's ordinary outcome (the
// acknowledgement, the retry or the death), retrying while Redis fails as persist does. It
// reports whether the transition is stored; when it is not (the node is stopping and Redis
// still fails), the caller writes no outcome either and the job stays in the backup list.
//
// Why this order, and why it is exactly once:
//   - Each transition is one Lua script, idempotent by jid (internal/store/scripts/batch_settle.lua: the jid's entry
//     in the batch's pending hash, read and changed in the same script, decides whether
//     anything changes; workflow_settle.lua: the job's state).
//   - Transition first, outcome second. A node that dies between the two leaves the job in
//     its backup list: it is rescued and runs again, and that run's transition is a no-op for
//     what the first one recorded, after which its outcome is written. The other order (the
//     outcome first) would lose the transition whenever a node died between the two, since
//     nothing would run the job again.
//   - A reply lost on the way back makes persist send the script again: a no-op.
//   - A run that ends after another run of the same job (a kill, a rescue, the job running
//     twice) changes nothing the first one recorded: a job that succeeded is no longer
//     pending, so its later failure or death counts nowhere; a workflow job that ended stays
//     ended, so its dependents are released once.
//
// A job that is neither in a batch nor a workflow costs nothing here.
func (e *Exq) settle(r *run, job *Job, out string) bool {
	items := flows.Items(job.bid, job.wf, job.wfJob, job.JID, out)
	if len(items) == 0 {
		return true
	}
	var replies [][]any
	ok := e.persist(r, "batch or workflow outcome", func(context.Context) error {
		replies = replies[:0]
		for _, it := range items {
			reply, err := e.jq.Settle(it, e.opts.now, e.opts.RedisTimeout)
			if err != nil && !errors.Is(err, ErrNotReplicated) { // a shortfall is logged
				return err
			}
			replies = append(replies, reply)
		}
		return nil
	})
	if !ok || !e.events.has() {
		return ok
	}
	for _, o := range flows.Outcomes(items, replies) { // each reported by the node whose write did it
		ev := Event{Queue: job.Queue, Class: job.Class, JID: job.JID, Flow: job.wf, Count: o.Released, Canceled: o.Canceled}
		switch {
		case o.Batch:
			for _, f := range o.Fired {
				e.events.emit(Event{Kind: BatchCallback, Queue: job.Queue, Class: job.Class, JID: job.JID, Flow: job.bid, Callback: f})
			}
			continue
		case o.Finished:
			ev.Callback = "finished"
		}
		ev.Kind = WorkflowReleased
		e.events.emit(ev)
	}
	return ok
}
