package exq

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// testLogger discards exq's logs unless EXQ_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("EXQ_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// env is one test's Redis: a real client, its private namespace and the key names in it.
type env struct {
	t    *testing.T
	rdb  *redis.Client
	ns   string
	keys wire.Keys
	// client is what nodes, APIs and clients under test get: rdb, or with EXQ_TEST_CLUSTER=1
	// a cluster client (rdb is then the master that holds the namespace's slot).
	client redis.UniversalClient
}

// newEnv gives the test a real Redis in a namespace of its own. With EXQ_TEST_CLUSTER=1 it is
// a 3-master Redis Cluster and the namespace a hash tag; .ci/run lists the few tests that
// cannot run there (they start child processes on a single-node URL).
func newEnv(t *testing.T) *env {
	t.Helper()
	if testutil.OnCluster() {
		master, cluster, ns := testutil.ClusterRedis(t)
		return &env{t: t, rdb: master, ns: ns, keys: wire.NewKeys(ns), client: cluster}
	}
	rdb, ns := testutil.Redis(t)
	return &env{t: t, rdb: rdb, ns: ns, keys: wire.NewKeys(ns), client: rdb}
}

// start starts a node on the env's Redis and namespace, stopped when the test ends, with the
// test hooks given (at most one).
func (v *env) start(o Options, hooks ...testHooks) *Exq {
	v.t.Helper()
	if o.Redis == nil && o.RedisURL == "" {
		o.Redis = v.client
	}
	o.Namespace = v.ns
	if o.Logger == nil {
		o.Logger = testLogger()
	}
	if o.PollTimeout == 0 {
		o.PollTimeout = 20 * time.Millisecond
	}
	if o.SchedulerPollTimeout == 0 {
		o.SchedulerPollTimeout = 20 * time.Millisecond
	}
	var h testHooks
	if len(hooks) > 0 {
		h = hooks[0]
	}
	e, err := start(context.Background(), o, h)
	require.NoError(v.t, err)
	v.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(v.t, e.Stop(ctx))
	})
	return e
}

// push LPUSHes a raw document onto queue q, as another runtime would.
func (v *env) push(q, raw string) {
	v.t.Helper()
	ctx := context.Background()
	require.NoError(v.t, v.rdb.SAdd(ctx, v.keys.Queues(), q).Err())
	require.NoError(v.t, v.rdb.LPush(ctx, v.keys.Queue(q), raw).Err())
}

func (v *env) list(key string) []string {
	v.t.Helper()
	l, err := v.rdb.LRange(context.Background(), key, 0, -1).Result()
	require.NoError(v.t, err)
	return l
}

func (v *env) zset(key string) []redis.Z {
	v.t.Helper()
	z, err := v.rdb.ZRangeWithScores(context.Background(), key, 0, -1).Result()
	require.NoError(v.t, err)
	return z
}

func (v *env) zcard(key string) int {
	v.t.Helper()
	n, err := v.rdb.ZCard(context.Background(), key).Result()
	require.NoError(v.t, err)
	return int(n)
}

// decode parses a job document into a map, failing the test if it is not JSON.
func decode(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	require.NoError(t, d.Decode(&m), raw)
	return m
}

// recorder is a worker that records every run.
type recorder struct {
	mu   sync.Mutex
	runs []*Job
	fn   func(ctx context.Context, job *Job) error
}

func (r *recorder) Perform(ctx context.Context, job *Job) error {
	r.mu.Lock()
	r.runs = append(r.runs, job)
	r.mu.Unlock()
	if r.fn != nil {
		return r.fn(ctx, job)
	}
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

func (r *recorder) jids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.runs))
	for i, j := range r.runs {
		out[i] = j.JID
	}
	return out
}

// fixedClock is a settable clock for the options' now.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// clientVia returns a client for the env's Redis that connects through addr (a proxy).
func (v *env) clientVia(addr string) *redis.Client {
	opts := *v.rdb.Options()
	opts.Addr = addr
	c := redis.NewClient(&opts)
	v.t.Cleanup(func() { _ = c.Close() })
	return c
}

func redisZ(t time.Time, member string) redis.Z {
	return redis.Z{Score: float64(t.UnixMicro()) / 1e6, Member: member}
}

// take moves the oldest job of queue q into node's backup list, as a node's fetch does.
func (v *env) take(q, node string) {
	v.t.Helper()
	require.NoError(v.t, v.rdb.Do(context.Background(), "RPOPLPUSH", v.keys.Queue(q), v.keys.Backup(node, q)).Err())
}

func keysFor(ns string) wire.Keys { return wire.NewKeys(ns) }
