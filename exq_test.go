package exq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

func TestStartValidatesOptionsNamingTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"negative concurrency", Options{Concurrency: -1}, "Concurrency: must not be negative, got -1"},
		{"empty queue name", Options{Queues: []Queue{{Name: ""}}}, "Queues[0].Name: queue name is empty"},
		{"duplicate queue", Options{Queues: []Queue{{Name: "a"}, {Name: "a"}}}, `Queues[1].Name: queue "a" is listed twice`},
		{"negative queue concurrency", Options{Queues: []Queue{{Name: "a", Concurrency: -2}}}, "Queues[0].Concurrency: must not be negative, got -2"},
		{"namespace with NoNamespace", Options{Namespace: "x", NoNamespace: true}, `Namespace: must be empty when NoNamespace is set, got "x"`},
		{"negative poll timeout", Options{PollTimeout: -time.Second}, "PollTimeout: must not be negative, got -1s"},
		{"negative global limit", Options{Queues: []Queue{{Name: "a", GlobalLimit: -1}}}, "Queues[0].GlobalLimit: must not be negative, got -1"},
		{"global limit without heartbeats", Options{Queues: []Queue{{Name: "a", GlobalLimit: 5}}, DisableHeartbeat: true}, "Queues[0].GlobalLimit: needs heartbeats"},
		{"rate without N", Options{Queues: []Queue{{Name: "a", Rate: Rate{Per: time.Second}}}}, "Queues[0].Rate.N: must be at least 1, got 0"},
		{"rate without period", Options{Queues: []Queue{{Name: "a", Rate: Rate{N: 10}}}}, "Queues[0].Rate.Per: must be at least 1ms, got 0s"},
		{"negative shutdown timeout", Options{ShutdownTimeout: -time.Second}, "ShutdownTimeout: must not be negative"},
		{"negative redis timeout", Options{RedisTimeout: -time.Second}, "RedisTimeout: must not be negative"},
		{"bad max retries", Options{MaxRetries: -5}, "MaxRetries: must be NoRetries or not negative, got -5"},
		{"bad dead max jobs", Options{DeadMaxJobs: -5}, "DeadMaxJobs: must be NoDeadJobs or not negative, got -5"},
		{"node id with separator", Options{NodeID: "a::b"}, `NodeID: must not contain "::"`},
		{"nil worker", Options{Workers: map[string]Worker{"X": nil}}, `Workers: class "X" has a nil worker`},
		{"empty class", Options{Workers: map[string]Worker{"": WorkerFunc(nil)}}, "Workers: a worker is registered under an empty class"},
		{"nil middleware", Options{Middleware: []Middleware{nil}}, "Middleware[0]: is nil"},
		{"bad URL", Options{RedisURL: "http://user:hunter2@host:1/0"}, "RedisURL: http://user:xxxxx@host:1/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Start(context.Background(), tc.opts)
			require.Error(t, err)
			assert.Nil(t, e)
			assert.True(t, errors.Is(err, ErrInvalidOptions), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestDefaultsFollowExq(t *testing.T) {
	t.Parallel()
	o, err := Options{}.withDefaults(testHooks{})
	require.NoError(t, err)
	assert.Equal(t, DefaultRedisURL, o.RedisURL)
	assert.Equal(t, "exq", o.Namespace)
	assert.Equal(t, []Queue{{Name: "default", Concurrency: 100}}, o.Queues)
	assert.Equal(t, 25, o.MaxRetries)
	assert.Equal(t, 10000, o.DeadMaxJobs)
	assert.Equal(t, 180*24*time.Hour, o.DeadTimeout)
	assert.Equal(t, 5*time.Second, o.ShutdownTimeout)
	assert.Equal(t, 100*time.Millisecond, o.PollTimeout)
	assert.Equal(t, 200*time.Millisecond, o.SchedulerPollTimeout)
	assert.Regexp(t, `^.+:\d+:[0-9a-f]{12}$`, o.NodeID, "<hostname>:<pid>:<random>")
	o2, _ := Options{}.withDefaults(testHooks{})
	assert.NotEqual(t, o.NodeID, o2.NodeID, "two nodes in one process never share backup lists")

	o, err = Options{NoNamespace: true, MaxRetries: NoRetries, DeadMaxJobs: NoDeadJobs}.withDefaults(testHooks{})
	require.NoError(t, err)
	assert.Equal(t, "", o.Namespace)
	assert.Equal(t, 0, o.MaxRetries)
	assert.Equal(t, 0, o.DeadMaxJobs)
}

func TestStartFailsClearlyWhenRedisIsUnreachableAndMasksThePassword(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Options{RedisURL: "redis://:s3cret-pw@127.0.0.1:1/0", RedisTimeout: time.Second})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrRedisUnavailable))
	assert.Contains(t, err.Error(), "exq: Redis unavailable at redis://:xxxxx@127.0.0.1:1/0")
	assert.NotContains(t, err.Error(), "s3cret-pw")
}

