package exq

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// The typed args of the batch and workflow tests: no test below writes a class string for
// them.
type (
	thumbnail struct {
		N int `json:"n"`
	}
	albumDone struct {
		Album string `json:"album"`
	}
	addStep struct {
		A, B int
	}
	sumStep struct{}
	noClass struct{}
)

func (thumbnail) Class() string { return "App.Thumbnail" }
func (albumDone) Class() string { return "App.AlbumDone" }
func (albumDone) Queue() string { return "cb" }
func (addStep) Class() string   { return "App.Add" }
func (sumStep) Class() string   { return "App.Sum" }
func (noClass) Class() string   { return "" }

// TestTypedSpecsWriteWhatEnqueueArgsWrites: a JobSpec or WorkflowJob whose Args is a JobArgs
// value is a job of its class with the value as its one arg, on the queue its Queue method
// names or "default": in EnqueueAll, a batch, a batch's callback and a workflow.
func TestTypedSpecsWriteWhatEnqueueArgsWrites(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := flowClient(t, v)
	ctx := context.Background()
	oneDoc := func(list string) map[string]any {
		t.Helper()
		docs := v.rdb.LRange(ctx, v.keys.Queue(list), 0, -1).Val()
		require.Len(t, docs, 1, list)
		return decode(t, docs[0])
	}
	// EnqueueAll
	_, err := c.EnqueueAll(ctx, []JobSpec{{Args: thumbnail{N: 1}}, {Args: mailArgs{To: "a@b"}}})
	require.NoError(t, err)
	d := oneDoc(DefaultQueue)
	assert.Equal(t, "App.Thumbnail", d["class"])
	assert.Equal(t, []any{map[string]any{"n": json.Number("1")}}, d["args"])
	assert.Equal(t, "MyApp.Mail", oneDoc("mail")["class"], "the Queue method names the queue")
	require.NoError(t, v.rdb.Del(ctx, v.keys.Queue(DefaultQueue), v.keys.Queue("mail")).Err())

	// A batch and its callback.
	bid, _, err := c.NewBatch(ctx, BatchOptions{OnSuccess: &JobSpec{Args: albumDone{Album: "a"}}}, []JobSpec{{Args: thumbnail{N: 2}}})
	require.NoError(t, err)
	d = oneDoc(DefaultQueue)
	assert.Equal(t, "App.Thumbnail", d["class"])
	assert.Equal(t, bid, d["bid"])
	h := v.rdb.HGetAll(ctx, v.keys.Batch(bid)).Val()
	assert.Equal(t, "cb", h["cbq:success"])
	cb := decode(t, h["cb:success"])
	assert.Equal(t, "App.AlbumDone", cb["class"])
	assert.Equal(t, []any{map[string]any{"album": "a"}}, cb["args"])
	require.NoError(t, v.rdb.Del(ctx, v.keys.Queue(DefaultQueue)).Err())

	// A workflow: the root is pushed, the other waits with its document.
	w, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{
		{Name: "add", Args: addStep{A: 1, B: 2}}, {Name: "sum", Args: sumStep{}, DependsOn: []string{"add"}}})
	require.NoError(t, err)
	d = oneDoc(DefaultQueue)
	assert.Equal(t, "App.Add", d["class"])
	assert.Equal(t, []any{map[string]any{"A": json.Number("1"), "B": json.Number("2")}}, d["args"])
	waiting := decode(t, v.rdb.HGet(ctx, v.keys.WorkflowJobs(w.ID), "sum").Val())
	assert.Equal(t, "App.Sum", waiting["class"])
	assert.Equal(t, DefaultQueue, waiting["queue"])
}

// TestATypedWorkflowAndBatchRunWithoutAClassString: the first day, typed all the way down:
// workers registered with WorkerFor and WorkerForResult, a workflow whose last step reads its
// parents' results, a batch whose typed callback runs once its typed jobs succeeded.
func TestATypedWorkflowAndBatchRunWithoutAClassString(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	done := make(chan string, 1)
	e := v.start(Options{Queues: []Queue{{Name: DefaultQueue, Concurrency: 5}, {Name: "cb"}},
		Register: []Registration{
			WorkerForResult(func(_ context.Context, _ *Job, a addStep) (int, error) { return a.A + a.B, nil }),
			WorkerForResult(func(ctx context.Context, _ *Job, _ sumStep) (int, error) {
				var x, y int
				if err := ParentResult(ctx, "x", &x); err != nil {
					return 0, err
				}
				if err := ParentResult(ctx, "y", &y); err != nil {
					return 0, err
				}
				return x + y, nil
			}),
			WorkerFor(func(context.Context, *Job, thumbnail) error { return nil }),
			WorkerFor(func(_ context.Context, job *Job, a albumDone) error {
				done <- a.Album + " " + job.CallbackOf()
				return nil
			}),
		}})
	ctx := context.Background()
	w, err := e.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{
		{Name: "x", Args: addStep{A: 1, B: 2}},
		{Name: "y", Args: addStep{A: 30, B: 4}},
		{Name: "sum", Args: sumStep{}, DependsOn: []string{"x", "y"}},
	})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, testutil.WaitTimeout)
	defer cancel()
	var sum int
	require.NoError(t, e.WaitResult(wctx, w.JIDs["sum"], &sum))
	assert.Equal(t, 37, sum)

	bid, _, err := e.NewBatch(ctx, BatchOptions{OnSuccess: &JobSpec{Args: albumDone{Album: "summer"}}},
		[]JobSpec{{Args: thumbnail{N: 1}}, {Args: thumbnail{N: 2}}})
	require.NoError(t, err)
	select {
	case got := <-done:
		assert.Equal(t, "summer "+bid, got)
	case <-wctx.Done():
		t.Fatal("the typed callback did not run")
	}
}

