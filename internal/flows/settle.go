package flows

import "github.com/exqgo/exq/internal/store"

// Items are the outcomes to record for a run of job jid (of batch bid and of workflow wf as
// job name; "" where none) that ended with out (store.RunSucceeded, RunFailed or RunDied):
// none for a job of neither, and none for a workflow's failure, which is not an end.
func Items(bid, wf, name, jid, out string) []store.SettleItem {
	var items []store.SettleItem
	if bid != "" {
		items = append(items, store.SettleItem{Batch: bid, Runs: [][2]string{{jid, out}}})
	}
	if wf != "" && out != store.RunFailed {
		items = append(items, store.SettleItem{Workflow: wf, WorkflowJob: name, Out: out})
	}
	return items
}

// Outcome is what one recorded outcome did, for events: the callbacks a batch's outcome
// fired, or the dependents a workflow job's end released and canceled.
type Outcome struct {
	Batch              bool
	Fired              []string
	Released, Canceled int
	Finished           bool
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
		out = append(out, Outcome{Released: st.Released, Canceled: st.Canceled, Finished: st.Finished})
	}
	return out
}
