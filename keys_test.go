package exq

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// keyLog records, per key, the jobs as they start and end, and the most that ran at once.
type keyLog struct {
	mu      sync.Mutex
	running map[string]int
	most    map[string]int
	starts  map[string][]string // jids in start order
	done    map[string]bool     // jids that succeeded
	// wrongKey are the jids whose Job.Key was not their key (their arg).
	wrongKey []string
}

func newKeyLog() *keyLog {
	return &keyLog{running: map[string]int{}, most: map[string]int{}, starts: map[string][]string{}, done: map[string]bool{}}
}

// worker runs for d and fails when fail says so; it records the job's key from its args.
func (l *keyLog) worker(d time.Duration, fail func(job *Job) bool) Worker {
	return l.workerFor(func(*Job) time.Duration { return d }, fail)
}

// workerFor is worker with a run time per job.
func (l *keyLog) workerFor(d func(job *Job) time.Duration, fail func(job *Job) bool) Worker {
	return WorkerFunc(func(ctx context.Context, job *Job) error {
		var key string
		_ = job.Bind(&key)
		l.mu.Lock()
		if job.Key() != key {
			l.wrongKey = append(l.wrongKey, job.JID)
		}
		l.running[key]++
		if l.running[key] > l.most[key] {
			l.most[key] = l.running[key]
		}
		l.starts[key] = append(l.starts[key], job.JID)
		l.mu.Unlock()
		time.Sleep(d(job))
		failed := fail != nil && fail(job)
		l.mu.Lock()
		l.running[key]--
		if !failed {
			l.done[job.JID] = true
		}
		l.mu.Unlock()
		if failed {
			return fmt.Errorf("planned failure")
		}
		return nil
	})
}

func (l *keyLog) succeeded() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done)
}

// A keyed job waits in its key's list and its key in the ready set: never in the queue's list,
// which Sidekiq and Exq nodes pop.
func TestKeyedJobsNeverWaitInTheQueueList(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	jid, err := c.Enqueue(ctx, "k", "W", []any{"a"}, Key("tenant-1"))
	require.NoError(t, err)
	_, err = c.EnqueueIn(ctx, "k", "W", time.Hour, []any{"b"}, Key("tenant-1"))
	require.NoError(t, err)
	assert.Empty(t, v.list(v.keys.Queue("k")))
	assert.Zero(t, v.zcard(v.keys.Schedule()))
	waiting := v.list(v.keys.KeyJobs("k", "tenant-1"))
	require.Len(t, waiting, 1)
	assert.Equal(t, jid, decode(t, waiting[0])["jid"])
	assert.Equal(t, "tenant-1", decode(t, waiting[0])["exq_key"])
	assert.Equal(t, []string{"tenant-1"}, memberNames(v.zset(v.keys.KeyReady("k"))))
	assert.Equal(t, 1, v.zcard(v.keys.KeyDelayed("k")))
}

// A typed job derives its key from its args; a Key option wins.
func TestKeyedArgsGiveTheirJobsAKey(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	_, err = EnqueueArgs(ctx, c, tenantSync{Tenant: "acme"})
	require.NoError(t, err)
	_, err = EnqueueArgs(ctx, c, tenantSync{Tenant: "acme"}, Key("other"))
	require.NoError(t, err)
	assert.Len(t, v.list(v.keys.KeyJobs("sync", "acme")), 1)
	assert.Len(t, v.list(v.keys.KeyJobs("sync", "other")), 1)
	_, err = c.Enqueue(ctx, "k", "W", nil, Key(""))
	assert.ErrorIs(t, err, ErrInvalidJob)
	_, err = c.EnqueueAll(ctx, []JobSpec{{Queue: "k", Class: "W", Options: []EnqueueOption{Key("a"), Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour})}}})
	assert.ErrorIs(t, err, ErrInvalidJob, "Key with Unique is refused in EnqueueAll")
	res, err := c.EnqueueAll(ctx, []JobSpec{{Queue: "k", Class: "W", Options: []EnqueueOption{Key("a")}}, {Queue: "k", Class: "W"},
		{Queue: "k", Class: "W", In: time.Hour, Options: []EnqueueOption{Key("a")}}})
	require.NoError(t, err)
	assert.Len(t, res, 3)
	assert.Len(t, v.list(v.keys.KeyJobs("k", "a")), 1)
	assert.Len(t, v.list(v.keys.Queue("k")), 1, "only the job without a key is in the queue's list")
	assert.Equal(t, 1, v.zcard(v.keys.KeyDelayed("k")))
}

