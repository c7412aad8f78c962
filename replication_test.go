package exq

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/redact"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

func TestSentinelURLBuildsAFailoverClientWithExqSettings(t *testing.T) {
	t.Parallel()
	c, err := store.NewURLClient("redis://sentuser:sentpw@127.0.0.1:26379/3?master_name=mymaster&addr=127.0.0.1:26380&addr=127.0.0.1:26381&password=masterpw", 2*time.Second)
	require.NoError(t, err)
	defer c.Close()
	o := c.Options()
	assert.Equal(t, "FailoverClient", o.Addr, "go-redis names the failover client's address so")
	assert.Equal(t, 3, o.DB)
	assert.Equal(t, "masterpw", o.Password, "?password= is the master's")
	assert.Equal(t, 2*time.Second, o.ReadTimeout)
	assert.Equal(t, 2*time.Second, o.WriteTimeout)
	assert.Equal(t, 2*time.Second, o.DialTimeout)
	assert.True(t, o.ContextTimeoutEnabled)
	assert.Equal(t, 0, store.ClientRetries(c), "exq's own client never resends a command")

	c2, err := store.NewURLClient("redis://127.0.0.1:26379/0?master_name=m&max_retries=2&read_timeout=7s", time.Second)
	require.NoError(t, err)
	defer c2.Close()
	assert.Equal(t, 2, store.ClientRetries(c2), "the URL's own max_retries wins")
	assert.Equal(t, 7*time.Second, c2.Options().ReadTimeout)
	assert.Equal(t, time.Second, c2.Options().WriteTimeout)
}

func TestSentinelURLErrorsNeverShowPasswords(t *testing.T) {
	// Serial: waits until no goroutine of the process is dialling, which other tests' clients do.
	for _, tc := range []struct{ name, url, want string }{
		{"empty master name", "redis://:sentpw@127.0.0.1:26379/0?master_name=&password=masterpw", "master_name is empty"},
		{"unknown option", "redis://:sentpw@127.0.0.1:26379/0?master_name=m&password=masterpw&bogus=1", "unexpected option: bogus"},
		{"bad addr", "redis://:sentpw@127.0.0.1:26379/0?master_name=m&password=masterpw&addr=nope", "unable to parse addr param"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(context.Background(), ClientOptions{RedisURL: tc.url})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "sentpw")
			assert.NotContains(t, err.Error(), "masterpw")
		})
	}
	// Unreachable sentinels: the error names the address, not the passwords. go-redis' dials
	// to them outlive the closed client by a second or two (its sentinel lookup and the pool's
	// dial retries go on): wait for them, or the package's leak check fails a run in which
	// nothing else takes that long (every Redis test skipped, or this test run alone).
	t.Cleanup(func() {
		testutil.WaitFor(t, "go-redis stops dialling the unreachable sentinel", func() bool {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			return !strings.Contains(stacks, "sentinelFailover") && !strings.Contains(stacks, "pool.(*ConnPool).dialConn")
		})
	})
	_, err := NewClient(context.Background(), ClientOptions{RedisTimeout: 300 * time.Millisecond,
		RedisURL: "redis://:sentpw@127.0.0.1:1/0?master_name=m&password=masterpw"})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrRedisUnavailable)
	assert.Contains(t, err.Error(), "127.0.0.1:1")
	assert.NotContains(t, err.Error(), "sentpw")
	assert.NotContains(t, err.Error(), "masterpw")
	assert.Equal(t, "redis://:xxxxx@127.0.0.1:1/0?master_name=m&password=xxxxx",
		redact.URL("redis://:sentpw@127.0.0.1:1/0?master_name=m&password=masterpw"))
}

func TestWaitReplicasOptionsAreValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts ClientOptions
		want string
	}{
		{"negative replicas", ClientOptions{WaitReplicas: -1}, "WaitReplicas: must not be negative, got -1"},
		{"negative timeout", ClientOptions{WaitReplicas: 1, WaitTimeout: -time.Second}, "WaitTimeout: must not be negative"},
		{"timeout not below RedisTimeout", ClientOptions{WaitReplicas: 1, WaitTimeout: 5 * time.Second}, "WaitTimeout: must be shorter than RedisTimeout (5s), got 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.opts.withDefaults()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	o, err := ClientOptions{WaitReplicas: 1}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultWaitTimeout, o.WaitTimeout)
	o, err = ClientOptions{WaitReplicas: 1, RedisTimeout: time.Second}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 500*time.Millisecond, o.WaitTimeout, "half of a short RedisTimeout")

	// A caller's client whose ReadTimeout would cut the WAIT reply short is refused.
	v := newEnv(t)
	short := redis.NewClient(&redis.Options{Addr: v.rdb.Options().Addr, ReadTimeout: 200 * time.Millisecond})
	defer short.Close()
	_, err = NewClient(context.Background(), ClientOptions{Redis: short, Namespace: v.ns, WaitReplicas: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WaitTimeout: must be shorter than the Redis client's ReadTimeout (200ms)")
}

// The test Redis has no replica: every enqueue with WaitReplicas 1 is written and reported as
// not replicated, after WaitTimeout and not much later.
func testWaitReplicasWithoutAReplicaReportsNotReplicatedAndKeepsTheJob(t *testing.T) {
	// Timed (timed_test.go): asserts calls return within WAIT's timeout + 2 s.
	v := newEnv(t)
	ctx := context.Background()
	const wait = 150 * time.Millisecond
	c, err := NewClient(ctx, ClientOptions{Redis: v.rdb, Namespace: v.ns, WaitReplicas: 1, WaitTimeout: wait})
	require.NoError(t, err)
	defer c.Close()

	check := func(what string, call func() (string, error), stored func() string) {
		t.Helper()
		begin := time.Now()
		jid, err := call()
		took := time.Since(begin)
		require.Error(t, err, what)
		assert.ErrorIs(t, err, ErrNotReplicated, what)
		assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged the write within 150ms", what)
		assert.NotEmpty(t, jid, "%s: the jid of the written job comes with the error", what)
		assert.GreaterOrEqual(t, took, wait, what)
		assert.Less(t, took, wait+2*time.Second, what)
		assert.Contains(t, stored(), jid, "%s: the job is in Redis", what)
	}
	check("enqueue", func() (string, error) { return c.Enqueue(ctx, "default", "W", []any{1}) },
		func() string { return strings.Join(v.list(v.keys.Queue("default")), "") })
	check("enqueue in", func() (string, error) { return c.EnqueueIn(ctx, "default", "W", time.Hour, nil) },
		func() string { return v.zsetMembers(v.keys.Schedule()) })

	res, err := c.EnqueueAll(ctx, []JobSpec{{Queue: "q2", Class: "W"}, {Queue: "q2", Class: "W", In: time.Hour}})
	assert.ErrorIs(t, err, ErrNotReplicated)
	require.Len(t, res, 2, "the results come with the error: the batch was written")
	assert.Len(t, v.list(v.keys.Queue("q2")), 1)
	assert.Equal(t, 2, v.zcard(v.keys.Schedule()))

	// A unique conflict writes nothing: the conflict is the answer, not the replication.
	u := Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour})
	first, err := c.Enqueue(ctx, "q3", "W", nil, u)
	assert.ErrorIs(t, err, ErrNotReplicated)
	holder, err := c.Enqueue(ctx, "q3", "W", nil, u)
	assert.ErrorIs(t, err, ErrUniqueConflict)
	assert.Equal(t, first, holder)
}

// A call whose ctx ends before WaitTimeout waits for what its ctx leaves (three quarters of
// it), so that it learns that its job was written (ErrNotReplicated) instead of timing out.
func testWaitReplicasWaitsNoLongerThanTheCallersDeadline(t *testing.T) {
	// Timed (timed_test.go): asserts the call returns well before WaitTimeout.
	v := newEnv(t)
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.rdb, Namespace: v.ns, WaitReplicas: 1, WaitTimeout: 3 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	begin := time.Now()
	jid, err := c.Enqueue(ctx, "default", "W", []any{1})
	took := time.Since(begin)
	require.ErrorIs(t, err, ErrNotReplicated, "the WAIT answered before the deadline")
	assert.Regexp(t, `0 of 1 replicas acknowledged the write within [0-9.]+ms`, err.Error())
	// The WAIT is bounded by the caller's 400 ms, not by WaitTimeout's 3 s. The bound checked is
	// far from both: the call ends at the deadline, so a check at 400 ms itself failed by 30 µs
	// on a loaded machine (1 run in 7 of the whole suite) while proving nothing more.
	assert.Less(t, took, 1500*time.Millisecond)
	assert.Contains(t, strings.Join(v.list(v.keys.Queue("default")), ""), jid, "the job is in Redis")
}

// A node with WaitReplicas and no replica still runs its jobs: outcome writes that no replica
// confirmed are logged and count as written (nothing is lost on the master).
func TestWaitReplicasNodeWithoutAReplicaStillRunsJobs(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	failing := WorkerFunc(func(ctx context.Context, job *Job) error { return errors.New("boom") })
	e := v.start(Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond,
		Workers: map[string]Worker{"W": rec, "F": failing}})
	ctx := context.Background()
	_, err := e.Enqueue(ctx, "default", "W", nil)
	assert.ErrorIs(t, err, ErrNotReplicated)
	_, err = e.Enqueue(ctx, "default", "F", nil, MaxRetries(0))
	assert.ErrorIs(t, err, ErrNotReplicated)
	testutil.WaitFor(t, "the job ran and was acknowledged, and the failing one is dead", func() bool {
		return rec.count() == 1 && len(v.list(v.keys.Backup(e.opts.NodeID, "default"))) == 0 && v.zcard(v.keys.Dead()) == 1
	})
}

func (v *env) zsetMembers(key string) string {
	s := ""
	for _, z := range v.zset(key) {
		s += z.Member.(string)
	}
	return s
}
