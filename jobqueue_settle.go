package exq

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/scripts"
)

// settleItem is one outcome of a run of a job of a batch (bid, jid) or of a workflow (wf,
// wfJob): runSucceeded, runFailed or runDied.
type settleItem struct{ bid, jid, wf, wfJob, out string }

// call is the item's script, keys and arguments.
func (jq *jobQueue) settleCall(it settleItem, now time.Time) (kind string, keys []string, args []any) {
	if it.bid != "" {
		keys, args = jq.batchSettleCall(it.bid, it.jid, it.out, now)
		return "b", keys, args
	}
	keys, args = jq.workflowSettleCall(it.wf, it.wfJob, it.out, now)
	return "w", keys, args
}

// cacheKey names the item's batch or workflow in the queue cache (flowQueues).
func (it settleItem) cacheKey() string {
	if it.bid != "" {
		return "b:" + it.bid
	}
	return "w:" + it.wf
}

// stale reports whether a reply is the {-1, queues} of a script given the wrong queues, and
// caches the stored ones if so.
func (jq *jobQueue) stale(it settleItem, res []any) bool {
	if n, _ := res[0].(int64); n != -1 || len(res) != 2 {
		return false
	}
	stored, _ := res[1].(string)
	jq.flows.put(it.cacheKey(), stored)
	return true
}

// settleOne records one outcome with its own script and returns the script's reply.
func (jq *jobQueue) settleOne(ctx context.Context, it settleItem, now time.Time) ([]any, error) {
	s := scripts.BatchSettle
	if it.bid == "" {
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
// returns one error per item, or an error for the whole call.
func (jq *jobQueue) settleMany(ctx context.Context, items []settleItem, now time.Time) ([]error, error) {
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
		return nil, err
	}
	if len(res) != len(items) {
		return nil, fmt.Errorf("batch or workflow outcomes: %d replies for %d outcomes", len(res), len(items))
	}
	errs := make([]error, len(items))
	for i, it := range items {
		r, _ := res[i].([]any)
		switch {
		case len(r) == 0:
			errs[i] = fmt.Errorf("batch or workflow outcome: unexpected reply %v", res[i])
		case jq.stale(it, r):
			_, errs[i] = jq.settleOne(ctx, it, now)
		}
	}
	return errs, nil
}
