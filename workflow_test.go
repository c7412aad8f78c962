package exq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// flowWorker registers "Step" on e: it counts runs by workflow job name, checks in Redis that
// every parent has succeeded (or ended, for a job that runs anyway) before it runs, stores its
// name as its result, and fails or dies as its args say ("die").
func flowWorker(t *testing.T, e *Exq, runs *runCounter) {
	api := e.API()
	require.NoError(t, e.Register("Step", WorkerFunc(func(ctx context.Context, job *Job) error {
		var mode string
		if err := job.Bind(&mode); err != nil {
			return err
		}
		id, name := job.WorkflowID()
		st, err := api.Workflow(ctx, id)
		if err != nil {
			return err
		}
		states := map[string]string{}
		for _, j := range st.Jobs {
			states[j.Name] = j.State
		}
		for _, j := range st.Jobs {
			if j.Name != name {
				continue
			}
			for _, p := range j.DependsOn {
				if j.RunOnParentDeath {
					assert.Contains(t, []string{"succeeded", "dead", "canceled"}, states[p], "%s runs after %s ended", name, p)
				} else {
					assert.Equal(t, "succeeded", states[p], "%s runs only after %s succeeded", name, p)
				}
			}
		}
		runs.inc(name)
		if mode == "die" {
			return errors.New("dies")
		}
		return SetResult(ctx, name)
	})))
}

func step(name string, deps ...string) WorkflowJob {
	return WorkflowJob{Name: name, Queue: "q", Class: "Step", Args: []any{""}, DependsOn: deps}
}

func waitWorkflow(t *testing.T, e *Exq, id string) WorkflowStatus {
	t.Helper()
	var st WorkflowStatus
	testutil.WaitFor(t, "the workflow finished", func() bool {
		var err error
		st, err = e.API().Workflow(context.Background(), id)
		return err == nil && !st.FinishedAt.IsZero()
	})
	return st
}

func TestWorkflowShapesRunEveryJobOnceAfterItsParents(t *testing.T) {
	t.Parallel()
	wide := []WorkflowJob{step("root")}
	var mids []string
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("mid%03d", i)
		mids = append(mids, name)
		wide = append(wide, step(name, "root"))
	}
	wide = append(wide, step("sink", mids...))
	chain := make([]WorkflowJob, 50)
	for i := range chain {
		chain[i] = step(fmt.Sprintf("s%02d", i))
	}
	for _, tc := range []struct {
		name string
		jobs []WorkflowJob
	}{
		{"a diamond", []WorkflowJob{step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")}},
		{"a 100-wide fan-out and fan-in", wide},
		{"a 50-step chain", Chain(chain...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			e := v.start(flowOptions())
			runs := newRunCounter()
			flowWorker(t, e, runs)
			w, err := e.EnqueueWorkflow(context.Background(), WorkflowOptions{Description: tc.name}, tc.jobs)
			require.NoError(t, err)
			st := waitWorkflow(t, e, w.ID)
			assert.Equal(t, len(tc.jobs), st.Succeeded)
			assert.Zero(t, st.Dead+st.Canceled)
			for _, j := range tc.jobs {
				assert.Equal(t, 1, runs.get(j.Name), "%s ran once", j.Name)
			}
			assert.Equal(t, len(tc.jobs), runs.total())
		})
	}
}

func TestWorkflowDeadParentCancelsOrRunsDependentsPerPolicy(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(flowOptions())
	runs := newRunCounter()
	flowWorker(t, e, runs)
	a := step("a")
	a.Args = []any{"die"}
	a.Options = []EnqueueOption{MaxRetries(0)}
	anyway := step("anyway", "a")
	anyway.OnParentDeath = RunOnParentDeath
	afterCanceled := step("after-canceled", "canceled")
	afterCanceled.OnParentDeath = RunOnParentDeath
	jobs := []WorkflowJob{a, step("canceled", "a"), step("grandchild", "canceled"), anyway, afterCanceled, step("b"), step("c", "b", "anyway")}
	w, err := e.EnqueueWorkflow(context.Background(), WorkflowOptions{}, jobs)
	require.NoError(t, err)
	st := waitWorkflow(t, e, w.ID)
	assert.Equal(t, 1, st.Dead)
	assert.Equal(t, 2, st.Canceled)
	assert.Equal(t, 4, st.Succeeded)
	want := map[string]struct{ state, reason string }{
		"a": {"dead", ""}, "canceled": {"canceled", "a dead"}, "grandchild": {"canceled", "canceled canceled"},
		"anyway": {"succeeded", ""}, "after-canceled": {"succeeded", ""}, "b": {"succeeded", ""}, "c": {"succeeded", ""},
	}
	for _, j := range st.Jobs {
		assert.Equal(t, want[j.Name].state, j.State, j.Name)
		assert.Equal(t, want[j.Name].reason, j.Reason, j.Name)
		n := 1
		if want[j.Name].state == "canceled" {
			n = 0
		}
		assert.Equal(t, n, runs.get(j.Name), j.Name)
	}
}

func TestWorkflowOutcomeSentAgainReleasesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	w, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{step("a"), step("b"), step("c", "a", "b")})
	require.NoError(t, err)
	jq := c.enq.jq
	type call struct {
		name, out string
		want      store.Settled
	}
	for i, s := range []call{
		{"a", store.RunSucceeded, store.Settled{Changed: true}},
		{"a", store.RunSucceeded, store.Settled{}}, // a lost reply: sent again
		{"a", store.RunDied, store.Settled{}},      // a late second run
		{"b", store.RunSucceeded, store.Settled{Changed: true, Released: 1}},
		{"b", store.RunSucceeded, store.Settled{}},
		{"c", store.RunSucceeded, store.Settled{Changed: true, Finished: true}},
		{"c", store.RunSucceeded, store.Settled{}},
	} {
		got, err := jq.WorkflowSettle(ctx, w.ID, s.name, s.out, c.enq.now())
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, s.want, got, "call %d", i)
	}
	// a and b at creation, c once.
	assert.Equal(t, int64(3), v.rdb.LLen(ctx, v.keys.Queue("q")).Val())
}

