package flows

import (
	"errors"
	"time"

	"github.com/exqgo/exq/internal/store"
)

// Items are the outcomes to record for a run of job jid (of batch bid and of workflow wf as
// job name; "" where none) that ended with out (store.RunSucceeded, RunFailed or RunDied):
// none for a job of neither, none for a workflow's failure, which is not an end, and none in
// a batch for a reserved jid (ReservedJID). The node records them (Store.Settle) before it
// writes the run's ordinary outcome (the acknowledgement, the retry or the death).
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
//   - A reply lost on the way back makes the node's persist loop send the script again: a no-op.
//   - A run that ends after another run of the same job (a kill, a rescue, the job running
//     twice) changes nothing the first one recorded: a job that succeeded is no longer
//     pending, so its later failure or death counts nowhere; a workflow job that ended stays
//     ended, so its dependents are released once.
func Items(bid, wf, name, jid, out string) []store.SettleItem {
	var items []store.SettleItem
	// A jid the batch layout keeps for its own members (no exq path writes such a job into a
	// batch; another producer might) is not recorded: its success would stand for theirs.
	if bid != "" && !ReservedJID(jid) {
		items = append(items, store.SettleItem{Batch: bid, Runs: [][2]string{{jid, out}}})
	}
	if wf != "" && out != store.RunFailed {
		items = append(items, store.SettleItem{Workflow: wf, WorkflowJob: name, Out: out})
	}
	return items
}

// Record records items (Store.Settle), each write bounded by timeout, and returns their
// replies for Outcomes. A shortfall of replicas is no error here: the store logs it.
func Record(st Settler, items []store.SettleItem, now func() time.Time, timeout time.Duration) ([][]any, error) {
	replies := make([][]any, 0, len(items))
	for _, it := range items {
		reply, err := st.Settle(it, now, timeout)
		if err != nil && !errors.Is(err, store.ErrNotReplicated) {
			return nil, err
		}
		replies = append(replies, reply)
	}
	return replies, nil
}

// Settler records one outcome in its batch or workflow: *store.Store, or a test's fake.
type Settler interface {
	Settle(item store.SettleItem, now func() time.Time, timeout time.Duration) ([]any, error)
}

// Outcome is what one recorded outcome did, for events: the callbacks a batch's outcome
// fired, or the dependents a workflow job's end released and canceled.
type Outcome struct {
	Batch              bool
	Fired              []string
	Released, Canceled int
	// Callback is "finished" when the job was its workflow's last.
	Callback string
}

// Outcomes reads the replies of items' scripts (nil where another caller of the same group
// reports the batch's) into what they did, leaving out what did nothing.
func Outcomes(items []store.SettleItem, replies [][]any) []Outcome {
	var out []Outcome
	for i, reply := range replies {
		if len(reply) == 0 {
			continue
		}
		if items[i].Batch != "" {
			_, fired, _ := store.BatchSettled(reply)
			if len(fired) > 0 {
				out = append(out, Outcome{Batch: true, Fired: fired})
			}
			continue
		}
		st, err := store.WorkflowSettled(reply)
		if err != nil || !st.Changed || (st.Released == 0 && st.Canceled == 0 && !st.Finished) {
			continue
		}
		o := Outcome{Released: st.Released, Canceled: st.Canceled}
		if st.Finished {
			o.Callback = "finished"
		}
		out = append(out, o)
	}
	return out
}

// AckFlow is the transition of a successful run of job jid (of batch bid and of workflow wf
// as job name; "" where none) that its acknowledgement records in the same atomic call
// (store.AckFlow, scripts.AckSettle), or nil when the job belongs to neither. done, when not
// nil, hears what the transition did once it is in Redis (Outcomes), from the acker.
//
// Why one call is exactly once: the transition and the LREM are one Lua script, so they are
// done together or not at all. A node that dies before the call leaves the job in its backup
// list with its transition unrecorded: it is rescued, runs again, and that run records the
// transition (Items: idempotent by jid and state). A reply lost on the way back makes the
// acker send the call again: the transition changes nothing a second time and the LREM
// removes nothing. A job whose batch or workflow route was stale stays in its backup list
// in that call, its transition unwritten, and the call is sent again for it with the stored
// route. docs/workflows.md, "The transition in the acknowledgement", has the whole argument.
func AckFlow(bid, wf, name, jid string, now time.Time, done func([]Outcome)) *store.AckFlow {
	items := Items(bid, wf, name, jid, store.RunSucceeded)
	if len(items) == 0 {
		return nil
	}
	f := &store.AckFlow{Items: items, Now: now}
	if done != nil {
		f.Done = func(replies [][]any) {
			if o := Outcomes(items, replies); len(o) > 0 {
				done(o)
			}
		}
	}
	return f
}
