package exq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// settle records the end of a run of a job of a batch or a workflow (runSucceeded, runFailed
// or runDied) in Redis, before the caller writes the run's ordinary outcome (the
// acknowledgement, the retry or the death), retrying while Redis fails as persist does. It
// reports whether the transition is stored; when it is not (the node is stopping and Redis
// still fails), the caller writes no outcome either and the job stays in the backup list.
//
// Why this order, and why it is exactly once:
//   - Each transition is one Lua script, idempotent by jid (batch_settle.lua: the jid's entry
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
	if job.bid == "" && (job.wf == "" || out == runFailed) {
		return true
	}
	items := settleItems(job, out)
	var replies [][]any
	ok := e.persist(r, "batch or workflow outcome", func(context.Context) error {
		replies = replies[:0]
		for _, it := range items {
			reply, err := e.jq.settles.settle(e.jq, it, e.opts.now, e.opts.RedisTimeout)
			if err != nil && !errors.Is(err, ErrNotReplicated) { // a shortfall is logged
				return err
			}
			replies = append(replies, reply)
		}
		return nil
	})
	if ok && e.events.has() {
		e.flowEvents(job, items, replies)
	}
	return ok
}

// flowEvents reports what the transitions of job's run did (the replies of its settle
// scripts, one per item; nil where another caller of the same group reports the batch's).
func (e *Exq) flowEvents(job *Job, items []settleItem, replies [][]any) {
	for i, reply := range replies {
		if len(reply) == 0 {
			continue
		}
		if items[i].bid != "" {
			_, fired, _ := batchSettled(reply)
			for _, f := range fired {
				e.events.emit(Event{Kind: BatchCallback, Queue: job.Queue, Class: job.Class, JID: job.JID, Flow: job.bid, Callback: f})
			}
			continue
		}
		st, err := workflowSettled(reply)
		if err != nil || !st.changed || (st.released == 0 && st.canceled == 0 && !st.finished) {
			continue
		}
		ev := Event{Kind: WorkflowReleased, Queue: job.Queue, Class: job.Class, JID: job.JID, Flow: job.wf,
			Count: st.released, Canceled: st.canceled}
		if st.finished {
			ev.Callback = "finished"
		}
		e.events.emit(ev)
	}
}

// settleItems are the outcomes to record for a run of job that ended with out.
func settleItems(job *Job, out string) []settleItem {
	var items []settleItem
	if job.bid != "" {
		items = append(items, settleItem{bid: job.bid, runs: [][2]string{{job.JID, out}}})
	}
	if job.wf != "" && out != runFailed {
		items = append(items, settleItem{wf: job.wf, wfJob: job.wfJob, out: out})
	}
	return items
}

// settleGroup makes the concurrent outcomes of a node's batch and workflow jobs share round
// trips, as group commit does for enqueues (groupcommit.go), with no goroutine of its own: a
// caller that finds no write in flight records its outcome alone at once with its own script;
// one that finds a write in flight queues and waits; when a write returns, its writer hands the
// queued outcomes (up to maxSettleGroup) to the first of their callers, which records them all
// in one call (scripts.SettleGroup) and answers each. Every item stays idempotent, so a group
// whose reply is lost fails every caller, and each caller's persist loop sends its own again.
type settleGroup struct {
	mu     sync.Mutex
	busy   bool
	queued []*settleCall
}

// maxSettleGroup bounds the outcomes of one call.
const maxSettleGroup = 256

type settleCall struct {
	item  settleItem
	ready chan struct{} // closed when err is in, or when this call must write group
	group []*settleCall
	reply []any // the script's reply for this item; nil for all but the first of a batch's
	err   error
}

// settle records one outcome, alone or in a group, each write bounded by timeout, and returns
// its script's reply (nil when another outcome of the same batch in the group has it).
func (g *settleGroup) settle(jq *jobQueue, it settleItem, now func() time.Time, timeout time.Duration) ([]any, error) {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		defer g.handOn()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return jq.settleOne(ctx, it, now())
	}
	c := &settleCall{item: it, ready: make(chan struct{})}
	g.queued = append(g.queued, c)
	g.mu.Unlock()
	<-c.ready
	if c.group != nil {
		defer g.handOn()
		g.write(jq, c.group, now(), timeout)
	}
	return c.reply, c.err
}

// handOn ends a write: the queued calls go to the first of them to write, or no write is in
// flight any more.
func (g *settleGroup) handOn() {
	g.mu.Lock()
	n := min(len(g.queued), maxSettleGroup)
	group := g.queued[:n:n]
	g.queued = append([]*settleCall(nil), g.queued[n:]...)
	if n == 0 {
		g.busy = false
	} else {
		group[0].group = group
	}
	g.mu.Unlock()
	if n > 0 {
		close(group[0].ready)
	}
}

// write records group's outcomes in one call and answers every call but the first, whose
// outcome its caller (the writer) returns.
func (g *settleGroup) write(jq *jobQueue, group []*settleCall, now time.Time, timeout time.Duration) {
	answered := false
	defer func() {
		if !answered { // a panic in the write: no caller may wait for ever
			for _, c := range group {
				c.err = fmt.Errorf("the group of %d batch or workflow outcomes panicked", len(group))
			}
			for _, c := range group[1:] {
				close(c.ready)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if len(group) == 1 {
		group[0].reply, group[0].err = jq.settleOne(ctx, group[0].item, now)
	} else {
		items := make([]settleItem, len(group))
		for i, c := range group {
			items[i] = c.item
		}
		replies, errs, err := jq.settleMany(ctx, items, now)
		for i, c := range group {
			if err != nil {
				c.err = err
			} else {
				c.reply, c.err = replies[i], errs[i]
			}
		}
	}
	answered = true
	for _, c := range group[1:] {
		close(c.ready)
	}
}
