package exq

import (
	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/store"
)

// ackFlow is the transition of a successful job of a batch or workflow that the acker records
// in the same call as its acknowledgement (nil for a job of neither), with its events reported
// once it is in Redis, as settle reports them. Why that is exactly once: flows.AckFlow.
func (rn *runner) ackFlow(job *Job) *store.AckFlow {
	if job.bid == "" && job.wf == "" {
		return nil // a plain job: nothing to build on the hot path
	}
	var done func([]flows.Outcome)
	if rn.events.has() {
		// The run's Job is used again by the slot's next job: the events keep copies.
		queue, class, jid, bid, wf := job.Queue, job.Class, job.JID, job.bid, job.wf
		done = func(outcomes []flows.Outcome) {
			for _, o := range outcomes {
				for _, f := range o.Fired {
					rn.events.emit(Event{Kind: BatchCallback, Queue: queue, Class: class, JID: jid, Flow: bid, Callback: f})
				}
				if !o.Batch {
					rn.events.emit(Event{Kind: WorkflowReleased, Queue: queue, Class: class, JID: jid, Flow: wf,
						Count: o.Released, Canceled: o.Canceled, Callback: o.Callback})
				}
			}
		}
	}
	return flows.AckFlow(job.bid, job.wf, job.wfJob, job.JID, rn.now(), done)
}
