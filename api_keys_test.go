package exq

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
)

// A paused key's jobs never start on either of two nodes while the queue's other keys run:
// neither the jobs enqueued while it is paused, nor the ones the end of its running jobs
// would start (a release readies a key). Resuming it runs every one of them once, by jid.
func TestAPausedKeyStartsNothingOnAnyNodeUntilResumed(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var mu sync.Mutex
	started := map[string][]string{} // key -> jids in start order
	done := map[string]bool{}
	gate := make(chan struct{})
	w := WorkerFunc(func(ctx context.Context, j *Job) error {
		var key string
		_ = j.Bind(&key)
		mu.Lock()
		started[key] = append(started[key], j.JID)
		mu.Unlock()
		if key == "r" {
			<-gate
		}
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		done[j.JID] = true
		mu.Unlock()
		return nil
	})
	count := func(f func() int) int {
		mu.Lock()
		defer mu.Unlock()
		return f()
	}
	opts := func() Options {
		return Options{Queues: []Queue{{Name: "k", Concurrency: 4, Keys: KeyPolicy{Concurrency: 2}}},
			Workers: map[string]Worker{"W": w}}
	}
	e1 := v.start(opts())
	v.start(opts())
	api := e1.API()
	enqueue := func(key string, n int) []string {
		var jids []string
		for range n {
			jid, err := e1.Enqueue(ctx, "k", "W", []any{key}, Key(key))
			require.NoError(t, err)
			jids = append(jids, jid)
		}
		return jids
	}
	// "r" runs two jobs (its limit) that wait on the gate, with five more behind them.
	jids := enqueue("r", 7)
	require.Eventually(t, func() bool { return count(func() int { return len(started["r"]) }) == 2 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, api.PauseKey(ctx, "k", "r"))
	require.NoError(t, api.PauseKey(ctx, "k", "p"))
	jids = append(jids, enqueue("p", 5)...)
	others := append(enqueue("a", 10), enqueue("b", 10)...)
	close(gate) // r's two jobs end: their releases must not ready the paused key
	require.Eventually(t, func() bool {
		return count(func() int {
			n := 0
			for _, jid := range append(others, jids[:2]...) {
				if done[jid] {
					n++
				}
			}
			return n
		}) == len(others)+2
	}, 20*time.Second, 5*time.Millisecond, "the other keys run while p and r are paused")
	time.Sleep(200 * time.Millisecond) // ten polls of each node
	assert.Zero(t, count(func() int { return len(started["p"]) }), "a key paused before its jobs came starts none")
	assert.Equal(t, 2, count(func() int { return len(started["r"]) }), "a paused key's running jobs end and none follows them")
	rep, err := api.Keys(ctx, "k", KeysOptions{})
	require.NoError(t, err)
	require.Len(t, rep.Keys, 2)
	rep.Keys[1].Running = 0 // r's leases may still be on their way to release (the acker batches)
	assert.Equal(t, []KeyState{{Key: "p", Waiting: 5, State: KeyPaused}, {Key: "r", Waiting: 5, State: KeyPaused}}, rep.Keys)
	assert.EqualValues(t, 2, rep.PausedKeys)

	require.NoError(t, api.ResumeKey(ctx, "k", "p"))
	require.NoError(t, api.ResumeKey(ctx, "k", "r"))
	require.Eventually(t, func() bool {
		return count(func() int {
			n := 0
			for _, jid := range jids {
				if done[jid] {
					n++
				}
			}
			return n
		}) == len(jids)
	}, 20*time.Second, 5*time.Millisecond, "resuming runs the keys' waiting jobs")
	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, jids[:7], started["r"], "each of r's jobs ran once")
	assert.ElementsMatch(t, jids[7:], started["p"], "each of p's jobs ran once")
}