func TestRedissURLGivesATLSClient(t *testing.T) {
	t.Parallel()
	c, err := store.NewURLClient("rediss://user:pw@cache.example:6380/2", 3*time.Second)
	require.NoError(t, err)
	defer c.Close()
	o := c.Options()
	require.NotNil(t, o.TLSConfig)
	assert.Equal(t, "cache.example", o.TLSConfig.ServerName)
	assert.Equal(t, 2, o.DB)
	assert.Equal(t, "user", o.Username)
	assert.Equal(t, 3*time.Second, o.ReadTimeout)
}

func TestStartWithACallersClientLeavesItOpen(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e, err := Start(context.Background(), Options{Redis: v.rdb, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	require.NoError(t, e.Stop(context.Background()))
	assert.NoError(t, v.rdb.Ping(context.Background()).Err())
	_, err = e.Enqueue(context.Background(), "default", "W", nil)
	assert.ErrorIs(t, err, ErrStopped)
	assert.ErrorIs(t, e.Subscribe("x", 1), ErrStopped)
	assert.NoError(t, e.Stop(context.Background()), "a second Stop is harmless")
}

func TestStartWithRedisURLConnectsAndClosesItsClient(t *testing.T) {
	t.Parallel()
	url := testutil.RedisURL(t)
	ns := testutil.Namespace(t)
	rec := &recorder{}
	e, err := Start(context.Background(), Options{RedisURL: url, Namespace: ns, Logger: testLogger(), Workers: map[string]Worker{"W": rec}})
	require.NoError(t, err)
	defer testutil.DeleteNamespace(redis.NewClient(e.conn.Client().(*redis.Client).Options()), ns)
	_, err = e.Enqueue(context.Background(), "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job ran", func() bool { return rec.count() == 1 })
	require.NoError(t, e.Stop(context.Background()))
	assert.ErrorIs(t, e.conn.Client().Ping(context.Background()).Err(), redis.ErrClosed)
}

func TestNoNamespaceWritesKeysWithoutAnyPrefix(t *testing.T) {
	// Serial: FLUSHDB and KEYS * on database 9 of the test server.
	// A separate database keeps the unprefixed keys away from other tests.
	url := testutil.RedisURL(t)
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	opts.DB = 9
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.FlushDB(ctx).Err())
	defer c.FlushDB(ctx)
	rec := &recorder{}
	// No queues: the job stays in its queue (unsubscribing after Start would race a first poll).
	e, err := Start(ctx, Options{Redis: c, NoNamespace: true, Logger: testLogger(), Queues: []Queue{},
		Workers: map[string]Worker{"W": rec}})
	require.NoError(t, err)
	_, err = e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err)
	_, err = e.EnqueueIn(ctx, "default", "W", time.Hour, nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the node registered itself", func() bool { return c.Exists(ctx, e.NodeID()).Val() == 1 })
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"queues", "queue:default", "schedule", "heartbeats", "heartbeat_deadlines", "heartbeat_epochs", "processes", e.NodeID()}, keys)
	require.NoError(t, e.Stop(ctx))
}

func TestOwnBackupIsRecoveredOnStartAtTheFrontInOriginalOrder(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	const node = "fixed-node-1"
	job := func(jid string) string {
		return fmt.Sprintf(`{"class":"W","args":[],"queue":"default","jid":%q,"retry":true}`, jid)
	}
	// A crashed process of this node had taken b1, b2, b3 (in that order); w1, w2 still wait.
	for _, j := range []string{"b1", "b2", "b3", "w1", "w2"} {
		v.push("default", job(j))
	}
	for i := 0; i < 3; i++ {
		v.take("default", node)
	}
	// A queue this node no longer subscribes to is recovered too (it is in the queues set).
	v.push("old", job("o1"))
	v.take("old", node)

	rec := &recorder{}
	v.start(Options{NodeID: node, Queues: []Queue{{Name: "default", Concurrency: 1}}, Workers: map[string]Worker{"W": rec}})
	testutil.WaitFor(t, "all 5 jobs ran", func() bool { return rec.count() == 5 })
	assert.Equal(t, []string{"b1", "b2", "b3", "w1", "w2"}, rec.jids(), "recovered jobs run first, oldest first")
	assert.Equal(t, []string{job("o1")}, v.list(v.keys.Queue("old")))
	assert.Empty(t, v.list(v.keys.Backup(node, "old")))
}