// TestATypedSpecThatCannotNameItsClassIsRefusedNamingTheJob: an Args whose class disagrees
// with Class, is empty, or cannot be read (a Class method on a nil pointer) is refused in
// every path that takes a spec, naming the job, and nothing is written.
func TestATypedSpecThatCannotNameItsClassIsRefusedNamingTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, bad := range []struct {
		name string
		spec JobSpec
		text string
	}{
		{"another Class", JobSpec{Class: "Other", Args: thumbnail{}}, `class "Other", but the args are a exq.thumbnail, whose Class() is "App.Thumbnail": leave Class empty`},
		{"an empty Class()", JobSpec{Args: noClass{}}, "the args are a exq.noClass, whose Class() is empty"},
		{"a Class() that panics", JobSpec{Args: (*ptrArgs)(nil)}, "*exq.ptrArgs.Class() panicked"},
	} {
		for _, p := range []struct {
			name  string
			write func(c *Client, s JobSpec) error
		}{
			{"EnqueueAll", func(c *Client, s JobSpec) error {
				_, err := c.EnqueueAll(ctx, []JobSpec{{Args: thumbnail{}}, s})
				return err
			}},
			{"NewBatch", func(c *Client, s JobSpec) error {
				_, _, err := c.NewBatch(ctx, BatchOptions{}, []JobSpec{{Args: thumbnail{}}, s})
				return err
			}},
			{"EnqueueWorkflow", func(c *Client, s JobSpec) error {
				_, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "a", Args: thumbnail{}},
					{Name: "b", Class: s.Class, Args: s.Args}})
				return err
			}},
		} {
			t.Run(bad.name+"/"+p.name, func(t *testing.T) {
				t.Parallel()
				v := newEnv(t)
				err := p.write(flowClient(t, v), bad.spec)
				require.ErrorIs(t, err, ErrInvalidJob)
				assert.Contains(t, err.Error(), "job 1: "+bad.text)
				assert.Empty(t, testutil.Snapshot(t, v.rdb, v.ns), "Redis unchanged")
			})
		}
	}
}

// TestAJobOfABatchOrWorkflowOrACallbackGoesToDefaultWithoutAQueue: a spec that names no queue
// goes to "default", as EnqueueArgs and periodic jobs do.
func TestAJobOfABatchOrWorkflowOrACallbackGoesToDefaultWithoutAQueue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := flowClient(t, v)
	ctx := context.Background()
	bid, _, err := c.NewBatch(ctx, BatchOptions{OnComplete: &JobSpec{Class: "Done"}}, []JobSpec{{Class: "Work"}})
	require.NoError(t, err)
	assert.Equal(t, DefaultQueue, v.rdb.HGet(ctx, v.keys.Batch(bid), "cbq:complete").Val())
	w, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "a", Class: "Work"}, {Name: "b", Class: "Work", DependsOn: []string{"a"}}})
	require.NoError(t, err)
	st, err := (&API{jq: c.enq.jq}).Workflow(ctx, w.ID)
	require.NoError(t, err)
	for _, j := range st.Jobs {
		assert.Equal(t, DefaultQueue, j.Queue, j.Name)
	}
	_, err = c.EnqueueAll(ctx, []JobSpec{{Class: "Work", In: time.Hour}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), v.rdb.LLen(ctx, v.keys.Queue(DefaultQueue)).Val(), "the batch's job and the workflow's root")
	sched := v.rdb.ZRange(ctx, v.keys.Schedule(), 0, -1).Val()
	require.Len(t, sched, 1)
	assert.Equal(t, DefaultQueue, decode(t, sched[0])["queue"])
}

// TestWorkerForResultAndAddWorkerResultRegisterUnderTheArgsClass: the result-returning forms
// register as WorkerFor and AddWorker do, and refuse what they refuse.
func TestWorkerForResultAndAddWorkerResultRegisterUnderTheArgsClass(t *testing.T) {
	t.Parallel()
	r := WorkerForResult(func(context.Context, *Job, addStep) (int, error) { return 0, nil })
	require.NoError(t, r.check())
	assert.Equal(t, "App.Add", r.Class)
	var nilFn func(context.Context, *Job, addStep) (int, error)
	assert.ErrorContains(t, WorkerForResult(nilFn).check(), `the func for "App.Add" is nil`)
	assert.ErrorContains(t, WorkerForResult(func(context.Context, *Job, *ptrArgs) (int, error) { return 0, nil }).check(), "panicked")

	v := newEnv(t)
	e := v.start(Options{})
	require.NoError(t, AddWorkerResult(e, func(context.Context, *Job, sumStep) (int, error) { return 7, nil }))
	assert.ErrorIs(t, AddWorkerResult(e, func(context.Context, *Job, sumStep) (int, error) { return 7, nil }), ErrAlreadyRegistered)
	assert.ErrorContains(t, AddWorkerResult(e, nilFn), "func is nil")
	jid, err := EnqueueArgs(context.Background(), e, sumStep{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	var got int
	require.NoError(t, e.WaitResult(ctx, jid, &got))
	assert.Equal(t, 7, got)
}
