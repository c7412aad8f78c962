package exq

import (
	"context"

	"github.com/exqgo/exq/internal/flows"
)

// settle records the end of a run of a job of a batch or a workflow (store.RunSucceeded,
// RunFailed or RunDied) before the caller writes the run's ordinary outcome, retrying while
// Redis fails as persist does; when it cannot (the node is stopping and Redis still fails),
// the caller writes no outcome either and the job stays in the backup list. Why this order
// makes each transition exactly once: flows.Items.
func (e *Exq) settle(r *run, job *Job, out string) bool {
	items := flows.Items(job.bid, job.wf, job.wfJob, job.JID, out)
	if len(items) == 0 {
		return true
	}
	var replies [][]any
	ok := e.persist(r, "batch or workflow outcome", func(context.Context) (err error) {
		replies, err = flows.Record(e.jq, items, e.opts.now, e.opts.RedisTimeout)
		return err
	})
	if !ok || !e.events.has() {
		return ok
	}
	for _, o := range flows.Outcomes(items, replies) { // each reported by the node whose write did it
		for _, f := range o.Fired {
			e.events.emit(Event{Kind: BatchCallback, Queue: job.Queue, Class: job.Class, JID: job.JID, Flow: job.bid, Callback: f})
		}
		if !o.Batch {
			e.events.emit(Event{Kind: WorkflowReleased, Queue: job.Queue, Class: job.Class, JID: job.JID, Flow: job.wf,
				Count: o.Released, Canceled: o.Canceled, Callback: o.Callback})
		}
	}
	return ok
}
