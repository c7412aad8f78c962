package exq

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func TestSnoozeTwiceThenSucceed(t *testing.T) { // Exq 43
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var mu sync.Mutex
	var runs []*Job
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		mu.Lock()
		runs = append(runs, job)
		n := len(runs)
		mu.Unlock()
		if n <= 2 {
			return Snooze(10 * time.Millisecond)
		}
		return nil
	})
	e := v.start(Options{MaxRetries: NoRetries, Workers: map[string]Worker{"S": w}}, testHooks{statsInterval: 10 * time.Millisecond})
	_, err := e.Enqueue(ctx, "default", "S", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "three runs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	for i, job := range runs {
		assert.Zero(t, job.RetryCount, "run %d: retry_count does not change with snoozes", i+1)
	}
	second := decode(t, runs[1].Raw())
	assert.Equal(t, "Snoozed for 0.01 seconds", second["error_message"])
	assert.NotContains(t, second, "retry_count")
	assert.False(t, runs[1].FailedAt.IsZero())
	testutil.WaitFor(t, "counted as processed, never failed", func() bool {
		return v.get(v.keys.Stat("processed")) == "3" && v.get(v.keys.Stat("failed")) == ""
	})
	assert.Zero(t, v.zcard(v.keys.Dead()), "a snooze is not a failure, even with no retries")
}

func TestSnoozeKeepsASuccessLock(t *testing.T) { // Exq 44
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	var runs atomic.Int32
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		if runs.Add(1) == 1 {
			return Snooze(0)
		}
		<-release
		return nil
	})
	e := v.start(Options{Workers: map[string]Worker{"S": w}})
	j1, err := e.Enqueue(ctx, "default", "S", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "t1"}))
	require.NoError(t, err)
	j2, err := e.Enqueue(ctx, "default", "S", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "t1"}))
	conflictWith(t, j1, j2, err)
	testutil.WaitFor(t, "the job runs again after its snooze", func() bool { return runs.Load() == 2 })
	j3, err := e.Enqueue(ctx, "default", "S", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "t1"}))
	conflictWith(t, j1, j3, err)
	close(release)
	testutil.WaitFor(t, "the lock is released on success", v.lockGone("t1"))
}

// slowWorker has its own timeout.
type slowWorker struct {
	timeout time.Duration
	result  error
}

func (s slowWorker) Timeout() time.Duration { return s.timeout }
func (s slowWorker) Perform(ctx context.Context, _ *Job) error {
	<-ctx.Done()
	return s.result
}

func TestTimeoutCancelsTheJobAndRetriesIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		jobTimeout time.Duration
		worker     Worker
		want       string
	}{
		{"Options.JobTimeout", 50 * time.Millisecond, WorkerFunc(func(ctx context.Context, _ *Job) error { <-ctx.Done(); return ctx.Err() }),
			"ran longer than 50ms"},
		{"the worker's Timeout overrides it", time.Hour, slowWorker{timeout: 30 * time.Millisecond, result: errors.New("gave up")},
			"ran longer than 30ms, then returned: gave up"},
		{"returning nil after the timeout is still a timeout", 0, slowWorker{timeout: 20 * time.Millisecond},
			"ran longer than 20ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			e := v.start(Options{JobTimeout: tc.jobTimeout, Workers: map[string]Worker{"T": tc.worker},
				Backoff: func(int, *Job) time.Duration { return time.Hour }})
			_, err := e.Enqueue(context.Background(), "default", "T", nil, MaxRetries(3))
			require.NoError(t, err)
			testutil.WaitFor(t, "the job is in retry", func() bool { return v.zcard(v.keys.Retry()) == 1 })
			m := decode(t, v.zset(v.keys.Retry())[0].Member.(string))
			assert.Equal(t, "exq.Timeout", m["error_class"])
			assert.Equal(t, tc.want, m["error_message"])
			assert.Equal(t, "1", m["retry_count"].(json.Number).String())
		})
	}
}

func TestTimeoutForPrefersTheWorkersOwn(t *testing.T) {
	t.Parallel()
	rn := newRunner(runnerParts{jobTimeout: time.Minute})
	assert.Equal(t, time.Minute, rn.timeoutFor(WorkerFunc(nil)))
	assert.Equal(t, time.Second, rn.timeoutFor(slowWorker{timeout: time.Second}))
	assert.Equal(t, time.Minute, rn.timeoutFor(slowWorker{timeout: 0}), "0 means the node's default")
	assert.Equal(t, time.Duration(0), rn.timeoutFor(slowWorker{timeout: -1}), "negative means none")
	assert.Equal(t, time.Minute, rn.timeoutFor(nil))
}
