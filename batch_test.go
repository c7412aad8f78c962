package exq

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// runCounter counts runs by jid.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

func newRunCounter() *runCounter { return &runCounter{runs: map[string]int{}} }

func (c *runCounter) inc(jid string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[jid]++
	return c.runs[jid]
}

func (c *runCounter) get(jid string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[jid]
}

func (c *runCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.runs {
		n += v
	}
	return n
}

// flowOptions are a node's options for the batch and workflow tests: queue "q" and "cb",
// retries at once.
func flowOptions() Options {
	return Options{Queues: []Queue{{Name: "q", Concurrency: 10}, {Name: "cb", Concurrency: 5}},
		Backoff: func(int, *Job) time.Duration { return 0 }}
}

func batchSpecs(n int, class string) []JobSpec {
	specs := make([]JobSpec, n)
	for i := range specs {
		specs[i] = JobSpec{Queue: "q", Class: class, Args: []any{i}}
	}
	return specs
}

func callbackSpecs() BatchOptions {
	return BatchOptions{Description: "test",
		OnSuccess:  &JobSpec{Queue: "cb", Class: "Callback", Args: []any{"success"}},
		OnComplete: &JobSpec{Queue: "cb", Class: "Callback", Args: []any{"complete"}},
		OnDeath:    &JobSpec{Queue: "cb", Class: "Callback", Args: []any{"death"}}}
}

// callbackRecorder registers a Callback worker that counts runs by jid and checks, at each
// run, that its batch's condition holds.
func callbackRecorder(t *testing.T, e *Exq, runs *runCounter) {
	api := e.API()
	require.NoError(t, e.Register("Callback", WorkerFunc(func(ctx context.Context, job *Job) error {
		var event string
		if err := job.Bind(&event); err != nil {
			return err
		}
		st, err := api.Batch(ctx, job.CallbackOf())
		if err != nil {
			return err
		}
		switch event {
		case "success":
			assert.Zero(t, st.Pending, "success runs only when every job succeeded")
		case "complete":
			assert.False(t, st.CompletedAt.IsZero())
		case "death":
			assert.NotZero(t, st.Dead)
		}
		runs.inc(job.JID)
		return nil
	})))
}

func TestBatchFiresSuccessAndCompleteOnceWhenEveryJobSucceeds(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(flowOptions())
	cbs := newRunCounter()
	callbackRecorder(t, e, cbs)
	runs := newRunCounter()
	require.NoError(t, e.Register("Work", WorkerFunc(func(ctx context.Context, job *Job) error {
		runs.inc(job.JID)
		return nil
	})))
	ctx := context.Background()
	bid, jids, err := e.NewBatch(ctx, callbackSpecs(), batchSpecs(50, "Work"))
	require.NoError(t, err)
	require.Len(t, jids, 50)
	testutil.WaitFor(t, "both callbacks ran", func() bool { return cbs.total() >= 2 })
	st, err := e.API().Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, 50, st.Total)
	assert.Zero(t, st.Pending)
	assert.Zero(t, st.Failed)
	assert.Zero(t, st.Dead)
	assert.False(t, st.SucceededAt.IsZero())
	assert.False(t, st.CompletedAt.IsZero())
	assert.True(t, st.DiedAt.IsZero())
	for _, jid := range jids {
		assert.Equal(t, 1, runs.get(jid), jid)
	}
	assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
	assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
	assert.Zero(t, cbs.get(st.Callbacks["death"]))
	ttl := v.rdb.TTL(ctx, v.keys.Batch(bid)).Val()
	assert.True(t, ttl > 0 && ttl <= DefaultBatchTTL, "a succeeded batch's data lives TTL: %s", ttl)
}

func TestBatchWithFailingAndDyingJobsFiresDeathAndCompleteOnceAndNeverSuccess(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(flowOptions())
	cbs := newRunCounter()
	callbackRecorder(t, e, cbs)
	runs := newRunCounter()
	// Jobs 0-9 fail once then succeed; jobs 10-12 die at their first failure.
	require.NoError(t, e.Register("Work", WorkerFunc(func(ctx context.Context, job *Job) error {
		var i int
		if err := job.Bind(&i); err != nil {
			return err
		}
		n := runs.inc(job.JID)
		switch {
		case i >= 10 && i < 13:
			return errors.New("dies")
		case i < 10 && n == 1:
			return errors.New("fails once")
		}
		return nil
	})))
	specs := batchSpecs(40, "Work")
	for i := 10; i < 13; i++ {
		specs[i].Options = []EnqueueOption{MaxRetries(0)}
	}
	ctx := context.Background()
	bid, jids, err := e.NewBatch(ctx, callbackSpecs(), specs)
	require.NoError(t, err)
	testutil.WaitFor(t, "every job ran to its end", func() bool {
		st, err := e.API().Batch(ctx, bid)
		return err == nil && st.Pending == 3 && cbs.total() >= 2
	})
	st, err := e.API().Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, 3, st.Dead)
	assert.Equal(t, 3, st.Failed, "the dead jobs have failed and not succeeded")
	assert.True(t, st.SucceededAt.IsZero())
	assert.Equal(t, 1, cbs.get(st.Callbacks["death"]))
	assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
	assert.Zero(t, cbs.get(st.Callbacks["success"]))
	for i, jid := range jids {
		want := 1
		if i < 10 {
			want = 2
		}
		assert.Equal(t, want, runs.get(jid), "job %d", i)
	}
}

func TestBatchOutcomeSentAgainChangesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	bid, jids, err := c.NewBatch(ctx, callbackSpecs(), batchSpecs(3, "Work"))
	require.NoError(t, err)
	jq := c.enq.jq
	now := time.Now()
	type step struct {
		jid, out string
		changed  bool
		fired    []string
	}
	for i, s := range []step{
		{jids[0], store.RunFailed, true, nil},
		{jids[0], store.RunFailed, false, nil}, // a second failure: it has run already
		{jids[0], store.RunSucceeded, true, nil},
		{jids[0], store.RunSucceeded, false, nil}, // sent again
		{jids[0], store.RunDied, false, nil},      // a late run of a job that succeeded
		{jids[1], store.RunDied, true, []string{"death"}},
		{jids[1], store.RunDied, false, nil},
		{jids[2], store.RunSucceeded, true, []string{"complete"}},
		{jids[2], store.RunSucceeded, false, nil},
		{jids[1], store.RunSucceeded, true, []string{"success"}}, // the dead job, retried by hand
		{jids[1], store.RunSucceeded, false, nil},
	} {
		changed, fired, err := jq.BatchSettle(ctx, bid, s.jid, s.out, now)
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, s.changed, changed, "step %d", i)
		assert.Equal(t, s.fired, fired, "step %d", i)
	}
	assert.Equal(t, int64(3), v.rdb.LLen(ctx, v.keys.Queue("cb")).Val(), "each callback pushed once")
}

func TestAddToBatchFromARunningJobKeepsTheBatchPendingUntilTheChildrenSucceed(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(flowOptions())
	cbs := newRunCounter()
	callbackRecorder(t, e, cbs)
	runs := newRunCounter()
	release := make(chan struct{})
	require.NoError(t, e.Register("Parent", WorkerFunc(func(ctx context.Context, job *Job) error {
		runs.inc(job.JID)
		jids, err := AddToBatch(ctx, batchSpecs(5, "Child"))
		if err != nil {
			return err
		}
		if len(jids) != 5 {
			return fmt.Errorf("added %d", len(jids))
		}
		return nil
	})))
	require.NoError(t, e.Register("Child", WorkerFunc(func(ctx context.Context, job *Job) error {
		<-release
		runs.inc(job.JID)
		return nil
	})))
	ctx := context.Background()
	bid, _, err := e.NewBatch(ctx, callbackSpecs(), batchSpecs(2, "Parent"))
	require.NoError(t, err)
	testutil.WaitFor(t, "the parents added their children", func() bool {
		st, err := e.API().Batch(ctx, bid)
		return err == nil && st.Total == 12 && st.Pending == 10
	})
	st, err := e.API().Batch(ctx, bid)
	require.NoError(t, err)
	assert.True(t, st.SucceededAt.IsZero(), "not before the children ran")
	assert.Zero(t, cbs.total())
	close(release)
	testutil.WaitFor(t, "the callbacks ran", func() bool { return cbs.total() == 2 })
	st, err = e.API().Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, 12, runs.total())
	assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
}

func TestAddToBatchOutsideABatchJobIsRefused(t *testing.T) {
	t.Parallel()
	_, err := AddToBatch(context.Background(), batchSpecs(1, "X"))
	assert.ErrorIs(t, err, ErrNotInBatch)
}

func TestNewBatchRefusesBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	unique := batchSpecs(1, "X")
	unique[0].Options = []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour})}
	for _, tc := range []struct {
		name  string
		o     BatchOptions
		specs []JobSpec
		want  error
		text  string
	}{
		{"no jobs", BatchOptions{}, nil, ErrInvalidBatch, "no jobs"},
		{"a scheduled job", BatchOptions{}, []JobSpec{{Queue: "q", Class: "X", In: time.Hour}}, ErrInvalidBatch, "scheduled"},
		{"a unique job", BatchOptions{}, unique, ErrInvalidBatch, "unique"},
		{"a bad job", BatchOptions{}, []JobSpec{{Queue: "q"}}, ErrInvalidJob, "class is empty"},
		{"a bad callback", BatchOptions{OnSuccess: &JobSpec{Queue: "bad::q", Class: "X"}}, batchSpecs(1, "X"), ErrInvalidJob, "exq: new batch: OnSuccess callback: queue"},
		{"a callback with no class", BatchOptions{OnComplete: &JobSpec{}}, batchSpecs(1, "X"), ErrInvalidJob, "exq: new batch: OnComplete callback: class is empty"},
		{"a scheduled callback", BatchOptions{OnDeath: &JobSpec{Class: "X", In: time.Hour}}, batchSpecs(1, "X"), ErrInvalidBatch, "exq: new batch: OnDeath callback: the job is scheduled"},
		{"a bad id", BatchOptions{ID: "a:b"}, batchSpecs(1, "X"), ErrInvalidBatch, "ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.NewBatch(ctx, tc.o, tc.specs)
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.text)
			if tc.o.OnSuccess != nil || tc.o.OnComplete != nil || tc.o.OnDeath != nil {
				assert.NotContains(t, err.Error(), "job 0", "a callback is named by its field, not as a job of the batch")
			}
			keys, err := v.rdb.Keys(ctx, v.ns+":*").Result()
			require.NoError(t, err)
			assert.Empty(t, keys, "Redis unchanged")
		})
	}
	_, _, err = c.NewBatch(ctx, BatchOptions{ID: "b1"}, batchSpecs(1, "X"))
	require.NoError(t, err)
	_, _, err = c.NewBatch(ctx, BatchOptions{ID: "b1"}, batchSpecs(1, "X"))
	assert.ErrorIs(t, err, ErrBatchExists)
	assert.Equal(t, int64(1), v.rdb.LLen(ctx, v.keys.Queue("q")).Val())
}

func TestNestedBatchesCarryTheChildsCallbacksUpToEveryAncestorOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	jq := c.enq.jq
	now := time.Now()
	p, pj, err := c.NewBatch(ctx, callbackSpecs(), batchSpecs(1, "W"))
	require.NoError(t, err)
	ch, cj, err := c.NewBatch(ctx, BatchOptions{Parent: p}, batchSpecs(1, "W"))
	require.NoError(t, err)
	o := callbackSpecs()
	o.Parent = ch
	g, gj, err := c.NewBatch(ctx, o, batchSpecs(2, "W"))
	require.NoError(t, err)
	st, err := (&API{jq: jq}).Batch(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Total, "the child counts as one member of its parent")

	fired := func(bid string) []string {
		st, err := (&API{jq: jq}).Batch(ctx, bid)
		require.NoError(t, err)
		var out []string
		for ev, at := range map[string]time.Time{"complete": st.CompletedAt, "success": st.SucceededAt, "death": st.DiedAt} {
			if !at.IsZero() {
				out = append(out, ev)
			}
		}
		sort.Strings(out)
		return out
	}
	for i, s := range []struct {
		bid, jid, out string
		p, ch, g      []string // what has fired in the parent, the child, the grandchild after the step
	}{
		{p, pj[0], store.RunSucceeded, nil, nil, nil},
		{g, gj[0], store.RunDied, []string{"death"}, []string{"death"}, []string{"death"}}, // a death climbs at once
		{g, gj[0], store.RunDied, []string{"death"}, []string{"death"}, []string{"death"}}, // sent again: nothing
		{ch, cj[0], store.RunSucceeded, []string{"death"}, []string{"death"}, []string{"death"}},
		{g, gj[1], store.RunSucceeded, []string{"complete", "death"}, []string{"complete", "death"}, []string{"complete", "death"}},
		{g, gj[0], store.RunSucceeded, []string{"complete", "death", "success"}, []string{"complete", "death", "success"}, []string{"complete", "death", "success"}}, // retried by hand
		{g, gj[0], store.RunSucceeded, []string{"complete", "death", "success"}, []string{"complete", "death", "success"}, []string{"complete", "death", "success"}},
	} {
		_, _, err := jq.BatchSettle(ctx, s.bid, s.jid, s.out, now)
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, s.p, fired(p), "parent after step %d", i)
		assert.Equal(t, s.ch, fired(ch), "child after step %d", i)
		assert.Equal(t, s.g, fired(g), "grandchild after step %d", i)
	}
	// The parent's and the grandchild's three callbacks, each once (the child has none).
	assert.Equal(t, int64(6), v.rdb.LLen(ctx, v.keys.Queue("cb")).Val())
}

