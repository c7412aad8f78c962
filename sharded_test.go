package exq

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// shardedEnv gives a test three namespaces on the single test Redis, deleted when it ends.
func shardedEnv(t *testing.T) (*redis.Client, []string) {
	rdb, ns := testutil.Redis(t)
	names := []string{ns + "-0", ns + "-1", ns + "-2"}
	t.Cleanup(func() {
		for _, n := range names {
			testutil.DeleteNamespace(rdb, n)
		}
	})
	return rdb, names
}

func queueLens(t *testing.T, rdb *redis.Client, names []string, q string) []int64 {
	var out []int64
	for _, ns := range names {
		n, err := rdb.LLen(context.Background(), wire.NewKeys(ns).Queue(q)).Result()
		require.NoError(t, err)
		out = append(out, n)
	}
	return out
}

// ByQueue keeps every job of a queue in one shard; ByJID spreads one queue over all of them;
// a unique job meets its lock whatever its jid; EnqueueAll splits its batch per shard; the
// API sums and finds across shards.
func TestShardedClientRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, names := shardedEnv(t)
	co := ClientOptions{RedisURL: testutil.RedisURL(t), Logger: testLogger()}

	byQueue, err := NewShardedClient(ctx, co, ShardOptions{Namespaces: names})
	require.NoError(t, err)
	defer byQueue.Close()
	for i := range 30 {
		_, err := byQueue.Enqueue(ctx, "q"+strconv.Itoa(i%3), "W", []any{i})
		require.NoError(t, err)
	}
	for q := range 3 {
		lens := queueLens(t, rdb, names, "q"+strconv.Itoa(q))
		nonEmpty := 0
		for _, n := range lens {
			if n > 0 {
				nonEmpty++
				assert.EqualValues(t, 10, n)
			}
		}
		assert.Equal(t, 1, nonEmpty, "queue q%d in one shard: %v", q, lens)
	}

	byJID, err := NewShardedClient(ctx, co, ShardOptions{Namespaces: names, By: ByJID})
	require.NoError(t, err)
	defer byJID.Close()
	specs := make([]JobSpec, 300)
	for i := range specs {
		specs[i] = JobSpec{Queue: "hot", Class: "W", Args: []any{i}}
	}
	res, err := byJID.EnqueueAll(ctx, specs)
	require.NoError(t, err)
	require.Len(t, res, 300)
	lens := queueLens(t, rdb, names, "hot")
	for _, n := range lens {
		assert.Greater(t, n, int64(60), "ByJID spreads one queue: %v", lens)
	}

	// The same unique job twice: different jids, so ByJID would split them, but the token
	// routes both to one shard, where the second meets the lock.
	u := Unique(UniqueOpts{Until: UntilExpiry, For: time.Hour})
	for i := range 10 {
		first, err := byJID.Enqueue(ctx, "u", "W", []any{i}, u)
		require.NoError(t, err)
		holder, err := byJID.Enqueue(ctx, "u", "W", []any{i}, u)
		var conflict *UniqueConflictError
		require.True(t, errors.As(err, &conflict), "job %d: %v", i, err)
		assert.Equal(t, first, holder)
	}

	api, err := NewShardedAPI(ctx, co, ShardOptions{Namespaces: names})
	require.NoError(t, err)
	defer api.Close()
	sizes, err := api.QueueSizes(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"q0": 10, "q1": 10, "q2": 10, "hot": 300, "u": 10}, sizes)
	qs, err := api.Queues(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"hot", "q0", "q1", "q2", "u"}, qs)

	var jids []string
	for i := range 9 {
		jid, err := byJID.EnqueueIn(ctx, "later", "W", time.Hour, []any{i})
		require.NoError(t, err)
		jids = append(jids, jid)
	}
	n, err := api.Size(ctx, ScheduledSet)
	require.NoError(t, err)
	assert.EqualValues(t, 9, n)
	page, err := api.List(ctx, ScheduledSet, ListOptions{Size: 100})
	require.NoError(t, err)
	assert.Len(t, page, 9)
	seen := map[int]bool{}
	for _, jid := range jids {
		rec, shard, err := api.Find(ctx, ScheduledSet, jid)
		require.NoError(t, err)
		seen[shard] = true
		j, err := rec.Job()
		require.NoError(t, err)
		assert.Equal(t, jid, j.JID)
	}
	assert.Greater(t, len(seen), 1, "scheduled jobs in more than one shard")
	_, shard, err := api.RequeueJob(ctx, ScheduledSet, jids[4])
	require.NoError(t, err)
	_, inQueue, err := api.FindInQueue(ctx, "later", jids[4])
	require.NoError(t, err)
	assert.Equal(t, shard, inQueue, "a requeued job stays in its shard")
	_, _, err = api.RequeueJob(ctx, ScheduledSet, jids[4])
	require.ErrorIs(t, err, ErrJobNotFound)
}

