package store

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/store/scripts"
)

// SettleItem is the outcomes of runs of jobs of batch bid (runs: jid and outcome), or one
// outcome (out) of job wfJob of workflow wf. Outcomes are RunSucceeded, RunFailed or RunDied.
type SettleItem struct {
	Batch                 string
	Runs                  [][2]string
	Workflow, WorkflowJob string
	Out                   string
}

// call is the item's script, keys and arguments.
func (jq *Store) settleCall(it SettleItem, now time.Time) (kind string, keys []string, args []any) {
	if it.Batch != "" {
		keys, args = jq.batchSettleCall(it.Batch, it.Runs, now)
		return "b", keys, args
	}
	keys, args = jq.workflowSettleCall(it.Workflow, it.WorkflowJob, it.Out, now)
	return "w", keys, args
}

// cacheKey names the item's batch or workflow in the queue cache (flowQueues).
func (it SettleItem) cacheKey() string {
	if it.Batch != "" {
		return "b:" + it.Batch
	}
	return "w:" + it.Workflow
}

// stale reports whether a reply is the {-1, queues[, parents]} of a script given a stale
// route, and caches the stored one if so.
func (jq *Store) stale(it SettleItem, res []any) bool {
	if n, _ := res[0].(int64); n != -1 || len(res) < 2 {
		return false
	}
	var r flowRoute
	r.queues, _ = res[1].(string)
	if len(res) > 2 {
		r.parents, _ = res[2].(string)
	}
	jq.flows.put(it.cacheKey(), r)
	return true
}

// settleOne records one outcome with its own script and returns the script's reply.
func (jq *Store) settleOne(ctx context.Context, it SettleItem, now time.Time) ([]any, error) {
	s := scripts.BatchSettle
	if it.Batch == "" {
		s = scripts.WorkflowSettle
	}
	for attempt := 0; attempt < 3; attempt++ {
		_, keys, args := jq.settleCall(it, now)
		cmd, replErr := jq.evalScript(ctx, s, keys, args...)
		jq.wait.shortfall("batch or workflow outcome", replErr)
		res, err := cmd.Slice()
		if err != nil {
			return nil, err
		}
		if len(res) == 0 {
			return nil, fmt.Errorf("batch or workflow outcome: empty reply")
		}
		if !jq.stale(it, res) {
			return res, nil
		}
	}
	return nil, fmt.Errorf("batch or workflow outcome: the queues of %s keep changing", it.cacheKey())
}

// settleMany records several outcomes in one call (scripts.SettleGroup), each as its own
// script would; an item whose script was given stale queues is recorded again by itself. It
// returns one reply and one error per item (the outcomes of one batch share a reply, given to
// the first of them only), or an error for the whole call.
func (jq *Store) settleMany(ctx context.Context, all []SettleItem, now time.Time) ([][]any, []error, error) {
	// The outcomes of one batch go in one item: its script then reads and writes the batch's
	// keys once for all of them.
	items := make([]SettleItem, 0, len(all))
	at := make([]int, len(all)) // all[i] is in items[at[i]]
	byBatch := map[string]int{}
	for i, it := range all {
		if it.Batch == "" {
			at[i] = len(items)
			items = append(items, it)
			continue
		}
		k, ok := byBatch[it.Batch]
		if !ok {
			k = len(items)
			byBatch[it.Batch] = k
			items = append(items, SettleItem{Batch: it.Batch})
		}
		items[k].Runs = append(items[k].Runs, it.Runs...)
		at[i] = k
	}
	var keys []string
	args := []any{len(items)}
	for _, it := range items {
		kind, k, a := jq.settleCall(it, now)
		keys = append(keys, k...)
		args = append(args, kind, len(k), len(a))
		args = append(args, a...)
	}
	cmd, replErr := jq.evalScript(ctx, scripts.SettleGroup, keys, args...)
	jq.wait.shortfall("batch or workflow outcomes", replErr)
	res, err := cmd.Slice()
	if err != nil {
		return nil, nil, err
	}
	if len(res) != len(items) {
		return nil, nil, fmt.Errorf("batch or workflow outcomes: %d replies for %d outcomes", len(res), len(items))
	}
	itemReplies := make([][]any, len(items))
	itemErrs := make([]error, len(items))
	for i, it := range items {
		r, _ := res[i].([]any)
		switch {
		case len(r) == 0:
			itemErrs[i] = fmt.Errorf("batch or workflow outcome: unexpected reply %v", res[i])
		case jq.stale(it, r):
			itemReplies[i], itemErrs[i] = jq.settleOne(ctx, it, now)
		default:
			itemReplies[i] = r
		}
	}
	replies := make([][]any, len(all))
	errs := make([]error, len(all))
	given := make([]bool, len(items))
	for i := range all {
		errs[i] = itemErrs[at[i]]
		if !given[at[i]] {
			given[at[i]] = true
			replies[i] = itemReplies[at[i]]
		}
	}
	return replies, errs, nil
}