func TestNewBatchWithAParentThatIsGoneOrDoneIsRefused(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	_, _, err = c.NewBatch(ctx, BatchOptions{Parent: "nope"}, batchSpecs(1, "W"))
	assert.ErrorIs(t, err, ErrBatchNotFound)
	p, pj, err := c.NewBatch(ctx, BatchOptions{}, batchSpecs(1, "W"))
	require.NoError(t, err)
	_, _, err = c.enq.jq.BatchSettle(ctx, p, pj[0], store.RunSucceeded, time.Now())
	require.NoError(t, err)
	_, _, err = c.NewBatch(ctx, BatchOptions{Parent: p}, batchSpecs(1, "W"))
	assert.ErrorIs(t, err, ErrBatchNotFound, "the parent has succeeded")
}

func TestChildBatchCreatedByAParentJobHoldsTheParentsSuccess(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(flowOptions())
	cbs := newRunCounter()
	callbackRecorder(t, e, cbs)
	release := make(chan struct{})
	children := make(chan string, 1)
	require.NoError(t, e.Register("Spawner", WorkerFunc(func(ctx context.Context, job *Job) error {
		child, _, err := e.NewBatch(ctx, BatchOptions{Parent: job.BatchID()}, batchSpecs(3, "Slow"))
		if err == nil {
			children <- child
		}
		return err
	})))
	require.NoError(t, e.Register("Slow", WorkerFunc(func(ctx context.Context, job *Job) error {
		<-release
		return nil
	})))
	ctx := context.Background()
	bid, _, err := e.NewBatch(ctx, callbackSpecs(), batchSpecs(1, "Spawner"))
	require.NoError(t, err)
	child := <-children
	testutil.WaitFor(t, "the spawner's success is recorded", func() bool {
		st, err := e.API().Batch(ctx, bid)
		return err == nil && st.Pending == 1
	})
	st, err := e.API().Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Total, "the spawner and the child batch")
	assert.True(t, st.SucceededAt.IsZero(), "not before the child's jobs")
	close(release)
	testutil.WaitFor(t, "the parent's callbacks ran", func() bool { return cbs.total() == 2 })
	st, err = e.API().Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, 1, cbs.get(st.Callbacks["success"]))
	assert.Equal(t, 1, cbs.get(st.Callbacks["complete"]))
	cst, err := e.API().Batch(ctx, child)
	require.NoError(t, err)
	assert.False(t, cst.SucceededAt.IsZero())
}

func TestBatchCallbacksAndWorkflowReleasesAreReportedAsEventsOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var mu sync.Mutex
	var got []string
	o := flowOptions()
	o.Listeners = []Listener{func(ev Event) {
		if ev.Kind == BatchCallback || ev.Kind == WorkflowReleased {
			mu.Lock()
			got = append(got, fmt.Sprintf("%s %s %d %s", ev.Kind, ev.Callback, ev.Count, ev.Flow))
			mu.Unlock()
		}
	}}
	e := v.start(o)
	require.NoError(t, e.Register("W", WorkerFunc(func(context.Context, *Job) error { return nil })))
	require.NoError(t, e.Register("Callback", WorkerFunc(func(context.Context, *Job) error { return nil })))
	ctx := context.Background()
	bid, _, err := e.NewBatch(ctx, callbackSpecs(), batchSpecs(20, "W"))
	require.NoError(t, err)
	w, err := e.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "a", Queue: "q", Class: "W"},
		{Name: "b", Queue: "q", Class: "W", DependsOn: []string{"a"}}})
	require.NoError(t, err)
	want := []string{"batch_callback complete 0 " + bid, "batch_callback success 0 " + bid,
		"workflow_released  1 " + w.ID, "workflow_released finished 0 " + w.ID}
	testutil.WaitFor(t, "the events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, want, got)
}

func TestEnqueueHooksOfABatchAndAWorkflowHearTheWritesResult(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var mu sync.Mutex
	heard := map[string]string{} // class → jid heard ("" for not written)
	hook := func(ctx context.Context, j *OutgoingJob) func(string, error) {
		return func(jid string, err error) {
			mu.Lock()
			heard[j.Class] = jid
			mu.Unlock()
		}
	}
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns, EnqueueHooks: []EnqueueHook{hook}})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	o := BatchOptions{ID: "b1", OnSuccess: &JobSpec{Queue: "cb", Class: "Cb"}}
	_, jids, err := c.NewBatch(ctx, o, []JobSpec{{Queue: "q", Class: "A"}})
	require.NoError(t, err)
	assert.Equal(t, jids[0], heard["A"])
	assert.NotEmpty(t, heard["Cb"], "a callback is written with its batch")
	_, _, err = c.NewBatch(ctx, o, []JobSpec{{Queue: "q", Class: "B"}})
	require.ErrorIs(t, err, ErrBatchExists)
	assert.Equal(t, "", heard["B"], "not written")
	w, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "x", Queue: "q", Class: "X"}})
	require.NoError(t, err)
	assert.Equal(t, w.JIDs["x"], heard["X"])
}
