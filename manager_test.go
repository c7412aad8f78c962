package exq

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func TestJobsRunInFIFOOrder(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	// Enqueue before the node starts, so the whole backlog is waiting at the first poll.
	want := v.enqueueN("default", 20)
	v.start(Options{Queues: []Queue{{Name: "default", Concurrency: 1}}, Workers: map[string]Worker{"W": rec}})
	testutil.WaitFor(t, "20 jobs ran", func() bool { return rec.count() == 20 })
	assert.Equal(t, want, rec.jids())
}

func TestPerQueueConcurrencyIsNeverExceeded(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	limits := map[string]int{"q1": 3, "q2": 5}
	var mu sync.Mutex
	inFlight, maxSeen := map[string]int{}, map[string]int{}
	var done atomic.Int32
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		mu.Lock()
		inFlight[job.Queue]++
		maxSeen[job.Queue] = max(maxSeen[job.Queue], inFlight[job.Queue])
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // long enough for the next poll to see busy slots
		mu.Lock()
		inFlight[job.Queue]--
		mu.Unlock()
		done.Add(1)
		return nil
	})
	en := v.enqueuer(time.Now)
	for i := 0; i < 60; i++ {
		for q := range limits {
			_, err := en.enqueue(ctx, q, "W", nil, nil)
			require.NoError(t, err)
		}
	}
	v.start(Options{Queues: []Queue{{Name: "q1", Concurrency: 3}, {Name: "q2", Concurrency: 5}}, Workers: map[string]Worker{"W": w}})
	testutil.WaitFor(t, "120 jobs ran", func() bool { return done.Load() == 120 })
	mu.Lock()
	defer mu.Unlock()
	for q, limit := range limits {
		assert.LessOrEqual(t, maxSeen[q], limit, "queue %s", q)
		assert.Greater(t, maxSeen[q], 1, "queue %s ran jobs in parallel", q)
	}
}

func TestOnePollFetchesUpToFreeSlotsOfEveryQueueInOneRoundTrip(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	en := v.enqueuer(time.Now)
	for i := 0; i < 30; i++ {
		for _, q := range []string{"a", "b", "c"} {
			_, err := en.enqueue(ctx, q, "W", nil, nil)
			require.NoError(t, err)
		}
	}
	client, counter := v.countingClient()
	release := make(chan struct{})
	var started atomic.Int32
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Add(1)
		<-release
		return nil
	})
	e := v.start(Options{Redis: client, Workers: map[string]Worker{"W": w},
		Queues: []Queue{{Name: "a", Concurrency: 10}, {Name: "b", Concurrency: 4}, {Name: "c", Concurrency: 1}}})
	testutil.WaitFor(t, "15 jobs started", func() bool { return started.Load() == 15 })
	assert.EqualValues(t, 1, e.mgr.polls.Load(), "all 15 jobs came from a single fetch")
	assert.Zero(t, counter.Count("rpoplpush"), "the moves happen inside one script, not as separate commands")
	assert.Len(t, v.list(v.keys.Backup(e.NodeID(), "a")), 10)
	assert.Len(t, v.list(v.keys.Backup(e.NodeID(), "b")), 4)
	assert.Len(t, v.list(v.keys.Backup(e.NodeID(), "c")), 1)
	close(release)
	testutil.WaitFor(t, "all 90 jobs ran", func() bool { return started.Load() == 90 })
}

func TestSubscribeAndUnsubscribeAtRunTime(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &recorder{}
	e := v.start(Options{Queues: []Queue{{Name: "q1"}}, Workers: map[string]Worker{"W": rec}})
	assert.Equal(t, []Queue{{Name: "q1", Concurrency: DefaultConcurrency}}, e.Subscriptions())

	// A q2 job waits while the node is not subscribed; a later q1 job shows the node polled.
	q2jid, err := e.Enqueue(ctx, "q2", "W", nil)
	require.NoError(t, err)
	_, err = e.Enqueue(ctx, "q1", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the q1 job ran", func() bool { return rec.count() == 1 })
	assert.NotContains(t, rec.jids(), q2jid)
	assert.Len(t, v.list(v.keys.Queue("q2")), 1)

	require.NoError(t, e.Subscribe("q2", 7))
	testutil.WaitFor(t, "the q2 job ran after Subscribe", func() bool { return rec.count() == 2 })
	assert.Equal(t, []Queue{{Name: "q1", Concurrency: DefaultConcurrency}, {Name: "q2", Concurrency: 7}}, e.Subscriptions())

	require.NoError(t, e.Unsubscribe("q1"))
	assert.Equal(t, []Queue{{Name: "q2", Concurrency: 7}}, e.Subscriptions())
	q1jid, err := e.Enqueue(ctx, "q1", "W", nil)
	require.NoError(t, err)
	_, err = e.Enqueue(ctx, "q2", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the second q2 job ran", func() bool { return rec.count() == 3 })
	assert.NotContains(t, rec.jids(), q1jid)
	assert.Len(t, v.list(v.keys.Queue("q1")), 1)

	require.NoError(t, e.UnsubscribeAll())
	assert.Empty(t, e.Subscriptions())
	assert.Error(t, e.Subscribe("", 1))
	assert.Error(t, e.Subscribe("x", -1))
}

func TestSubscribeDoesNotReenqueueJobsThisNodeIsRunning(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	var runs atomic.Int32
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		runs.Add(1)
		<-release
		return nil
	})
	e := v.start(Options{Workers: map[string]Worker{"W": w}})
	_, err := e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job started", func() bool { return runs.Load() == 1 })

	require.NoError(t, e.Subscribe("default", 5))
	require.NoError(t, e.Unsubscribe("default"))
	require.NoError(t, e.Subscribe("default", 5))
	assert.Empty(t, v.list(v.keys.Queue("default")), "the running job was not pushed back")
	assert.Len(t, v.list(v.keys.Backup(e.NodeID(), "default")), 1)
	close(release)
	testutil.WaitFor(t, "the backup list is empty", func() bool { return len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0 })
	assert.EqualValues(t, 1, runs.Load())
}

