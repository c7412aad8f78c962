package store

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// Replies of workflow_create.lua besides BatchOK, BatchReplay and BatchExistsReply.

// WorkflowCreate writes workflow id, by the call with token: its hash fields (meta), its graph
// fields, the documents of the jobs that wait (name, document), and the jobs pushed now.
func (jq *Store) WorkflowCreate(ctx context.Context, id, token string, now time.Time, live time.Duration, meta, graph, waiting [][2]string, roots []FlowJob) (string, error) {
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
		args = append(args, no[j.Queue], j.Doc)
	}
	cmd, replErr := jq.evalScript(ctx, scripts.WorkflowCreate, keys, args...)
	status, err := cmd.Text()
	if err != nil {
		return "", err
	}
	return status, replErr
}

// Settled is what workflow_settle.lua did.
type Settled struct {
	Changed, Finished  bool
	Released, Canceled int
}

// WorkflowSettle records that job name of workflow id ended for good (RunSucceeded or
// RunDied) and releases or cancels its dependents.
func (jq *Store) WorkflowSettle(ctx context.Context, id, name, out string, now time.Time) (Settled, error) {
	res, err := jq.settleOne(ctx, SettleItem{Workflow: id, WorkflowJob: name, Out: out}, now)
	if err != nil {
		return Settled{}, err
	}
	return WorkflowSettled(res)
}

// workflowSettleCall is workflow_settle.lua's keys and arguments for one outcome.
func (jq *Store) workflowSettleCall(id, name, out string, now time.Time) (keys []string, args []any) {
	state := "succeeded"
	if out == RunDied {
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

// WorkflowSettled reads workflow_settle.lua's reply (not the {-1, queues} one).
func WorkflowSettled(res []any) (Settled, error) {
	if len(res) != 4 {
		return Settled{}, fmt.Errorf("workflow outcome: unexpected reply %v", res)
	}
	n := make([]int64, 4)
	for i := range res {
		n[i], _ = res[i].(int64)
	}
	return Settled{Changed: n[0] == 1, Released: int(n[1]), Canceled: int(n[2]), Finished: n[3] == 1}, nil
}

// WorkflowRead reads workflow id's hash and graph; an empty hash means there is no such
// workflow. A key of another type reads as empty, as in BatchRead.
func (jq *Store) WorkflowRead(ctx context.Context, id string) (meta, graph map[string]string, err error) {
	p := jq.rdb.Pipeline()
	m := p.HGetAll(ctx, jq.keys.Workflow(id))
	g := p.HGetAll(ctx, jq.keys.WorkflowGraph(id))
	if sent, err := p.Exec(ctx); err != nil && !onlyWrongType(err, sent) {
		return nil, nil, err
	}
	return m.Val(), g.Val(), nil
}

// WorkflowIDs lists up to count workflow ids, newest first, from offset.
func (jq *Store) WorkflowIDs(ctx context.Context, offset, count int64) ([]string, error) {
	return jq.rdb.ZRevRange(ctx, jq.keys.Workflows(), offset, offset+count-1).Result()
}

// WorkflowMeta reads workflow id's hash only; empty when there is no such workflow, or when
// its key is of another type (a listed id such as "w1:graph" spoils its own row, never the
// listing).
func (jq *Store) WorkflowMeta(ctx context.Context, id string) (map[string]string, error) {
	m, err := jq.rdb.HGetAll(ctx, jq.keys.Workflow(id)).Result()
	if wrongType(err) {
		return map[string]string{}, nil
	}
	return m, err
}