type tenantSync struct {
	Tenant string `json:"tenant"`
}

func (tenantSync) Class() string    { return "Sync" }
func (tenantSync) Queue() string    { return "sync" }
func (s tenantSync) JobKey() string { return s.Tenant }
func memberNames(zs []redis.Z) []string {
	out := make([]string, len(zs))
	for i, z := range zs {
		out[i], _ = z.Member.(string)
	}
	return out
}

// Two nodes, Concurrency 2 per key: no key ever runs more than 2 jobs at once across the
// nodes, every job runs once (counted by jid), and nothing keyed is left behind.
func TestKeyConcurrencyHoldsAcrossNodes(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	log := newKeyLog()
	w := log.worker(20*time.Millisecond, nil)
	opts := func() Options {
		return Options{Queues: []Queue{{Name: "k", Concurrency: 6, Keys: KeyPolicy{Concurrency: 2}}},
			Workers: map[string]Worker{"W": w}}
	}
	// Every job waits before the nodes start, so that each key has a backlog and its limit is
	// reached however slowly the machine enqueues (one at a time beside the nodes, a loaded
	// machine could enqueue a key's next job after its last one ended).
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()
	keys := []string{"a", "b", "c"}
	var specs []JobSpec
	for i := 0; i < 30; i++ {
		k := keys[i%3]
		specs = append(specs, JobSpec{Queue: "k", Class: "W", Args: []any{k}, Options: []EnqueueOption{Key(k)}})
	}
	jids, err := c.EnqueueAll(ctx, specs)
	require.NoError(t, err)
	v.start(opts())
	v.start(opts())
	require.Eventually(t, func() bool { return log.succeeded() == len(jids) }, 20*time.Second, 10*time.Millisecond)
	for _, r := range jids {
		require.NoError(t, r.Err)
		assert.True(t, log.done[r.JID], r.JID)
	}
	for _, k := range keys {
		assert.LessOrEqual(t, log.most[k], 2, "key %s", k)
		assert.Len(t, log.starts[k], 10, "key %s ran each of its jobs once", k)
	}
	assert.Equal(t, 2, log.most["a"], "the limit is used, not only respected")
	require.Eventually(t, func() bool {
		n, err := v.rdb.Exists(ctx, v.keys.KeyReady("k"), v.keys.KeyBlocked("k"), v.keys.KeyJobs("k", "a")).Result()
		return err == nil && n == 0
	}, 5*time.Second, 10*time.Millisecond, "no per-key state is left for keys with nothing waiting")
}

// A sequence runs one job of a key at a time in enqueue order; a failed job holds the key's
// later jobs until it succeeds.
func TestSequenceRunsInOrderAndAFailureHoldsItsKey(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	log := newKeyLog()
	var mu sync.Mutex
	failedOnce := map[string]bool{}
	fail := func(job *Job) bool {
		mu.Lock()
		defer mu.Unlock()
		// Every third job fails its first run.
		n, _ := job.Meta("n")
		if i, err := strconv.Atoi(n); err == nil && i%3 == 0 && !failedOnce[job.JID] {
			failedOnce[job.JID] = true
			return true
		}
		return false
	}
	opts := func() Options {
		return Options{Queues: []Queue{{Name: "s", Concurrency: 4, Keys: KeyPolicy{Sequence: true}}},
			Workers: map[string]Worker{"W": log.worker(2*time.Millisecond, fail)},
			Backoff: func(int, *Job) time.Duration { return 30 * time.Millisecond }}
	}
	e1 := v.start(opts())
	v.start(opts())
	want := map[string][]string{}
	for i := 0; i < 24; i++ {
		k := []string{"x", "y"}[i%2]
		jid, err := e1.Enqueue(ctx, "s", "W", []any{k}, Key(k), Meta("n", fmt.Sprint(i)))
		require.NoError(t, err)
		want[k] = append(want[k], jid)
	}
	require.Eventually(t, func() bool { return log.succeeded() == 24 }, 20*time.Second, 10*time.Millisecond)
	log.assertRanInOrderWithRetries(t, want)
	assert.NotEmpty(t, failedOnce)
}

