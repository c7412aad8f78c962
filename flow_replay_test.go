package exq

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
)

// The replies of batch and workflow transitions are cut at the proxy (Redis ran the script;
// the node sees a broken connection, and go-redis or the node's persist loop sends it again):
// every job runs once, each callback is enqueued once, each dependent is pushed once.
func TestBatchAndWorkflowTransitionsWithRepliesCutRunEverythingOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		retries int // the node's client's MaxRetries: go-redis sends the script again, or not
	}{
		{"the client sends the script again", 3},
		{"the node's persist loop sends it again", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCutter(t)
			opts := *c.rdb.Options()
			opts.Addr, opts.MaxRetries = c.proxy.Addr(), tc.retries
			cl := redis.NewClient(&opts)
			t.Cleanup(func() { _ = cl.Close() })
			o := flowOptions()
			o.Redis = cl
			e := c.start(o)
			cbs := newRunCounter()
			callbackRecorder(t, e, cbs)
			runs := newRunCounter()
			require.NoError(t, e.Register("W", WorkerFunc(func(ctx context.Context, job *Job) error {
				runs.inc(job.JID)
				return nil
			})))
			ctx := context.Background()
			for _, s := range []*redis.Script{scripts.BatchSettle, scripts.WorkflowSettle, scripts.SettleGroup, scripts.AckSettle} {
				require.NoError(t, s.Load(ctx, c.rdb).Err())
			}
			cut := c.proxy.CutReplyTo(6, scripts.BatchSettle.Hash(), scripts.WorkflowSettle.Hash(), scripts.SettleGroup.Hash(),
				scripts.AckSettle.Hash())

			bid, jids, err := e.NewBatch(ctx, callbackSpecs(), batchSpecs(30, "W"))
			require.NoError(t, err)
			w, err := e.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{
				{Name: "a", Queue: "q", Class: "W"}, {Name: "b", Queue: "q", Class: "W", DependsOn: []string{"a"}},
				{Name: "c", Queue: "q", Class: "W", DependsOn: []string{"a"}}, {Name: "d", Queue: "q", Class: "W", DependsOn: []string{"b", "c"}}})
			require.NoError(t, err)
			waitCut(t, cut)
			testutil.WaitFor(t, "the batch's callbacks ran and the workflow finished", func() bool {
				st, err := e.API().Workflow(ctx, w.ID)
				return err == nil && !st.FinishedAt.IsZero() && cbs.total() >= 2
			})
			st, err := e.API().Batch(ctx, bid)
			require.NoError(t, err)
			assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
			assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
			for _, jid := range append(jids, w.JIDs["a"], w.JIDs["b"], w.JIDs["c"], w.JIDs["d"]) {
				assert.Equal(t, 1, runs.get(jid), "job %s ran once", jid)
			}
			wst, err := e.API().Workflow(ctx, w.ID)
			require.NoError(t, err)
			assert.Equal(t, 4, wst.Succeeded)
		})
	}
}
