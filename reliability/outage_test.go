package reliability_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestRedisOutageUnderLoad cuts the node's connection to Redis for 5 s while it processes a
// stream of jobs: no goroutine pile-up, no busy loop, enqueues fail with an error instead of
// hanging, and processing resumes quickly once Redis is back. Every job fed runs, checked by jid,
// and none runs twice: the cut is shorter than the heartbeat window and no process dies.
func TestRedisOutageUnderLoad(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	proxy := testutil.NewProxy(t, srv.Addr())
	ctx := context.Background()
	direct := client(t, srv.Addr())
	work := newCounter(func(ctx context.Context, _ *exq.Job) error {
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	e := startNode(t, exq.Options{Redis: client(t, proxy.Addr()), Namespace: "outage", RedisTimeout: time.Second,
		Queues: []exq.Queue{{Name: "default", Concurrency: 20}}, Workers: map[string]exq.Worker{"W": work}})
	producer, err := exq.NewClient(ctx, exq.ClientOptions{Redis: direct, Namespace: "outage"})
	require.NoError(t, err)

	// A steady stream of jobs, written straight to Redis, before, during and after the cut.
	stopFeeding := make(chan struct{})
	fed := make(chan []string)
	go func() {
		var jids []string
		defer func() { fed <- jids }()
		for {
			select {
			case <-stopFeeding:
				return
			case <-time.After(time.Millisecond):
			}
			if jid, err := producer.Enqueue(ctx, "default", "W", nil); err == nil {
				jids = append(jids, jid)
			}
		}
	}()
	testutil.WaitFor(t, "the node is busy", func() bool { return work.total() > 200 })
	goroutinesBefore := runtime.NumGoroutine()

	proxy.Down()
	cpuBefore := cpuTime()
	outageStart := time.Now()
	// An enqueue through the cut connection fails with an error; it does not hang.
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = e.Enqueue(ectx, "default", "W", nil)
	assert.Error(t, err, "enqueue during the outage")
	assert.NoError(t, ectx.Err(), "the enqueue returned before its context ran out")
	cancel()
	maxGoroutines := 0
	for time.Since(outageStart) < 5*time.Second {
		maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
		time.Sleep(50 * time.Millisecond)
	}
	cpuShare := float64(cpuTime()-cpuBefore) / float64(time.Since(outageStart))
	doneAtCut := work.total()

	proxy.Up()
	upAt := time.Now()
	testutil.WaitFor(t, "processing resumes", func() bool { return work.total() > doneAtCut+50 })
	resumedIn := time.Since(upAt)
	close(stopFeeding)
	jids := <-fed
	total := len(jids)
	// Wait for every jid fed, by identity: a count of runs would let a lost job and a duplicate
	// cancel out.
	notRun := func() []string {
		runs := work.snapshot()
		var missing []string
		for _, jid := range jids {
			if runs[jid] == 0 {
				missing = append(missing, jid)
			}
		}
		return missing
	}
	if !testutil.Within(func() bool { return len(notRun()) == 0 }) {
		t.Errorf("not every job fed ran within %s; %s", testutil.WaitTimeout,
			locateJobs(ctx, direct, "outage", notRun(), exq.DefaultHeartbeatInterval*time.Duration(exq.DefaultMissedHeartbeats+1)))
	}
	runs := work.snapshot()
	var duplicates []string
	for _, jid := range jids {
		if runs[jid] > 1 {
			duplicates = append(duplicates, fmt.Sprintf("%s ran %d times", jid, runs[jid]))
		}
	}
	t.Logf("outage: %d jobs fed, %d not run, %d run more than once; goroutines %d before, at most %d during; CPU %.1f%% of a core during the 5 s cut; resumed %s after Redis came back",
		total, len(notRun()), len(duplicates), goroutinesBefore, maxGoroutines, cpuShare*100, resumedIn.Round(time.Millisecond))
	assert.Empty(t, duplicates, "no job runs twice: no process died and the cut is shorter than the heartbeat window")
	assert.LessOrEqual(t, maxGoroutines, goroutinesBefore+40, "no goroutine pile-up")
	assert.Less(t, cpuShare, 0.5, "no busy loop while Redis is unreachable")
	assert.LessOrEqual(t, resumedIn, 2*time.Second, "processing resumes within 2 s of recovery")
}

// TestSlowRedisHonoursTimeouts adds 1 s of latency: enqueues still succeed within the default
// timeout, and a node configured with a shorter RedisTimeout fails fast instead of waiting.
func TestSlowRedisHonoursTimeouts(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	proxy := testutil.NewProxy(t, srv.Addr())
	ctx := context.Background()
	work := newCounter(nil)
	url := "redis://" + proxy.Addr() + "/0"
	e := startNode(t, exq.Options{RedisURL: url, Namespace: "slow", Workers: map[string]exq.Worker{"W": work}})
	proxy.SetLatency(time.Second)
	start := time.Now()
	jid, err := e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err, "a 1 s round trip fits the default 5 s RedisTimeout")
	t.Logf("enqueue with 1 s latency took %s", time.Since(start).Round(time.Millisecond))
	testutil.WaitFor(t, "the job ran", func() bool { return work.ran(jid) })

	short, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: url, Namespace: "slow", RedisTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer short.Close()
	// A context deadline shorter than the latency ends the call with an error, on time.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = short.Enqueue(cctx, "default", "W", nil)
	assert.Error(t, err)
	assert.Less(t, time.Since(start), 900*time.Millisecond, "the caller's deadline is honoured")

	// RedisTimeout below the latency: Start reports Redis as unavailable instead of hanging.
	start = time.Now()
	_, err = exq.Start(ctx, exq.Options{RedisURL: url, Namespace: "slow", RedisTimeout: 200 * time.Millisecond, Logger: quietLogger()})
	assert.ErrorIs(t, err, exq.ErrRedisUnavailable)
	assert.Less(t, time.Since(start), 3*time.Second, "RedisTimeout bounds the wait")
	proxy.SetLatency(0) // let the node stop quickly
}