// Fair share: a key with a large backlog delays a new key's first job by at most one turn.
func TestANewKeyIsServedWithinOneTurnOfABacklog(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jq := testStore(v.client, v.keys, "n")
	for i := 0; i < 200; i++ {
		_, err := jq.EnqueueKeyed(ctx, store.BatchItem{Queue: "f", Job: fmt.Sprintf(`{"class":"W","args":[],"jid":"a%d","exq_key":"A"}`, i)}, "A")
		require.NoError(t, err)
	}
	req := []store.FetchReq{{Queue: "f", N: 1, Keys: &store.KeyPolicy{}}}
	res, err := jq.Fetch(ctx, req, time.Minute, time.Second)
	require.NoError(t, err)
	require.Len(t, res.Jobs[0], 1)
	_, err = jq.EnqueueKeyed(ctx, store.BatchItem{Queue: "f", Job: `{"class":"W","args":[],"jid":"b0","exq_key":"B"}`}, "B")
	require.NoError(t, err)
	var got []string
	for range 3 {
		res, err := jq.Fetch(ctx, req, time.Minute, time.Second)
		require.NoError(t, err)
		require.Len(t, res.Jobs[0], 1)
		got = append(got, res.JobKeys[0][0])
	}
	assert.Contains(t, got[:2], "B", "B waits one turn at most: %v", got)
	assert.Equal(t, []string{"A", "B", "A"}, got)
}

// A key at its limit or its rate leaves the ready set for the blocked set until the time its
// limit frees it, so that later fetches do not look at it; a release readies it at once.
func TestAKeyAtItsLimitWaitsInTheBlockedSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		policy store.KeyPolicy
		until  time.Duration // how far the blocked score is, about
	}{
		{"concurrency: until its earliest lease lapses (two windows)", store.KeyPolicy{Concurrency: 2}, 2 * time.Minute},
		{"rate: until its oldest start leaves the window", store.KeyPolicy{RateN: 2, RatePer: 10 * time.Second}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			jq := testStore(v.client, v.keys, "n")
			for i := 0; i < 5; i++ {
				_, err := jq.EnqueueKeyed(ctx, store.BatchItem{Queue: "q", Job: fmt.Sprintf(`{"class":"W","args":[],"jid":"j%d","exq_key":"A"}`, i)}, "A")
				require.NoError(t, err)
			}
			p := tc.policy
			req := []store.FetchReq{{Queue: "q", N: 10, Keys: &p, First: 1}}
			res, err := jq.Fetch(ctx, req, time.Minute, time.Second)
			require.NoError(t, err)
			assert.Len(t, res.Jobs[0], 2)
			assert.Empty(t, v.zset(v.keys.KeyReady("q")))
			blocked := v.zset(v.keys.KeyBlocked("q"))
			require.Len(t, blocked, 1)
			now, err := v.rdb.Time(ctx).Result()
			require.NoError(t, err)
			assert.InDelta(t, float64(now.Add(tc.until).UnixMilli())/1000, blocked[0].Score, 2)
			assert.Positive(t, res.HeldBack(0), "the poll loop learns when to look again")
			res, err = jq.Fetch(ctx, req, time.Minute, time.Second)
			require.NoError(t, err)
			assert.Empty(t, res.Jobs[0])
			if p.Concurrency > 0 {
				_, err := jq.AckMany(ctx, []store.AckReq{{Queue: store.KeyScope("q", "A"), Lease: "n:1"}})
				require.NoError(t, err)
				assert.Len(t, v.zset(v.keys.KeyReady("q")), 1, "a release readies the key")
				res, err = jq.Fetch(ctx, req, time.Minute, time.Second)
				require.NoError(t, err)
				assert.Len(t, res.Jobs[0], 1, "one slot freed, one job")
			}
		})
	}
}

// A keyed job handed back (a recovery, a rescue) goes to the head of its key's list: it runs
// before its key's next job; a job without a key goes back to its queue.
func TestAKeyedJobHandedBackRunsBeforeItsKeysNext(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jq := testStore(v.client, v.keys, "n")
	for i := 0; i < 3; i++ {
		_, err := jq.EnqueueKeyed(ctx, store.BatchItem{Queue: "q", Job: fmt.Sprintf(`{"class":"W","args":[],"jid":"j%d","exq_key":"A"}`, i)}, "A")
		require.NoError(t, err)
	}
	v.push("q", `{"class":"W","args":[],"jid":"plain"}`)
	res, err := jq.Fetch(ctx, []store.FetchReq{{Queue: "q", N: 2, Keys: &store.KeyPolicy{}}}, time.Minute, time.Second)
	require.NoError(t, err)
	require.Len(t, res.Jobs[0], 2)
	assert.Equal(t, []string{"A", ""}, res.JobKeys[0], "one slot each for the keys and the queue's own list")
	n, err := jq.RecoverBackup(ctx, "q")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	waiting := v.list(v.keys.KeyJobs("q", "A"))
	require.Len(t, waiting, 3)
	assert.Equal(t, "j0", decode(t, waiting[0])["jid"])
	assert.Equal(t, []string{`{"class":"W","args":[],"jid":"plain"}`}, v.list(v.keys.Queue("q")))
}