func TestShardedOptionsAreValidated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		o    ClientOptions
		s    ShardOptions
		want string
	}{
		{"no namespaces", ClientOptions{}, ShardOptions{}, "ShardOptions.Namespaces: at least one"},
		{"twice", ClientOptions{}, ShardOptions{Namespaces: []string{"a", "a"}}, `"a" is listed twice`},
		{"empty", ClientOptions{}, ShardOptions{Namespaces: []string{"a", ""}}, "a namespace is empty"},
		{"mode", ClientOptions{}, ShardOptions{Namespaces: []string{"a"}, By: 7}, "By: unknown mode 7"},
		{"namespace set", ClientOptions{Namespace: "x"}, ShardOptions{Namespaces: []string{"a"}}, "Namespace: must be unset"},
	} {
		_, err := NewShardedClient(ctx, tc.o, tc.s)
		require.ErrorIs(t, err, ErrInvalidOptions, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
	_, err := StartSharded(ctx, Options{Namespace: "x"}, ShardOptions{Namespaces: []string{"a"}})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// masterCPU reads used_cpu_sys + used_cpu_user (seconds) of the server at addr.
func masterCPU(t *testing.T, addr string) float64 {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "cpu").Result()
	require.NoError(t, err)
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			sum += f
		}
	}
	return sum
}

// Three shards on the three masters of a real cluster: every job runs exactly once, and the
// masters share the work (each master's Redis CPU within 25 % of the others'). About 4 s
// (7 s with -race), so CI runs it whole.
func TestShardedSpreadsJobsOverMasters(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	ctx := context.Background()
	const total = 30000
	names, err := ShardNamespaces(ctx, c.Client, "exq", 3)
	require.NoError(t, err)
	masters := map[string]string{}
	for _, ns := range names {
		m, _, err := c.MasterAndReplicaOf(ctx, c.Addrs()[0], ns+":x")
		require.NoError(t, err)
		masters[m] = ns
	}
	require.Len(t, masters, 3, "one shard per master: %v", names)
	t.Logf("shards %v on masters %v", names, masters)

	before := map[string]float64{}
	for m := range masters {
		before[m] = masterCPU(t, m)
	}
	start := time.Now()
	cl, err := NewShardedClient(ctx, ClientOptions{RedisURL: c.URL(), Logger: testLogger()},
		ShardOptions{Namespaces: names, By: ByJID})
	require.NoError(t, err)
	defer cl.Close()
	want := map[string]bool{}
	for b := 0; b < total; b += 500 {
		specs := make([]JobSpec, 0, 500)
		for i := b; i < b+500 && i < total; i++ {
			specs = append(specs, JobSpec{Queue: "default", Class: "W", Args: []any{i}})
		}
		res, err := cl.EnqueueAll(ctx, specs)
		require.NoError(t, err)
		for _, r := range res {
			want[r.JID] = true
		}
	}
	require.Len(t, want, total)

	var mu sync.Mutex
	runs := map[string]int{}
	node, err := StartSharded(ctx, Options{RedisURL: c.URL(), Logger: testLogger(), Concurrency: 50,
		Workers: map[string]Worker{"W": WorkerFunc(func(ctx context.Context, job *Job) error {
			mu.Lock()
			runs[job.JID]++
			mu.Unlock()
			return nil
		})}}, ShardOptions{Namespaces: names, By: ByJID})
	require.NoError(t, err)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		n := len(runs)
		mu.Unlock()
		if n >= total || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	api := node.API()
	testutil.WaitFor(t, "the stats count every job", func() bool {
		s, err := api.Stats(ctx)
		return err == nil && s.Processed == int64(total)
	})
	require.NoError(t, node.Stop(ctx))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, runs, total, "every job ran")
	for jid, n := range runs {
		require.True(t, want[jid], "ran a job never enqueued: %s", jid)
		require.Equal(t, 1, n, "job %s ran %d times", jid, n)
	}
	lo, hi := 0.0, 0.0
	for m, ns := range masters {
		d := masterCPU(t, m) - before[m]
		t.Logf("master %s (shard %s): Redis CPU %.3f s, %.1f µs/job", m, ns, d, d*1e6/float64(total))
		if lo == 0 || d < lo {
			lo = d
		}
		hi = max(hi, d)
	}
	t.Logf("%d jobs enqueued and run exactly once in %s (%.0f jobs/s); CPU max/min %.2f", total,
		elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), hi/lo)
	assert.LessOrEqual(t, hi, 1.25*lo, "the busiest master within 25 %% of the idlest")
}

