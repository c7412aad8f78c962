package store

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// ackItem is one transition of an ack_settle.lua call: the successes of one batch (its runs),
// or the successes of jobs of one workflow (its names, recorded by workflow_succeed, as
// workflow_settle.lua records them one after the other), with the requests that gave them.
type ackItem struct {
	SettleItem
	names   []string  // a workflow's jobs, in order
	members [][2]int  // the request and position in its Flow.Items of each run or name
	now     time.Time // of the first request
}

// ackSettle is AckMany for a batch of requests some of which carry the transitions of their
// batches or workflows (AckReq.Flow): one call of ack_settle.lua records every transition (the
// successes of one batch as one item, as settleMany does; those of one workflow as one item)
// and takes every job off its backup list, a job's transition and its LREM in one atomic step.
// A job whose item was given a stale route (the first outcome of a batch or workflow on this
// node, whose route it has not read) stays in its backup list in that call, its transition
// unwritten; the call is sent again for such jobs with the route the reply carried, up to
// three times. failed tells which requests did not happen.
func (jq *Store) ackSettle(ctx context.Context, batch []AckReq) (failed []bool, err error) {
	return jq.ackSettleAttempt(ctx, batch, 1)
}

// ackSettleAttempt is ackSettle's attempt number attempt.
func (jq *Store) ackSettleAttempt(ctx context.Context, batch []AckReq, attempt int) (failed []bool, err error) {
	// refs[i] are request i's item numbers (1-based, 0 for none).
	var items []*ackItem
	byFlow := map[string]int{}
	refs := make([][2]int, len(batch))
	for i, r := range batch {
		if r.Flow == nil {
			continue
		}
		if len(r.Flow.Items) > 2 {
			return nil, fmt.Errorf("ack: a job with %d batch or workflow transitions", len(r.Flow.Items))
		}
		r.Flow.Replies = make([][]any, len(r.Flow.Items))
		for n, it := range r.Flow.Items {
			key := it.cacheKey()
			k, ok := byFlow[key]
			if !ok {
				k = len(items)
				byFlow[key] = k
				a := &ackItem{now: r.Flow.Now}
				if it.Batch != "" {
					a.Batch = it.Batch
				} else {
					a.Workflow = it.Workflow
				}
				items = append(items, a)
			}
			a := items[k]
			a.Runs = append(a.Runs, it.Runs...)
			if it.Batch == "" {
				a.names = append(a.names, it.WorkflowJob)
			}
			a.members = append(a.members, [2]int{i, n})
			refs[i][n] = k + 1
		}
	}
	keys := make([]string, 2, 2+6*len(items)+2)
	keys[0], keys[1] = jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs()
	args := make([]any, 2, 2+10*len(items)+4*len(batch))
	args[0], args[1] = jq.node, len(items)
	for _, it := range items {
		kind, ik, ia := "m", []string(nil), []any(nil)
		if it.Batch != "" {
			kind, ik, ia = jq.settleCall(it.SettleItem, it.now)
		} else {
			ik, ia = jq.workflowSucceedCall(it.Workflow, it.names, it.now)
		}
		keys = append(keys, ik...)
		args = append(args, kind, len(ik), len(ia))
		args = append(args, ia...)
	}
	// The groups, as AckMany builds them, with 'f' for the jobs with a transition; a key is
	// named by its index in KEYS (1-based).
	var lastQueue, lastEpoch string
	lastKind, count, members := byte(0), 0, 0
	closeGroup := func() {
		if count > 0 {
			args[count] = members
		}
	}
	for i, r := range batch {
		kind, member := byte('a'), r.Raw
		switch {
		case r.Lease != "":
			kind, member = 'l', r.Lease
		case refs[i][0] != 0:
			kind = 'f'
		}
		newKey := kind != lastKind || r.Queue != lastQueue
		if newKey || r.Epoch != lastEpoch {
			if newKey {
				if kind == 'l' {
					keys = append(keys, jq.keys.Leases(r.Queue))
				} else {
					keys = append(keys, jq.keys.Backup(jq.node, r.Queue))
				}
			}
			closeGroup()
			args = append(args, string(kind), len(keys), r.Epoch, 0)
			count, members = len(args)-1, 0
			lastKind, lastQueue, lastEpoch = kind, r.Queue, r.Epoch
		}
		if kind == 'f' {
			args = append(args, refs[i][0], refs[i][1])
		}
		args = append(args, member)
		members++
	}
	closeGroup()
	fail := func(err error) ([]bool, error) {
		failed = make([]bool, len(batch))
		for i := range failed {
			failed[i] = true
		}
		return failed, err
	}
	cmd, replErr := jq.evalScript(ctx, scripts.AckSettle, keys, args...)
	jq.wait.shortfall("ack", replErr)
	res, err := cmd.Slice()
	if err != nil {
		return fail(err)
	}
	if len(res) != 1+len(items) {
		return fail(fmt.Errorf("ack: %d replies for %d batch or workflow transitions", len(res)-1, len(items)))
	}
	stale := make([]bool, len(items))
	for k, it := range items {
		r, _ := res[1+k].([]any)
		if len(r) == 0 {
			return fail(fmt.Errorf("ack: unexpected reply %v to a batch or workflow transition", res[1+k]))
		}
		if jq.stale(it.SettleItem, r) {
			stale[k] = true
			continue
		}
		if it.Batch != "" {
			// One reply for the batch's successes: its first job's.
			m := it.members[0]
			batch[m[0]].Flow.Replies[m[1]] = r
			continue
		}
		if len(r) != 4*len(it.names) {
			return fail(fmt.Errorf("ack: %d values for the successes of %d jobs of workflow %s", len(r), len(it.names), it.Workflow))
		}
		for j, m := range it.members {
			batch[m[0]].Flow.Replies[m[1]] = r[4*j : 4*j+4 : 4*j+4]
		}
	}
	// The jobs left in their backup lists for a stale route (nothing of their items written):
	// the call sent again for them with the route just read, a transition and its LREM still
	// one step.
	var again []AckReq
	var at []int
	for i, r := range batch {
		if n := refs[i]; (n[0] != 0 && stale[n[0]-1]) || (n[1] != 0 && stale[n[1]-1]) {
			again = append(again, r)
			at = append(at, i)
		}
	}
	if len(again) == 0 {
		return nil, nil
	}
	// A request's item recorded in this call keeps its reply: sent again, it changes nothing.
	kept := make([][][]any, len(again))
	for j, r := range again {
		kept[j] = r.Flow.Replies
	}
	var f []bool
	if attempt < 3 {
		f, err = jq.ackSettleAttempt(ctx, again, attempt+1)
	} else {
		err = fmt.Errorf("ack: the queues of a batch or workflow keep changing")
	}
	for j, r := range again {
		for n, reply := range kept[j] {
			if reply != nil {
				r.Flow.Replies[n] = reply
			}
		}
	}
	if err == nil {
		return nil, nil
	}
	failed = make([]bool, len(batch))
	for j, i := range at {
		failed[i] = f == nil || f[j]
	}
	return failed, err
}

// workflowSucceedCall is the keys and arguments of ack_settle.lua's workflow_succeed for the
// successes of jobs names of workflow id: workflow_settle.lua's keys.
func (jq *Store) workflowSucceedCall(id string, names []string, now time.Time) (keys []string, args []any) {
	queues := jq.flows.get("w:" + id).queues
	qnames := splitQueues(queues)
	keys = make([]string, 0, 4+len(qnames))
	keys = append(keys, jq.keys.Workflow(id), jq.keys.WorkflowGraph(id), jq.keys.WorkflowJobs(id), jq.keys.Queues())
	args = make([]any, 0, 4+len(names)+len(qnames))
	args = append(args, wire.FormatTime(now), jq.keys.Wake(), queues, len(names))
	for _, n := range names {
		args = append(args, n)
	}
	for _, q := range qnames {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	return keys, args
}
