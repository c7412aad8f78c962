package exq

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// A large batch and a large workflow are created in one call each and complete with each
// callback once; with -long, the sizes of issue 28 (a batch of 100 000 jobs, a workflow of
// 10 000). It logs the Redis memory the data took and the client's heap after creation.
func TestALargeBatchAndWorkflowComplete(t *testing.T) {
	t.Parallel()
	batchSize, wfSize := 5000, 1000
	if testutil.Long() {
		batchSize, wfSize = 100000, 10000
	}
	v := newEnv(t)
	o := flowOptions()
	o.Queues = []Queue{{Name: "q", Concurrency: 50}, {Name: "cb", Concurrency: 2}}
	e := v.start(o)
	var done atomic.Int64
	require.NoError(t, e.Register("W", WorkerFunc(func(context.Context, *Job) error {
		done.Add(1)
		return nil
	})))
	cbs := newRunCounter()
	callbackRecorder(t, e, cbs)
	ctx := context.Background()
	specs := make([]JobSpec, batchSize)
	for i := range specs {
		specs[i] = JobSpec{Queue: "q", Class: "W", Args: []any{i}}
	}
	began := time.Now()
	bid, _, err := e.NewBatch(ctx, callbackSpecs(), specs)
	require.NoError(t, err)
	created := time.Since(began)
	pendingBytes := v.rdb.MemoryUsage(ctx, v.keys.BatchPending(bid)).Val() + v.rdb.MemoryUsage(ctx, v.keys.BatchJobs(bid)).Val()
	jobs := make([]WorkflowJob, wfSize)
	var mids []string
	for i := range jobs {
		jobs[i] = WorkflowJob{Name: fmt.Sprintf("j%05d", i), Queue: "q", Class: "W"}
		switch {
		case i == 0:
		case i == wfSize-1:
			jobs[i].DependsOn = mids
		default:
			jobs[i].DependsOn = []string{"j00000"}
			mids = append(mids, jobs[i].Name)
		}
	}
	w, err := e.EnqueueWorkflow(ctx, WorkflowOptions{}, jobs)
	require.NoError(t, err)
	graphBytes := v.rdb.MemoryUsage(ctx, v.keys.WorkflowGraph(w.ID)).Val() + v.rdb.MemoryUsage(ctx, v.keys.WorkflowJobs(w.ID)).Val()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	testutil.WaitFor(t, "the batch's callbacks ran and the workflow finished", func() bool {
		st, err := e.API().Workflow(ctx, w.ID)
		return err == nil && !st.FinishedAt.IsZero() && cbs.total() >= 2
	})
	st, err := e.API().Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, batchSize, st.Total)
	assert.Zero(t, st.Pending)
	assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
	assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
	assert.Equal(t, int64(batchSize+wfSize), done.Load())
	t.Logf("batch of %d created in %s, its sets %d KiB in Redis; workflow of %d: graph and waiting jobs %d KiB; client heap after creation %d MiB",
		batchSize, created.Round(time.Millisecond), pendingBytes>>10, wfSize, graphBytes>>10, ms.HeapAlloc>>20)
}