// API.Keys lists the keys with the most jobs waiting first, each with its running (live
// leases) and delayed jobs and its state; Limit bounds it; a lapsed lease is not counted.
func TestKeysListsTheTopKeysByBacklogWithTheirState(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	for key, n := range map[string]int{"a": 5, "b": 4, "c": 3, "h": 2, "<x>": 1} {
		for range n {
			_, err := c.Enqueue(ctx, "q", "W", nil, Key(key))
			require.NoError(t, err)
		}
	}
	_, err = c.EnqueueIn(ctx, "q", "W", time.Hour, nil, Key("d"))
	require.NoError(t, err)
	_, err = c.EnqueueIn(ctx, "q", "W", time.Hour, nil, Key("a"))
	require.NoError(t, err)
	api, err := NewAPI(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer api.Close()
	require.NoError(t, api.PauseKey(ctx, "q", "b"))
	now := time.Now()
	until := float64(now.Add(time.Hour).Unix())
	// c at its limit until an hour from now, h held by a failed job, a with one live lease
	// and one lapsed.
	require.NoError(t, v.rdb.ZRem(ctx, v.keys.KeyReady("q"), "c", "h").Err())
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.KeyBlocked("q"), redis.Z{Score: until, Member: "c"}).Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.KeyHeld("q"), "h", "jid1").Err())
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.KeyLeases("q", "a"), redis.Z{Score: until, Member: "n:1"},
		redis.Z{Score: float64(now.Add(-time.Minute).Unix()), Member: "n:2"}).Err())
	blockedAt := time.Unix(int64(until), 0)
	tests := []struct {
		name  string
		limit int
		want  []KeyState
	}{
		{"every key, the largest backlog first", 0, []KeyState{
			{Key: "a", Waiting: 5, Running: 1, Delayed: 1, State: KeyReady},
			{Key: "b", Waiting: 4, State: KeyPaused},
			{Key: "c", Waiting: 3, State: KeyBlocked, BlockedUntil: &blockedAt},
			{Key: "h", Waiting: 2, State: KeyHeld},
			{Key: "<x>", Waiting: 1, State: KeyReady},
			{Key: "d", Delayed: 1, State: KeyIdle},
		}},
		{"the top two", 2, []KeyState{
			{Key: "a", Waiting: 5, Running: 1, Delayed: 1, State: KeyReady},
			{Key: "b", Waiting: 4, State: KeyPaused},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := api.Keys(ctx, "q", KeysOptions{Limit: tt.limit})
			require.NoError(t, err)
			require.Len(t, rep.Keys, len(tt.want))
			for i, w := range tt.want {
				got := rep.Keys[i]
				if w.BlockedUntil != nil {
					require.NotNil(t, got.BlockedUntil, w.Key)
					assert.WithinDuration(t, *w.BlockedUntil, *got.BlockedUntil, time.Second)
					got.BlockedUntil = w.BlockedUntil
				}
				assert.Equal(t, w, got)
			}
			assert.Equal(t, KeysReport{Queue: "q", Keys: rep.Keys, ReadyKeys: 2, BlockedKeys: 1, HeldKeys: 1, PausedKeys: 1, DelayedJobs: 2}, rep)
		})
	}
}

// A queue with more keys than KeySample costs a bounded page of them: Sampled says so, and a
// key beyond the page is not listed however long its backlog. The read writes nothing.
func TestKeysReadsABoundedSampleOfAManyKeyedQueue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	_, err := v.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range KeySample + 100 {
			key := fmt.Sprintf("k%05d", i)
			p.ZAdd(ctx, v.keys.KeyReady("q"), redis.Z{Score: float64(i), Member: key})
			p.RPush(ctx, v.keys.KeyJobs("q", key), `{"class":"W","args":[],"jid":"`+key+`","exq_key":"`+key+`"}`)
		}
		for range 50 { // the last key's backlog, beyond the sample
			p.RPush(ctx, v.keys.KeyJobs("q", fmt.Sprintf("k%05d", KeySample+99)), `{}`)
		}
		return nil
	})
	require.NoError(t, err)
	before, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(t, err)
	api, err := NewAPI(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer api.Close()
	rep, err := api.Keys(ctx, "q", KeysOptions{Limit: 3})
	require.NoError(t, err)
	assert.True(t, rep.Sampled)
	assert.EqualValues(t, KeySample+100, rep.ReadyKeys)
	require.Len(t, rep.Keys, 3)
	assert.Equal(t, "k00000", rep.Keys[0].Key, "ties by key among the sampled ones")
	after, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, before, after)
	assert.Equal(t, KeySample+100, v.zcard(v.keys.KeyReady("q")))
}

// KeyJobs pages a key's waiting jobs, next to run first; a bad queue or key is refused with
// its sentinel and Redis is left unchanged.
func TestKeyJobsPagesAKeysWaitingJobsAndRefusesBadInput(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	var jids []string
	for range 5 {
		jid, err := c.Enqueue(ctx, "q", "W", nil, Key("a"))
		require.NoError(t, err)
		jids = append(jids, jid)
	}
	api, err := NewAPI(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer api.Close()
	page := func(o ListOptions) []string {
		recs, err := api.KeyJobs(ctx, "q", "a", o)
		require.NoError(t, err)
		var out []string
		for _, r := range recs {
			j, err := r.Job()
			require.NoError(t, err)
			assert.Equal(t, "q", j.Queue)
			out = append(out, j.JID)
		}
		return out
	}
	assert.Equal(t, jids[:2], page(ListOptions{Size: 2}))
	assert.Equal(t, jids[2:4], page(ListOptions{Offset: 2, Size: 2}))
	assert.Equal(t, []string{jids[4], jids[3]}, page(ListOptions{Size: 2, Reverse: true}))

	before, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(t, err)
	bad := []struct {
		name, q, key string
		want         error
	}{
		{"an empty key", "q", "", ErrInvalidKey},
		{"a key with a control character", "q", "a\nb", ErrInvalidKey},
		{"a key too long", "q", strings.Repeat("x", MaxKeyBytes+1), ErrInvalidKey},
		{"an empty queue", "", "a", ErrInvalidQueue},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.KeyJobs(ctx, tt.q, tt.key, ListOptions{})
			assert.ErrorIs(t, err, tt.want)
			assert.ErrorIs(t, api.PauseKey(ctx, tt.q, tt.key), tt.want)
			assert.ErrorIs(t, api.ResumeKey(ctx, tt.q, tt.key), tt.want)
		})
	}
	_, err = api.Keys(ctx, "q", KeysOptions{Limit: MaxKeysLimit + 1})
	assert.Error(t, err)
	after, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, before, after)
}