// A keyed job that lands in its queue's own list (Sidekiq Web's "retry now" of a dead keyed
// job) is not run by a node's plain fetch: it moves to its key's list.
func TestAKeyedJobInTheQueueListGoesToItsKey(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	v.start(Options{Queues: []Queue{{Name: "q"}}, Workers: map[string]Worker{"W": rec}})
	v.push("q", `{"class":"W","args":[],"queue":"q","jid":"k1","exq_key":"A"}`)
	require.Eventually(t, func() bool { return len(v.list(v.keys.KeyJobs("q", "A"))) == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Zero(t, rec.count())
	assert.Empty(t, v.list(v.keys.Queue("q")))
	assert.Empty(t, v.list(v.keys.Backup(wireNodeOf(t, v), "q")))
}

// wireNodeOf is the node id of the env's only node, from the heartbeats.
func wireNodeOf(t *testing.T, v *env) string {
	t.Helper()
	ids, err := v.rdb.ZRange(context.Background(), v.keys.Heartbeats(), 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, ids, 1)
	return ids[0]
}

var _ = wire.KeyField

// Weights: a key of weight 3 is served three times for one turn of a key of weight 1.
func TestKeyWeightsShareTurns(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jq := testStore(v.client, v.keys, "n")
	for i := 0; i < 20; i++ {
		for _, k := range []string{"A", "B"} {
			_, err := jq.EnqueueKeyed(ctx, store.BatchItem{Queue: "w", Job: fmt.Sprintf(`{"class":"W","args":[],"jid":"%s%d","exq_key":%q}`, k, i, k)}, k)
			require.NoError(t, err)
		}
	}
	req := []store.FetchReq{{Queue: "w", N: 1, Keys: &store.KeyPolicy{Weights: map[string]int{"A": 3}}}}
	count := map[string]int{}
	for range 12 {
		res, err := jq.Fetch(ctx, req, time.Minute, time.Second)
		require.NoError(t, err)
		require.Len(t, res.JobKeys[0], 1)
		count[res.JobKeys[0][0]]++
	}
	assert.Equal(t, map[string]int{"A": 9, "B": 3}, count)
}

// CancelJob of a sequence's failed job, waiting for its retry in the queue's delayed set while
// it holds its key, buries it and frees the key: the key's later jobs run, in order, and the
// cancelled one never runs again.
func TestCancelJobOfAHeldSequencesRetryFreesItsKey(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	cl, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer cl.Close()
	order := enqueueByKey(t, cl, "k", []string{"a"}, 3)
	first := order["a"][0]
	log := newKeyLog()
	v.start(Options{Queues: []Queue{{Name: "k", Concurrency: 2, Keys: KeyPolicy{Sequence: true}}},
		Backoff: func(int, *Job) time.Duration { return time.Hour },
		Workers: map[string]Worker{"W": log.worker(time.Millisecond, func(job *Job) bool { return job.JID == first })}})
	v.waitFor("the first job waits for its retry, holding its key", func() bool {
		return v.rdb.HGet(ctx, v.keys.KeyHeld("k"), "a").Val() == first
	})
	time.Sleep(100 * time.Millisecond)
	assert.Zero(t, log.succeeded(), "the held key starts nothing")
	api := NewAPIForTest(t, v)
	defer api.Close()
	node, err := api.CancelJob(ctx, first)
	require.NoError(t, err)
	assert.Empty(t, node)
	v.waitFor("the key's other jobs succeeded", func() bool { return log.succeeded() == 2 })
	assert.Equal(t, 1, v.zcard(v.keys.Dead()), "the cancelled job is dead")
	assert.Zero(t, v.zcard(v.keys.KeyDelayed("k")), "the retry left the delayed set")
	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Equal(t, order["a"], log.starts["a"], "each job started once, in order, the cancelled one first and only once")
}