// QueueStates over shards sums sizes, leases in use and starts, reports a queue paused in any
// shard as paused, and takes the limits from the shards that publish them (each shard runs
// the queue with its own limit).
func TestShardedQueueStatesMergesShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, names := shardedEnv(t)
	url := testutil.RedisURL(t)
	enq := func(i int, q string, n int) {
		cl, err := NewClient(ctx, ClientOptions{RedisURL: url, Namespace: names[i], Logger: testLogger()})
		require.NoError(t, err)
		defer cl.Close()
		for range n {
			_, err := cl.Enqueue(ctx, q, "W", []any{i})
			require.NoError(t, err)
		}
	}
	now, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	limited := func(i int, q string, leases, expired, starts int) {
		k := wire.NewKeys(names[i])
		// A rate per hour: starts count within the rate's window, and a loaded run can take
		// more than a second between writing them and reading the states.
		require.NoError(t, rdb.HSet(ctx, k.Limits(), q, `{"global_limit":5,"rate":200,"rate_per_ms":3600000}`).Err())
		for n := range leases {
			require.NoError(t, rdb.ZAdd(ctx, k.Leases(q), redis.Z{Score: float64(now.Add(time.Hour).Unix()), Member: "node:" + strconv.Itoa(n)}).Err())
		}
		for n := range expired {
			require.NoError(t, rdb.ZAdd(ctx, k.Leases(q), redis.Z{Score: float64(now.Add(-time.Hour).Unix()), Member: "gone:" + strconv.Itoa(n)}).Err())
		}
		for n := range starts {
			require.NoError(t, rdb.ZAdd(ctx, k.Starts(q), redis.Z{Score: float64(now.UnixMicro()) / 1e6, Member: "node:" + strconv.Itoa(n)}).Err())
		}
	}
	enq(0, "mail", 2)
	enq(1, "mail", 1)
	enq(0, "other", 1)
	limited(1, "mail", 2, 1, 3) // shard 0 has no limits for mail: the first non-zero counts
	limited(2, "mail", 1, 0, 1)

	api, err := NewShardedAPI(ctx, ClientOptions{RedisURL: url, Logger: testLogger()}, ShardOptions{Namespaces: names})
	require.NoError(t, err)
	defer api.Close()
	require.NoError(t, api.Shards()[2].PauseQueue(ctx, "later")) // paused in one shard only

	states, err := api.QueueStates(ctx)
	require.NoError(t, err)
	assert.Equal(t, []QueueState{
		{Name: "later", Paused: true},
		{Name: "mail", Size: 3, GlobalLimit: 5, InUse: 3, Rate: Rate{N: 200, Per: time.Hour}, Started: 4},
		{Name: "other", Size: 1},
	}, states)
}
