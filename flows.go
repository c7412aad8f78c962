package exq

import (
	"context"
	"errors"
)

// settle records the end of a run of a job of a batch or a workflow (runSucceeded, runFailed
// or runDied) in Redis, before the caller writes the run's ordinary outcome (the
// acknowledgement, the retry or the death), retrying while Redis fails as persist does. It
// reports whether the transition is stored; when it is not (the node is stopping and Redis
// still fails), the caller writes no outcome either and the job stays in the backup list.
//
// Why this order, and why it is exactly once:
//   - Each transition is one Lua script, idempotent by jid (batch_settle.lua: a set operation
//     on the jid decides whether anything changes; workflow_settle.lua: the job's state).
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
	if job.bid == "" && (job.wf == "" || out == runFailed) {
		return true
	}
	return e.persist(r, "batch or workflow outcome", func(ctx context.Context) error {
		now := e.opts.now()
		var err error
		if job.bid != "" {
			_, _, err = e.jq.batchSettle(ctx, job.bid, job.JID, out, now)
		}
		if job.wf != "" && out != runFailed && err == nil {
			_, err = e.jq.workflowSettle(ctx, job.wf, job.wfJob, out, now)
		}
		if errors.Is(err, ErrNotReplicated) {
			return nil // written on the master; the shortfall is logged
		}
		return err
	})
}
