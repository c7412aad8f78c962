package exq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// stepCalls counts the calls of each step's function, by jid and step name.
type stepCalls struct {
	mu sync.Mutex
	n  map[string]int // "<jid> <step>"
}

func (c *stepCalls) add(jid, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[jid+" "+step]++
}

func (c *stepCalls) of(jid, step string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[jid+" "+step]
}

// noBackoff retries a failed job at once.
func noBackoff(int, *Job) time.Duration { return 0 }

// A job that fails after two steps runs again: its retry gets both steps' saved results (the
// values the first run made, not new ones) without calling their functions, and runs the step
// it had not reached.
func TestStepResultsSurviveARetryAndTheirFunctionsRunOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var calls stepCalls
	var mu sync.Mutex
	seen := map[string][]string{} // jid → the charge id each run got
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		charge, err := Step(ctx, "charge", func(context.Context) (string, error) {
			calls.add(job.JID, "charge")
			return uuid.NewString(), nil // a new value each call: a second call would show
		})
		if err != nil {
			return err
		}
		mu.Lock()
		seen[job.JID] = append(seen[job.JID], charge)
		mu.Unlock()
		if _, err := Step(ctx, "email", func(context.Context) (int, error) {
			calls.add(job.JID, "email")
			return 1, nil
		}); err != nil {
			return err
		}
		if job.RetryCount == 0 {
			return errors.New("fails after its steps")
		}
		_, err = Step(ctx, "receipt", func(context.Context) (bool, error) {
			calls.add(job.JID, "receipt")
			return true, nil
		})
		return err
	})
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 4}}, Workers: map[string]Worker{"W": w}, Backoff: noBackoff})
	var jids []string
	for i := 0; i < 5; i++ {
		jid, err := e.Enqueue(ctx, "q", "W", []any{i})
		require.NoError(t, err)
		jids = append(jids, jid)
	}
	testutil.WaitFor(t, "every job ran twice", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, jid := range jids {
			if len(seen[jid]) < 2 {
				return false
			}
		}
		return true
	})
	testutil.WaitFor(t, "every job succeeded", func() bool {
		for _, jid := range jids {
			if calls.of(jid, "receipt") == 0 {
				return false
			}
		}
		return v.zcard(v.keys.Retry()) == 0
	})
	for _, jid := range jids {
		for _, step := range []string{"charge", "email", "receipt"} {
			assert.Equal(t, 1, calls.of(jid, step), "job %s step %s runs once", jid, step)
		}
		mu.Lock()
		assert.Len(t, seen[jid], 2, "job %s", jid)
		assert.Equal(t, seen[jid][0], seen[jid][1], "job %s: the retry gets the first run's value", jid)
		mu.Unlock()
		saved, err := e.API().Steps(ctx, jid, 0)
		require.NoError(t, err)
		require.Equal(t, 3, saved.Total)
		assert.Equal(t, "charge", saved.Steps[0].Name)
		assert.Equal(t, fmt.Sprintf("%q", seen[jid][0]), saved.Steps[0].JSON)
	}
}

// A step whose function fails saves nothing: the next attempt calls it again, and the steps
// after it wait for it.
func TestAFailedStepIsNotSavedAndRunsAgain(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var calls stepCalls
	done := make(chan string, 1)
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		n, err := Step(ctx, "flaky", func(context.Context) (int, error) {
			calls.add(job.JID, "flaky")
			if job.RetryCount < 2 {
				return 0, errors.New("not yet")
			}
			return 7, nil
		})
		if err != nil {
			return err
		}
		done <- fmt.Sprint(n)
		return nil
	})
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 1}}, Workers: map[string]Worker{"W": w}, Backoff: noBackoff})
	jid, err := e.Enqueue(ctx, "q", "W", nil)
	require.NoError(t, err)
	select {
	case got := <-done:
		assert.Equal(t, "7", got)
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the job never succeeded")
	}
	assert.Equal(t, 3, calls.of(jid, "flaky"), "two failed calls saved nothing; the third was saved")
}

// Step's bad input is refused before fn runs, with the sentinel a caller branches on, and
// writes nothing; a result too large is refused and not saved.
func TestStepRefusesBadNamesLargeResultsAndTooManySteps(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	e := v.start(Options{Queues: []Queue{{Name: "unused", Concurrency: 1}}})
	cfg := &stepConfig{store: e.jq, ttl: time.Hour, timeout: time.Second}
	full := "full-" + uuid.NewString()
	for i := 0; i < MaxSteps; i++ {
		require.NoError(t, v.rdb.HSet(ctx, v.keys.Steps(full), fmt.Sprintf("s%d", i), "1").Err())
	}
	for _, tc := range []struct {
		name, jid, step string
		result          any
		want            error
	}{
		{"empty name", "", "", 1, ErrInvalidStep},
		{"name too long", "", strings.Repeat("x", MaxStepName+1), 1, ErrInvalidStep},
		{"control character", "", "a\nb", 1, ErrInvalidStep},
		{"not UTF-8", "", "a\xffb", 1, ErrInvalidStep},
		{"result too large", "", "big", strings.Repeat("x", MaxStepBytes), ErrStepTooLarge},
		{"too many steps", full, "one-more", 1, ErrTooManySteps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jid := tc.jid
			if jid == "" {
				jid = uuid.NewString()
			}
			job := &Job{JID: jid, steps: cfg}
			called := false
			_, err := Step(WithJob(ctx, job), tc.step, func(context.Context) (any, error) {
				called = true
				return tc.result, nil
			})
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, tc.want == ErrStepTooLarge, called, "fn runs only when the name and the count allow")
			if tc.jid == "" {
				assert.Zero(t, v.rdb.Exists(ctx, v.keys.Steps(jid)).Val(), "nothing saved")
			} else {
				assert.EqualValues(t, MaxSteps, v.rdb.HLen(ctx, v.keys.Steps(jid)).Val(), "nothing saved")
			}
		})
	}
	t.Run("outside a job", func(t *testing.T) {
		_, err := Step(ctx, "a", func(context.Context) (int, error) { return 1, nil })
		require.ErrorIs(t, err, ErrInvalidStep)
	})
	t.Run("a job outside a node runs fn each time", func(t *testing.T) {
		n := 0
		jctx := WithJob(ctx, &Job{JID: "j"})
		for i := 0; i < 2; i++ {
			got, err := Step(jctx, "a", func(context.Context) (int, error) { n++; return n, nil })
			require.NoError(t, err)
			assert.Equal(t, i+1, got)
		}
	})
}