func TestIdleNodeWakesAtOnceOnEnqueue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	// With an hour between polls, only the enqueue's wake-up can start the job.
	e := v.start(Options{PollTimeout: time.Hour, Workers: map[string]Worker{"W": rec}})
	testutil.WaitFor(t, "the first (empty) poll", func() bool { return e.mgr.polls.Load() >= 1 })
	for i := 1; i <= 3; i++ {
		_, err := e.Enqueue(context.Background(), "default", "W", nil)
		require.NoError(t, err)
		testutil.WaitFor(t, fmt.Sprintf("job %d ran", i), func() bool { return rec.count() == i })
	}
	// EnqueueAll wakes the node too.
	_, err := e.EnqueueAll(context.Background(), []JobSpec{{Queue: "default", Class: "W"}})
	require.NoError(t, err)
	testutil.WaitFor(t, "the batch job ran", func() bool { return rec.count() == 4 })
}

func testPollingBacksOffWhileRedisIsDownAndRecovers(t *testing.T) {
	// Timed (timed_test.go): counts fetch attempts in a stretch of time.
	v := newEnv(t)
	proxy := testutil.NewProxy(t, v.rdb.Options().Addr)
	opts := *v.rdb.Options()
	opts.Addr = proxy.Addr()
	opts.MaxRetries = -1 // count every attempt the node makes
	client := redis.NewClient(&opts)
	t.Cleanup(func() { _ = client.Close() })
	counter := testutil.NewCounter()
	client.AddHook(counter)
	rec := &recorder{}
	e := v.start(Options{Redis: client, PollTimeout: 10 * time.Millisecond, RedisTimeout: time.Second, DisableScheduler: true,
		Workers: map[string]Worker{"W": rec}})
	testutil.WaitFor(t, "the node polls", func() bool { return e.mgr.polls.Load() >= 2 })

	proxy.Down()
	before := counter.Count("evalsha")
	time.Sleep(1500 * time.Millisecond) // the window in which we count attempts
	attempts := counter.Count("evalsha") - before
	// Polling every 10 ms would be ~150 attempts; spinning thousands. Backing off from
	// 100 ms to 2 s makes about 5.
	assert.LessOrEqual(t, attempts, 15, "fetch attempts while Redis was down")
	assert.GreaterOrEqual(t, attempts, 1)

	proxy.Up()
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"after-outage","retry":true}`)
	testutil.WaitFor(t, "a job runs after Redis is back", func() bool { return rec.count() == 1 })
	assert.Equal(t, []string{"after-outage"}, rec.jids())
}

func TestIdleWorkerGoroutinesAreReapedAndNewJobsStillRun(t *testing.T) {
	// Serial: counts the process's goroutines.
	v := newEnv(t)
	const n = 20
	var started atomic.Int32
	gate := make(chan struct{})
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Add(1)
		<-gate // hold every job until all n run at once: n worker goroutines
		return nil
	})
	e := v.start(Options{Queues: []Queue{{Name: "default", Concurrency: n}}, Workers: map[string]Worker{"W": w}})
	v.enqueueN("default", n)
	testutil.WaitFor(t, "n jobs run at once", func() bool { return started.Load() == n })
	close(gate)
	testutil.WaitFor(t, "the jobs are done", func() bool { return len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0 })
	withWorkers := runtime.NumGoroutine()
	e.mgr.reapIdleWorkers()
	testutil.WaitFor(t, "the idle worker goroutines ended", func() bool {
		return runtime.NumGoroutine() <= withWorkers-n+2 // a little slack for the client's own goroutines
	})
	v.enqueueN("default", 3)
	testutil.WaitFor(t, "new jobs run on new workers", func() bool { return started.Load() == n+3 })
}
