package exq

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// Replies of workflow_create.lua besides batchOK, batchReplay and batchExists.

// workflowCreate writes workflow id, by the call with token: its hash fields (meta), its graph
// fields, the documents of the jobs that wait (name, document), and the jobs pushed now.
func (jq *jobQueue) workflowCreate(ctx context.Context, id, token string, now time.Time, live time.Duration, meta, graph, waiting [][2]string, roots []flowJob) (string, error) {
	queues, no := flowQueueNumbers(roots)
	keys := make([]string, 0, 5+len(queues))
	keys = append(keys, jq.keys.Workflow(id), jq.keys.WorkflowGraph(id), jq.keys.WorkflowJobs(id), jq.keys.Workflows(), jq.keys.Queues())
	args := make([]any, 0, 10+len(queues)+2*(len(meta)+len(graph)+len(waiting)+len(roots)))
	args = append(args, id, token, wire.FormatTime(now), max(int64(live/time.Second), 1), jq.keys.Wake(),
		len(queues), len(meta), len(graph), len(waiting), len(roots))
	for _, q := range queues {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	for _, set := range [][][2]string{meta, graph, waiting} {
		for _, f := range set {
			args = append(args, f[0], f[1])
		}
	}
	for _, j := range roots {
		args = append(args, no[j.queue], j.doc)
	}
	cmd, replErr := jq.evalScript(ctx, scripts.WorkflowCreate, keys, args...)
	status, err := cmd.Text()
	if err != nil {
		return "", err
	}
	return status, replErr
}

// settled is what workflow_settle.lua did.
type settled struct {
	changed, finished  bool
	released, canceled int
}

// workflowSettle records that job name of workflow id ended for good (runSucceeded or
// runDied) and releases or cancels its dependents.
func (jq *jobQueue) workflowSettle(ctx context.Context, id, name, out string, now time.Time) (settled, error) {
	res, err := jq.settleOne(ctx, settleItem{wf: id, wfJob: name, out: out}, now)
	if err != nil {
		return settled{}, err
	}
	return workflowSettled(res)
}

// workflowSettleCall is workflow_settle.lua's keys and arguments for one outcome.
func (jq *jobQueue) workflowSettleCall(id, name, out string, now time.Time) (keys []string, args []any) {
	state := "succeeded"
	if out == runDied {
		state = "dead"
	}
	queues := jq.flows.get("w:" + id).queues
	names := splitQueues(queues)
	keys = make([]string, 0, 4+len(names))
	keys = append(keys, jq.keys.Workflow(id), jq.keys.WorkflowGraph(id), jq.keys.WorkflowJobs(id), jq.keys.Queues())
	args = make([]any, 0, 5+len(names))
	args = append(args, name, state, wire.FormatTime(now), jq.keys.Wake(), queues)
	for _, q := range names {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	return keys, args
}

// workflowSettled reads workflow_settle.lua's reply (not the {-1, queues} one).
func workflowSettled(res []any) (settled, error) {
	if len(res) != 4 {
		return settled{}, fmt.Errorf("workflow outcome: unexpected reply %v", res)
	}
	n := make([]int64, 4)
	for i := range res {
		n[i], _ = res[i].(int64)
	}
	return settled{changed: n[0] == 1, released: int(n[1]), canceled: int(n[2]), finished: n[3] == 1}, nil
}

// workflowRead reads workflow id's hash and graph; an empty hash means there is no such
// workflow.
func (jq *jobQueue) workflowRead(ctx context.Context, id string) (meta, graph map[string]string, err error) {
	p := jq.rdb.Pipeline()
	m := p.HGetAll(ctx, jq.keys.Workflow(id))
	g := p.HGetAll(ctx, jq.keys.WorkflowGraph(id))
	if _, err := p.Exec(ctx); err != nil {
		return nil, nil, err
	}
	return m.Val(), g.Val(), nil
}

// workflowIDs lists up to count workflow ids, newest first, from offset.
func (jq *jobQueue) workflowIDs(ctx context.Context, offset, count int64) ([]string, error) {
	return jq.rdb.ZRevRange(ctx, jq.keys.Workflows(), offset, offset+count-1).Result()
}

// workflowMeta reads workflow id's hash only; empty when there is no such workflow.
func (jq *jobQueue) workflowMeta(ctx context.Context, id string) (map[string]string, error) {
	return jq.rdb.HGetAll(ctx, jq.keys.Workflow(id)).Result()
}

// forgetWorkflows removes ids whose data has expired from the listing.
func (jq *jobQueue) forgetWorkflows(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	m := make([]any, len(ids))
	for i, id := range ids {
		m[i] = id
	}
	return jq.rdb.ZRem(ctx, jq.keys.Workflows(), m...).Err()
}