// How long a job's steps are kept follows its outcome: StepTTL after a success, as long as the
// dead job after a death, StepTTL past a retry's due time.
func TestStepsAreKeptAsLongAsTheJobsOutcomeNeeds(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	const stepTTL, deadTimeout, retryIn = time.Hour, 1000 * time.Hour, 100 * time.Hour
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		var mode string
		if err := job.Bind(&mode); err != nil {
			return err
		}
		if _, err := Step(ctx, "s", func(context.Context) (string, error) { return mode, nil }); err != nil {
			return err
		}
		if mode == "ok" {
			return nil
		}
		return errors.New(mode)
	})
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 3}}, Workers: map[string]Worker{"W": w},
		StepTTL: stepTTL, DeadTimeout: deadTimeout, Backoff: func(int, *Job) time.Duration { return retryIn }})
	for _, tc := range []struct {
		mode  string
		opts  []EnqueueOption
		state func(jid string) bool
		ttl   time.Duration
	}{
		{"ok", nil, func(string) bool { return true }, stepTTL},
		{"retry", nil, func(jid string) bool { return v.zcard(v.keys.Retry()) > 0 }, retryIn + stepTTL},
		{"dead", []EnqueueOption{MaxRetries(0)}, func(jid string) bool { return v.zcard(v.keys.Dead()) > 0 }, deadTimeout},
	} {
		jid, err := e.Enqueue(ctx, "q", "W", []any{tc.mode}, tc.opts...)
		require.NoError(t, err)
		testutil.WaitFor(t, tc.mode+": the outcome and the steps' expiry", func() bool {
			ttl := v.rdb.PTTL(ctx, v.keys.Steps(jid)).Val()
			return tc.state(jid) && ttl > tc.ttl-time.Minute && ttl <= tc.ttl
		})
	}
}

// A job that never calls Step sends no step command: its run leaves no steps key, and its
// outcome no PEXPIRE (TestFeatureCost… in bench_cost_test.go counts the round trips).
func TestAJobWithoutStepsLeavesNoStepsKey(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &recorder{}
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 1}}, Workers: map[string]Worker{"W": rec}})
	jid, err := e.Enqueue(ctx, "q", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job ran", func() bool { return rec.count() == 1 })
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.Steps(jid)).Val())
}

// The reply of a step's save is lost (the connection cut after Redis ran it): the save is
// tried again and finds the result saved, or, when every try of the run fails, the job fails
// and its retry finds the result saved. Either way the step's function runs once.
func TestALostReplyOfAStepsSaveDoesNotRunTheStepAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cuts int // replies of the save cut in the first run; 0: every one until the run fails
	}{
		{"one reply lost", 1},
		{"every try of the run lost", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCutter(t)
			ctx := context.Background()
			var calls stepCalls
			var mu sync.Mutex
			var errs []error
			done := make(chan int, 1)
			w := WorkerFunc(func(ctx context.Context, job *Job) error {
				n, err := Step(ctx, "once", func(context.Context) (int, error) {
					calls.add(job.JID, "once")
					return 42, nil
				})
				if err != nil {
					c.proxy.CutReplyTo(0) // the run failed: let its retry through
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return err
				}
				done <- n
				return nil
			})
			e := c.start(Options{RedisURL: c.url(), Queues: []Queue{{Name: "q", Concurrency: 1}}, Workers: map[string]Worker{"W": w},
				Backoff: noBackoff, RedisTimeout: 2 * time.Second})
			n := tc.cuts
			if n == 0 {
				n = 1000
			}
			cut := c.proxy.CutReplyTo(n, "hsetnx")
			jid, err := e.Enqueue(ctx, "q", "W", nil)
			require.NoError(t, err)
			waitCut(t, cut)
			select {
			case got := <-done:
				assert.Equal(t, 42, got)
			case <-time.After(testutil.WaitTimeout):
				t.Fatal("the job never succeeded")
			}
			assert.Equal(t, 1, calls.of(jid, "once"), "the step's function runs once")
			mu.Lock()
			defer mu.Unlock()
			if tc.cuts == 0 {
				require.Len(t, errs, 1, "the first run fails: its save got no reply")
				assert.Contains(t, errs[0].Error(), "save the result")
			} else {
				assert.Empty(t, errs, "the save's second try finds the result saved")
			}
		})
	}
}
