package exq

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/heartbeat"
	"github.com/exqgo/exq/internal/testutil"
)

func TestStopDuringAnOutageReturnsWithManyFinishedJobsAwaitingTheirAck(t *testing.T) {
	t.Parallel()
	c := newCutter(t)
	// More finished jobs than any buffer between the workers and the acker holds.
	const jobs = 2000
	for i := 0; i < jobs; i++ {
		c.push("default", fmt.Sprintf(`{"class":"W","args":[],"queue":"default","jid":"j%d"}`, i))
	}
	release := make(chan struct{})
	var started, finished atomic.Int64
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Add(1)
		<-release
		finished.Add(1)
		return nil
	})
	e, err := Start(context.Background(), Options{RedisURL: c.url(), Namespace: c.ns, Logger: testLogger(),
		Queues: []Queue{{Name: "default", Concurrency: jobs}}, Workers: map[string]Worker{"W": w},
		DisableScheduler: true, RedisTimeout: 5 * time.Second, ShutdownTimeout: 10 * time.Second})
	require.NoError(t, err)
	testutil.WaitFor(t, "every job started", func() bool { return started.Load() == jobs })

	c.proxy.Down()
	close(release) // every job finishes while Redis is unreachable
	testutil.WaitFor(t, "every job finished", func() bool { return finished.Load() == jobs })

	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(testutil.WaitTimeout):
		t.Fatalf("Stop(context.Background()) did not return during the outage (%d jobs still running)", e.mgr.inFlight())
	}

	// Nothing is lost: the jobs whose acknowledgement never reached Redis are still in the
	// backup list, and the node stays in the heartbeats for a rescue.
	c.proxy.Up()
	ctx := context.Background()
	left := c.list(c.keys.Backup(e.NodeID(), "default"))
	assert.Len(t, left, jobs, "no acknowledgement could be written")
	_, err = c.rdb.ZScore(ctx, c.keys.Heartbeats(), e.NodeID()).Result()
	assert.NoError(t, err, "the node stays in the heartbeats so that its jobs are rescued")
}

func TestRescueOfADeadNodeEndsWhenRedisHangs(t *testing.T) {
	t.Parallel()
	c := newCutter(t)
	// A caller's client that waits for replies as long as its context lets it.
	opts := *c.rdb.Options()
	opts.Addr = c.proxy.Addr()
	opts.ReadTimeout = -1
	opts.ContextTimeoutEnabled = true
	cl := redis.NewClient(&opts)
	defer cl.Close()
	c.staleBackup("dead", "default", 3)
	h := heartbeat.New(heartbeat.Parts{Store: testStore(cl, c.keys, "monitor"), Interval: time.Second, Missed: 3,
		Foreign: ForeignHeartbeatWindow, Timeout: 200 * time.Millisecond, Queues: func() []string { return nil }, Log: testLogger()})

	c.proxy.Freeze()
	defer c.proxy.Thaw()
	done := make(chan error, 1)
	go func() { done <- h.RescueDead(context.Background()) }()
	select {
	case err := <-done:
		assert.Error(t, err, "the hung call ends with an error, and the heartbeat loop goes on")
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the rescue hung with Redis: the node would stop beating and be taken for dead")
	}
}

func TestAJobHandedBackBeforeItsWorkerStartedDoesNotRun(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	e := v.start(Options{Queues: []Queue{}, Workers: map[string]Worker{"W": rec}, DisableScheduler: true})
	raw := `{"class":"W","args":[],"queue":"q","jid":"early"}`
	r := &run{queue: "q", raw: raw, seq: 1, started: time.Now()}
	e.mgr.mu.Lock()
	e.mgr.busy["q"]++
	r.at = len(e.mgr.running)
	e.mgr.running = append(e.mgr.running, r)
	e.mgr.jobs.Add(1)
	e.mgr.mu.Unlock()

	// Stop's hand-back claims the job before a worker goroutine picked it up.
	require.True(t, r.handBack())
	r.ctx.Cancel(errShutdown)
	e.runner.process(r)
	assert.Zero(t, rec.count(), "the worker never runs a job that is back in its queue")
	assert.Zero(t, e.mgr.inFlight(), "its slot is free")
}
