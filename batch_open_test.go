package exq

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// batchStatus reads bid's status or fails the test.
func (v *env) batchStatus(a *API, bid string) BatchStatus {
	v.t.Helper()
	st, err := a.Batch(context.Background(), bid)
	require.NoError(v.t, err)
	return st
}

func TestOpenBatchFiresItsCallbacksAtCloseWhenEveryJobAlreadySucceeded(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var mu sync.Mutex
	var events []string
	o := flowOptions()
	o.Listeners = []Listener{func(ev Event) {
		if ev.Kind == BatchCallback {
			mu.Lock()
			events = append(events, ev.Callback+" "+ev.Flow)
			mu.Unlock()
		}
	}}
	e := v.start(o)
	cbs := newRunCounter()
	callbackRecorder(t, e, cbs)
	runs := newRunCounter()
	require.NoError(t, e.Register("Work", WorkerFunc(func(ctx context.Context, job *Job) error {
		if runs.inc(job.JID) == 1 && string(job.Args) == "[0]" {
			// A job of an open batch adds to it, as in any batch.
			_, err := AddToBatch(ctx, []JobSpec{{Queue: "q", Class: "Work", Args: []any{-1}}})
			return err
		}
		return nil
	})))
	ctx := context.Background()
	b, err := e.OpenBatch(ctx, callbackSpecs())
	require.NoError(t, err)
	var jids []string
	for part := range 3 {
		specs := batchSpecs(20, "Work")
		for i := range specs {
			specs[i].Args = []any{part*20 + i}
		}
		got, err := b.Add(ctx, specs)
		require.NoError(t, err)
		jids = append(jids, got...)
	}
	require.Len(t, jids, 60)
	testutil.WaitFor(t, "every job of the open batch succeeded", func() bool {
		st, err := e.API().Batch(ctx, b.ID())
		return err == nil && st.Total == 61 && st.Pending == 0
	})
	st := v.batchStatus(e.API(), b.ID())
	assert.True(t, st.Open)
	assert.Zero(t, st.Failed)
	assert.True(t, st.SucceededAt.IsZero() && st.CompletedAt.IsZero(), "no callback fires while the batch is open")
	assert.Zero(t, v.rdb.LLen(ctx, v.keys.Queue("cb")).Val()+int64(cbs.total()))
	pending, err := e.API().BatchJobs(ctx, b.ID(), "pending", 10)
	require.NoError(t, err)
	assert.Empty(t, pending, "the open marker is no job")

	require.NoError(t, b.Close(ctx))
	st = v.batchStatus(e.API(), b.ID())
	assert.False(t, st.Open)
	assert.False(t, st.SucceededAt.IsZero() || st.CompletedAt.IsZero(), "both fired at the close")
	testutil.WaitFor(t, "both callbacks ran", func() bool { return cbs.total() >= 2 })
	require.NoError(t, b.Close(ctx), "a second close changes nothing")
	_, err = b.Add(ctx, batchSpecs(1, "Work"))
	require.ErrorIs(t, err, ErrBatchClosed)
	_, err = flowClient(t, v).OpenBatch(ctx, BatchOptions{ID: b.ID()})
	require.ErrorIs(t, err, ErrBatchExists)

	require.NoError(t, e.Stop(ctx)) // every callback that was pushed has run
	assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
	assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
	assert.Equal(t, 2, cbs.total())
	assert.Zero(t, v.rdb.LLen(ctx, v.keys.Queue("cb")).Val())
	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, []string{"success " + b.ID(), "complete " + b.ID()}, events)
}

// flowClient is a client on v's namespace, closed when the test ends.
func flowClient(t *testing.T, v *env) *Client {
	cl, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func TestOpenBatchClosedBeforeItsJobsRunFiresAtItsLastJob(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	b, err := flowClient(t, v).OpenBatch(ctx, callbackSpecs())
	require.NoError(t, err)
	jids, err := b.Add(ctx, batchSpecs(5, "Work"))
	require.NoError(t, err)
	require.NoError(t, b.Close(ctx))
	st := v.batchStatus((&API{jq: flowClient(t, v).enq.jq}), b.ID())
	assert.False(t, st.Open)
	assert.Equal(t, 5, st.Pending)
	assert.True(t, st.SucceededAt.IsZero())

	e := v.start(flowOptions())
	cbs := newRunCounter()
	callbackRecorder(t, e, cbs)
	require.NoError(t, e.Register("Work", WorkerFunc(func(context.Context, *Job) error { return nil })))
	testutil.WaitFor(t, "both callbacks ran", func() bool { return cbs.total() >= 2 })
	require.NoError(t, e.Stop(ctx))
	st = v.batchStatus(&API{jq: flowClient(t, v).enq.jq}, b.ID())
	assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
	assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
	assert.Len(t, jids, 5)
}

func TestOpenBatchAddSentAgainWithTheSameJIDsAddsEachJobOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	b, err := flowClient(t, v).OpenBatch(ctx, BatchOptions{})
	require.NoError(t, err)
	specs := batchSpecs(10, "Work")
	for i := range specs {
		specs[i].Options = []EnqueueOption{JID(fmt.Sprintf("job-%d", i))}
	}
	for range 2 { // the second as after a lost reply
		_, err := b.Add(ctx, specs)
		require.NoError(t, err)
	}
	st := v.batchStatus((&API{jq: flowClient(t, v).enq.jq}), b.ID())
	assert.Equal(t, 10, st.Total)
	assert.Equal(t, 10, st.Pending)
	assert.Equal(t, 10, st.Failed+st.Pending-st.Failed)
	assert.Zero(t, st.Failed, "none has run")
	assert.Equal(t, int64(10), v.rdb.LLen(ctx, v.keys.Queue("q")).Val())

	bad := batchSpecs(1, "Work")
	bad[0].Options = []EnqueueOption{JID(store.OpenMember)}
	_, err = b.Add(ctx, bad)
	require.ErrorIs(t, err, ErrInvalidBatch)
	_, err = flowClient(t, v).OpenBatch(ctx, BatchOptions{ID: "a:b"})
	require.ErrorIs(t, err, ErrInvalidBatch)
	require.ErrorIs(t, (&BatchWriter{en: flowClient(t, v).enq, id: "nope"}).Close(ctx), ErrBatchNotFound)
}

