package exq

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// startWith starts a node on the env's namespace with ctx, as a program under
// signal.NotifyContext does.
func (v *env) startWith(ctx context.Context, o Options) *Exq {
	v.t.Helper()
	o.Redis, o.Namespace, o.Logger = v.rdb, v.ns, testLogger()
	o.PollTimeout = 20 * time.Millisecond
	e, err := Start(ctx, o)
	require.NoError(v.t, err)
	v.t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(v.t, e.Stop(sctx))
	})
	return e
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestCancellingStartsContextStopsTheNodeAndLetsTheRunningJobFinish(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	var started, finished atomic.Int32
	var ctxEnded atomic.Bool
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Add(1)
		<-release
		ctxEnded.Store(ctx.Err() != nil)
		finished.Add(1)
		return nil
	})
	e := v.startWith(ctx, Options{ShutdownTimeout: time.Minute, Workers: map[string]Worker{"W": w}})
	jid, err := e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job started", func() bool { return started.Load() == 1 })
	assert.False(t, closed(e.Done()))

	cancel() // what signal.NotifyContext does on Ctrl-C
	testutil.WaitFor(t, "Done is closed", func() bool { return closed(e.Done()) })
	// A fetch under way when the stop began may still take a job (a cluster run once ran the
	// job enqueued below): the test enqueues once the fetch loops have ended.
	testutil.WaitFor(t, "the node stops fetching", func() bool { return e.stopping.Load() && len(e.loops.Running()) == 0 })
	_, err = e.Enqueue(context.Background(), "default", "W", nil)
	require.NoError(t, err, "enqueueing works while the node drains")

	close(release)
	sctx, scancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer scancel()
	require.NoError(t, e.Stop(sctx), "Stop waits for the stop that ctx started, and returns its result")
	require.NoError(t, e.Stop(sctx), "and again")
	assert.Equal(t, int32(1), finished.Load())
	assert.False(t, ctxEnded.Load(), "the job's context was not cancelled: it finished within the grace period")
	assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
	queued := v.list(v.keys.Queue("default"))
	require.Len(t, queued, 1, "only the job enqueued during the drain waits")
	assert.NotContains(t, queued[0], jid)
	assert.False(t, v.rdb.SIsMember(context.Background(), v.keys.Processes(), e.NodeID()).Val(), "the node signed off")
	_, err = e.Enqueue(context.Background(), "default", "W", nil)
	assert.ErrorIs(t, err, ErrStopped)
}

func TestAStartContextDeadlineHandsBackAJobThatOutlivesTheGracePeriod(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var started atomic.Bool
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Store(true)
		<-ctx.Done()
		return ctx.Err()
	})
	e := v.startWith(ctx, Options{ShutdownTimeout: 50 * time.Millisecond, Workers: map[string]Worker{"W": w}})
	_, err := e.Enqueue(ctx, "default", "W", nil, JID("slow"))
	require.NoError(t, err)
	testutil.WaitFor(t, "the job started", started.Load)
	cancel()
	require.NoError(t, e.Stop(context.Background()))
	queued := v.list(v.keys.Queue("default"))
	require.Len(t, queued, 1, "handed back to its queue")
	assert.Contains(t, queued[0], `"jid":"slow"`)
	assert.Zero(t, v.zcard(v.keys.Retry()), "not counted as a failure")
}

func TestStopBeforeTheStartContextEndsLeavesNothingWaitingOnIt(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	e := v.startWith(ctx, Options{})
	require.NoError(t, e.Stop(context.Background()))
	cancel() // the node is stopped already: nothing happens (goleak in TestMain checks the goroutine ended)
	require.NoError(t, e.Stop(context.Background()))
}

// TestTheStartContextsEndIsLoggedBeforeTheStopOrNotAtAll: "exq: stopped" is the node's last
// line. When Start's ctx ends first, its line comes before the stop's; when Stop came first
// (a deferred cancel after Stop, the two ends racing in the node's select), the late end of
// ctx logs nothing.
func TestTheStartContextsEndIsLoggedBeforeTheStopOrNotAtAll(t *testing.T) {
	t.Parallel()
	const ended, stopped = "the context given to Start ended", `msg="exq: stopped"`
	for _, stopFirst := range []bool{false, true} {
		v := newEnv(t)
		var logs testutil.LogBuffer
		ctx, cancel := context.WithCancel(context.Background())
		e, err := Start(ctx, Options{Redis: v.rdb, Namespace: v.ns, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		if stopFirst {
			require.NoError(t, e.Stop(context.Background()))
			cancel()
			e.startCtxEnded(ctx) // what the node's watcher does when its select picks ctx's end
			assert.True(t, logs.Contains(stopped))
			assert.False(t, logs.Contains(ended), "a stop already made is not announced again:\n%s", logs.String())
			continue
		}
		cancel()
		testutil.WaitFor(t, "the node stopped", func() bool { return logs.Contains(stopped) })
		require.NoError(t, e.Stop(context.Background()))
		out := logs.String()
		require.Contains(t, out, ended)
		assert.Less(t, strings.Index(out, ended), strings.Index(out, stopped))
	}
}