func TestEnqueueWorkflowRefusesBadGraphsNamingTheJobAndWritesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		jobs []WorkflowJob
		text string
	}{
		{"no jobs", nil, "no jobs"},
		{"an unknown name", []WorkflowJob{step("a"), step("b", "nope")}, `job "b" depends on "nope"`},
		{"a name used twice", []WorkflowJob{step("a"), step("a")}, `"a" is used twice`},
		{"a job on itself", []WorkflowJob{step("a", "a")}, `"a" depends on itself`},
		{"a cycle", []WorkflowJob{step("root"), step("x", "root", "z"), step("y", "x"), step("z", "y")}, `cycle: "x" → "y" → "z" → "x"`},
		{"an empty name", []WorkflowJob{step("")}, "name is empty"},
		{"a newline in a name", []WorkflowJob{step("a\nb")}, "control character"},
		{"a bad job", []WorkflowJob{step("a"), {Name: "b", Queue: "q"}}, `class is empty (workflow job "b")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, tc.jobs)
			require.Error(t, err)
			if !errors.Is(err, ErrInvalidJob) {
				assert.ErrorIs(t, err, ErrInvalidWorkflow)
			}
			assert.Contains(t, err.Error(), tc.text)
			keys, err := v.rdb.Keys(ctx, v.ns+":*").Result()
			require.NoError(t, err)
			assert.Empty(t, keys, "Redis unchanged")
		})
	}
}

func TestWorkflowLastJobReadsItsParentsResults(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(flowOptions())
	runs := newRunCounter()
	flowWorker(t, e, runs)
	got := make(chan string, 1)
	require.NoError(t, e.Register("Join", WorkerFunc(func(ctx context.Context, job *Job) error {
		var parts []string
		for _, p := range []string{"b", "c"} {
			var r string
			if err := ParentResult(ctx, p, &r); err != nil {
				return err
			}
			parts = append(parts, r)
		}
		err := ParentResult(ctx, "a", new(string))
		got <- strings.Join(parts, "+") + " / " + fmt.Sprint(err != nil)
		return nil
	})))
	w, err := e.EnqueueWorkflow(context.Background(), WorkflowOptions{}, []WorkflowJob{
		step("a"), step("b", "a"), step("c", "a"), {Name: "d", Queue: "q", Class: "Join", DependsOn: []string{"b", "c"}}})
	require.NoError(t, err)
	assert.Equal(t, "b+c / true", <-got, "d reads b's and c's results; a is not its parent")
	waitWorkflow(t, e, w.ID)
}