func TestRandomNodeIDLeavesOtherBackupListsAlone(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"x"}`)
	v.take("default", "some-other-node")
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"W": rec}})
	_, err := e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the new job ran", func() bool { return rec.count() == 1 })
	assert.Len(t, v.list(v.keys.Backup("some-other-node", "default")), 1)
}

func TestStopLetsRunningJobsFinish(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	var started, finished atomic.Int32
	var e *Exq
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Add(1)
		<-release
		// Jobs that enqueue while the node drains still can.
		_, err := e.Enqueue(context.Background(), "other", "W", nil)
		finished.Add(1)
		return err
	})
	var err error
	e, err = Start(ctx, Options{Redis: v.rdb, Namespace: v.ns, Logger: testLogger(), ShutdownTimeout: time.Minute,
		Workers: map[string]Worker{"W": w}})
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		_, err := e.Enqueue(ctx, "default", "W", nil)
		require.NoError(t, err)
	}
	testutil.WaitFor(t, "both jobs started", func() bool { return started.Load() == 2 })
	stopped := make(chan error)
	go func() { stopped <- e.Stop(ctx) }()
	// Stop's first phase ends the fetch and scheduler loops; a fetch already under way when
	// Stop began may still take a job, so the test enqueues once they have ended.
	testutil.WaitFor(t, "Stop stops fetching", func() bool { return e.stopping.Load() && len(e.loops.Running()) == 0 })
	_, err = e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err, "enqueue works while draining")
	close(release)
	require.NoError(t, <-stopped)
	assert.EqualValues(t, 2, finished.Load())
	assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
	assert.Len(t, v.list(v.keys.Queue("default")), 1, "the job enqueued during the drain waits for a node")
	assert.Len(t, v.list(v.keys.Queue("other")), 2)
}

func TestStopHandsUnfinishedJobsBackToTheFrontOfTheirQueue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	stuck := make(chan struct{})
	defer close(stuck)
	var started atomic.Int32
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Add(1)
		if job.JID == "ignores-ctx" {
			<-stuck
			return nil // finishes after the hand-back: its outcome must not be written
		}
		<-ctx.Done()
		return ctx.Err()
	})
	en := v.enqueuer(time.Now)
	for _, jid := range []string{"a", "ignores-ctx", "b", "waiting-1", "waiting-2"} {
		_, err := en.enqueue(ctx, "default", "W", nil, []EnqueueOption{JID(jid)})
		require.NoError(t, err)
	}
	e, err := Start(ctx, Options{Redis: v.rdb, Namespace: v.ns, Logger: testLogger(), ShutdownTimeout: 50 * time.Millisecond,
		Queues: []Queue{{Name: "default", Concurrency: 3}}, Workers: map[string]Worker{"W": w}})
	require.NoError(t, err)
	testutil.WaitFor(t, "three jobs started", func() bool { return started.Load() == 3 })

	// Stop waits until its context ends for the one that ignores its context; the two others
	// must have returned by then. 300 ms was too short on loaded root runs ("2 workers still
	// running", "3 workers…"): the deadline bounds nothing of the product, only the test's wait.
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = e.Stop(sctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "one worker ignores its context")
	assert.Contains(t, err.Error(), "1 workers still running")

	q := v.list(v.keys.Queue("default"))
	jids := make([]string, len(q))
	for i := range q {
		jids[len(q)-1-i] = decode(t, q[i])["jid"].(string) // consumption order
	}
	assert.Equal(t, []string{"a", "ignores-ctx", "b", "waiting-1", "waiting-2"}, jids,
		"unfinished jobs are next to run, in their original order")
	assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
	assert.Zero(t, v.zcard(v.keys.Retry())+v.zcard(v.keys.Dead()), "a job cut off by shutdown is not a failure")

	stuck <- struct{}{} // the stuck worker returns now; nothing more is written for it
	require.NoError(t, e.Stop(context.Background()), "Stop again waits for the workers the first Stop left")
}

func TestStopAfterACompletedStopReturnsAtOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{})
	require.NoError(t, e.Stop(context.Background()))
	require.NoError(t, e.Stop(context.Background()))
	assert.True(t, strings.HasPrefix(e.NodeID(), ""))
}

func TestStopPutsJobsLeftInTheBackupListBackOnTheirQueue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &recorder{}
	e, err := Start(ctx, Options{Redis: v.rdb, Namespace: v.ns, Logger: testLogger(), Workers: map[string]Worker{"W": rec}})
	require.NoError(t, err)
	_, err = e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job ran", func() bool { return rec.count() == 1 })
	// A fetch whose reply was lost leaves a job in the backup list that no worker runs.
	require.NoError(t, e.UnsubscribeAll())
	orphan := `{"class":"W","args":[],"queue":"default","jid":"orphan"}`
	// Written straight into the backup list: a push and a take would race a poll that was
	// already under way when the node unsubscribed.
	require.NoError(t, v.rdb.LPush(ctx, v.keys.Backup(e.NodeID(), "default"), orphan).Err())
	require.NoError(t, e.Stop(ctx))
	assert.Equal(t, []string{orphan}, v.list(v.keys.Queue("default")))
	assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
}