// No path that readies a key readies a paused one: an enqueue, the end of a running job (its
// lease's release), a hand-back of a fetched job, a delayed job that comes due. Each leaves
// the key out of the ready set and a fetch takes nothing; a resume readies it.
func TestAPausedKeyIsReadiedByNoPath(t *testing.T) {
	t.Parallel()
	job := func(i int) string { return fmt.Sprintf(`{"class":"W","args":[],"jid":"j%d","exq_key":"A"}`, i) }
	for _, tc := range []struct {
		name   string
		policy store.KeyPolicy
		// before runs before the pause, after once the key is paused: the path under test.
		before, after func(t *testing.T, v *env, jq *store.Store, req []store.FetchReq)
	}{
		{name: "an enqueue", after: func(t *testing.T, v *env, jq *store.Store, _ []store.FetchReq) {
			_, err := jq.EnqueueKeyed(context.Background(), store.BatchItem{Queue: "q", Job: job(0)}, "A")
			require.NoError(t, err)
		}},
		{name: "the release of a running job's lease", policy: store.KeyPolicy{Concurrency: 1},
			before: func(t *testing.T, v *env, jq *store.Store, req []store.FetchReq) {
				ctx := context.Background()
				for i := range 2 {
					_, err := jq.EnqueueKeyed(ctx, store.BatchItem{Queue: "q", Job: job(i)}, "A")
					require.NoError(t, err)
				}
				res, err := jq.Fetch(ctx, req, time.Minute, time.Second)
				require.NoError(t, err)
				require.Len(t, res.Jobs[0], 1)
			},
			after: func(t *testing.T, v *env, jq *store.Store, _ []store.FetchReq) {
				_, err := jq.AckMany(context.Background(), []store.AckReq{{Queue: store.KeyScope("q", "A"), Lease: "n:1"}})
				require.NoError(t, err)
			}},
		{name: "a fetched job handed back", before: func(t *testing.T, v *env, jq *store.Store, req []store.FetchReq) {
			ctx := context.Background()
			_, err := jq.EnqueueKeyed(ctx, store.BatchItem{Queue: "q", Job: job(0)}, "A")
			require.NoError(t, err)
			res, err := jq.Fetch(ctx, req, time.Minute, time.Second)
			require.NoError(t, err)
			require.Len(t, res.Jobs[0], 1)
		}, after: func(t *testing.T, v *env, jq *store.Store, _ []store.FetchReq) {
			n, err := jq.RecoverBackup(context.Background(), "q")
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}},
		{name: "a delayed job that comes due", before: func(t *testing.T, v *env, jq *store.Store, _ []store.FetchReq) {
			_, err := jq.EnqueueKeyed(context.Background(), store.BatchItem{Queue: "q", Job: job(0), At: time.Now().Add(-time.Minute)}, "A")
			require.NoError(t, err)
		}, after: func(t *testing.T, v *env, jq *store.Store, req []store.FetchReq) {
			res, err := jq.Fetch(context.Background(), req, time.Minute, time.Second)
			require.NoError(t, err)
			assert.Empty(t, res.Jobs[0])
			assert.Len(t, v.list(v.keys.KeyJobs("q", "A")), 1, "the due job moved into its key's list")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			jq := testStore(v.client, v.keys, "n")
			p := tc.policy
			req := []store.FetchReq{{Queue: "q", N: 10, Keys: &p, First: 1}}
			if tc.before != nil {
				tc.before(t, v, jq, req)
			}
			changed, err := jq.PauseKey(ctx, "q", "A", true)
			require.NoError(t, err)
			assert.True(t, changed)
			tc.after(t, v, jq, req)
			assert.Empty(t, v.zset(v.keys.KeyReady("q")), "a paused key is never ready")
			assert.Empty(t, v.zset(v.keys.KeyBlocked("q")), "nor blocked")
			res, err := jq.Fetch(ctx, req, time.Minute, time.Second)
			require.NoError(t, err)
			assert.Empty(t, res.Jobs[0], "a fetch takes none of a paused key's jobs")

			changed, err = jq.PauseKey(ctx, "q", "A", false)
			require.NoError(t, err)
			assert.True(t, changed)
			res, err = jq.Fetch(ctx, req, time.Minute, time.Second)
			require.NoError(t, err)
			assert.Len(t, res.Jobs[0], 1, "a resumed key runs")
		})
	}
}