func TestOpenChildBatchHoldsItsParentUntilClosedAndItsJobsSucceed(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	cl := flowClient(t, v)
	jq := cl.enq.jq
	now := time.Now()
	p, pj, err := cl.NewBatch(ctx, callbackSpecs(), batchSpecs(1, "W"))
	require.NoError(t, err)
	o := callbackSpecs()
	o.Parent = p
	child, err := cl.OpenBatch(ctx, o)
	require.NoError(t, err)
	cj, err := child.Add(ctx, batchSpecs(1, "W"))
	require.NoError(t, err)
	settle := func(bid, jid string) {
		_, _, err := jq.BatchSettle(ctx, bid, jid, store.RunSucceeded, now)
		require.NoError(t, err)
	}
	settle(p, pj[0])
	settle(child.ID(), cj[0])
	api := (&API{jq: cl.enq.jq})
	assert.True(t, v.batchStatus(api, p).SucceededAt.IsZero(), "the open child holds its parent")
	require.NoError(t, child.Close(ctx))
	assert.False(t, v.batchStatus(api, child.ID()).SucceededAt.IsZero())
	assert.False(t, v.batchStatus(api, p).SucceededAt.IsZero(), "the child's close carried its success up")
	// The parent's and the child's success and complete callbacks, each once.
	assert.Equal(t, int64(4), v.rdb.LLen(ctx, v.keys.Queue("cb")).Val())
}

// TestALargeOpenBatchIsFilledWithBoundedClientMemory adds a batch's jobs in parts of 1 000
// from a client (100 000 with -long) and checks that the client's heap does not grow with the
// batch, and that the callbacks run once each, after the close.
func TestALargeOpenBatchIsFilledWithBoundedClientMemory(t *testing.T) {
	// Serial: reads the process's heap (runtime.ReadMemStats), which parallel tests grow.
	size, part := 5000, 1000
	if testutil.Long() {
		size = 100000
	}
	v := newEnv(t)
	ctx := context.Background()
	cl := flowClient(t, v)
	b, err := cl.OpenBatch(ctx, callbackSpecs())
	require.NoError(t, err)
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var base, peak uint64
	began := time.Now()
	for i := 0; i < size; i += part {
		specs := make([]JobSpec, part)
		for j := range specs {
			specs[j] = JobSpec{Queue: "q", Class: "W", Args: []any{i + j, "some payload to make the document longer"}}
		}
		_, err := b.Add(ctx, specs)
		require.NoError(t, err)
		if n := i / part; n == 1 {
			base = heap()
		} else if n > 1 && n%10 == 0 {
			peak = max(peak, heap())
		}
	}
	added := time.Since(began)
	peak = max(peak, heap())
	// Holding every job would take 100 000 × (document, jid, spec) ≈ 30 MiB; parts take what
	// one part does.
	assert.Less(t, int64(peak)-int64(base), int64(8<<20), "the client's heap grows with the batch")
	st := v.batchStatus((&API{jq: cl.enq.jq}), b.ID())
	assert.Equal(t, size, st.Total)
	assert.True(t, st.Open)

	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 50}, {Name: "cb", Concurrency: 2}}})
	cbs := newRunCounter()
	callbackRecorder(t, e, cbs)
	require.NoError(t, e.Register("W", WorkerFunc(func(context.Context, *Job) error { return nil })))
	testutil.WaitFor(t, "every job ran", func() bool {
		st, err := e.API().Batch(ctx, b.ID())
		return err == nil && st.Pending == 0
	})
	assert.Zero(t, cbs.total(), "no callback before the close")
	require.NoError(t, b.Close(ctx))
	testutil.WaitFor(t, "both callbacks ran", func() bool { return cbs.total() >= 2 })
	require.NoError(t, e.Stop(ctx))
	st = v.batchStatus(&API{jq: flowClient(t, v).enq.jq}, b.ID())
	assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
	assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
	t.Logf("open batch of %d jobs added in parts of %d in %s; client heap %d KiB after the first part, %d KiB at most after",
		size, part, added.Round(time.Millisecond), base>>10, peak>>10)
}
