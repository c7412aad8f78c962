package exq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func TestShardedBatchesAndWorkflowsLiveOnOneShardAndComplete(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	nss := []string{v.ns + "-a", v.ns + "-b", v.ns + "-c"}
	if testutil.OnCluster() {
		nss = []string{"{" + v.ns + "a}", "{" + v.ns + "b}", "{" + v.ns + "c}"}
	}
	t.Cleanup(func() {
		for _, ns := range nss {
			testutil.DeleteNamespace(v.client, ns)
		}
	})
	cbs := newRunCounter()
	ctx := context.Background()
	s, err := StartSharded(ctx, Options{Redis: v.client, Logger: testLogger(), PollTimeout: 20 * time.Millisecond,
		Queues: []Queue{{Name: "q"}, {Name: "cb"}}, Backoff: func(int, *Job) time.Duration { return 0 }}, ShardOptions{Namespaces: nss})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
	require.NoError(t, s.Register("W", WorkerFunc(func(ctx context.Context, job *Job) error {
		if job.JID == "spawner" {
			_, _, err := s.NewBatch(ctx, BatchOptions{Parent: job.BatchID()}, batchSpecs(3, "W"))
			return err
		}
		return nil
	})))
	require.NoError(t, s.Register("Callback", WorkerFunc(func(ctx context.Context, job *Job) error {
		cbs.inc(job.JID)
		return nil
	})))
	specs := batchSpecs(10, "W")
	specs[0].Options = []EnqueueOption{JID("spawner")}
	bid, _, err := s.NewBatch(ctx, callbackSpecs(), specs)
	require.NoError(t, err)
	chain := Chain(step("a"), step("b"), step("c"))
	for i := range chain {
		chain[i].Class = "W"
	}
	w, err := s.EnqueueWorkflow(ctx, WorkflowOptions{}, chain)
	require.NoError(t, err)
	api := s.API()
	testutil.WaitFor(t, "the batch succeeded and the workflow finished", func() bool {
		st, _, err := api.Batch(ctx, bid)
		wf, _, err2 := api.Workflow(ctx, w.ID)
		return err == nil && err2 == nil && !st.SucceededAt.IsZero() && !wf.FinishedAt.IsZero()
	})
	st, _, err := api.Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, 11, st.Total, "10 jobs and the child batch")
	wf, _, err := api.Workflow(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, 3, wf.Succeeded)
	testutil.WaitFor(t, "the callbacks ran", func() bool { return cbs.total() == 2 })
	assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
	assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
	_, _, err = api.Batch(ctx, "nope")
	assert.ErrorIs(t, err, ErrBatchNotFound)
}
