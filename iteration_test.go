package exq

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// iterCount counts, per item, how often an iteration processed it, and the hooks called.
type iterCount struct {
	mu    sync.Mutex
	items map[int]int
	hooks []string
}

func newIterCount() *iterCount { return &iterCount{items: map[int]int{}} }

func (c *iterCount) item(i int) {
	c.mu.Lock()
	c.items[i]++
	c.mu.Unlock()
}

func (c *iterCount) hook(name string) func(context.Context, *Job, int, int) {
	return func(context.Context, *Job, int, int) {
		c.mu.Lock()
		c.hooks = append(c.hooks, name)
		c.mu.Unlock()
	}
}

func (c *iterCount) snapshot() (items map[int]int, hooks []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	items = make(map[int]int, len(c.items))
	for k, v := range c.items {
		items[k] = v
	}
	return items, append([]string(nil), c.hooks...)
}

// countingIteration walks items 0..n-1 (the cursor is the next index; the arg is n), counting
// each in c, and waits for gate (if not nil) before item `at`.
func countingIteration(c *iterCount, every time.Duration, at int, gate <-chan struct{}) Iteration[int, int] {
	return Iteration[int, int]{
		SaveEvery: every,
		Each: func(ctx context.Context, job *Job, n, cursor int) (int, bool, error) {
			if gate != nil && cursor == at {
				select {
				case <-gate:
				case <-ctx.Done():
					return cursor, false, ctx.Err()
				}
			}
			c.item(cursor)
			return cursor + 1, cursor+1 >= n, nil
		},
		OnStart: c.hook("start"), OnResume: c.hook("resume"), OnStop: c.hook("stop"),
		OnCancel: c.hook("cancel"), OnComplete: c.hook("complete"),
	}
}

func (v *env) waitFor(what string, cond func() bool) {
	v.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			v.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestIterationWalksEveryItemOnceAndMarksItsStateDone(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := newIterCount()
	e := v.start(Options{Queues: []Queue{{Name: "it", Concurrency: 1}},
		Workers: map[string]Worker{"Walk": countingIteration(c, -1, -1, nil)}})
	jid, err := e.Enqueue(context.Background(), "it", "Walk", []any{500})
	require.NoError(t, err)
	v.waitFor("the iteration's end", func() bool { _, h := c.snapshot(); return len(h) == 2 })
	items, hooks := c.snapshot()
	require.Len(t, items, 500)
	for i := 0; i < 500; i++ {
		require.Equal(t, 1, items[i], "item %d", i)
	}
	require.Equal(t, []string{"start", "complete"}, hooks)
	f := v.rdb.HGetAll(context.Background(), v.keys.Iteration(jid)).Val()
	require.Equal(t, "1", f["ex"])
	require.Equal(t, "500", f["c"])
	require.Equal(t, "1", f["exq_done"])
	ttl := v.rdb.TTL(context.Background(), v.keys.Iteration(jid)).Val()
	require.True(t, ttl > 0 && ttl <= 24*time.Hour, "ttl %s", ttl)
}

// A stopping node interrupts the iteration at its next item: the cursor is saved, the job goes
// back to the front of its queue with its retry_count unchanged, and the next node resumes it
// from that cursor (OnResume, no item twice).
func TestIterationInterruptedByStopResumesOnTheNextNodeWithoutARetry(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := newIterCount()
	gate := make(chan struct{})
	var atGate atomic.Bool
	it := countingIteration(c, time.Hour, 40, gate)
	each := it.Each
	it.Each = func(ctx context.Context, job *Job, n, cursor int) (int, bool, error) {
		if cursor == 40 {
			atGate.Store(true)
		}
		return each(ctx, job, n, cursor)
	}
	first, err := start(context.Background(), Options{Redis: v.client, Namespace: v.ns, Logger: testLogger(), PollTimeout: 20 * time.Millisecond,
		Queues: []Queue{{Name: "it", Concurrency: 1}}, Workers: map[string]Worker{"Walk": it}}, testHooks{})
	require.NoError(t, err)
	jid, err := first.Enqueue(context.Background(), "it", "Walk", []any{100})
	require.NoError(t, err)
	v.waitFor("item 40", atGate.Load)
	stopped := make(chan error, 1)
	go func() { stopped <- first.Stop(context.Background()) }()
	v.waitFor("the stop to begin", func() bool {
		select {
		case <-first.Done():
			return true
		default:
			return false
		}
	})
	close(gate) // item 40 ends; the iteration sees the stop before item 41
	require.NoError(t, <-stopped)

	raws := v.list(v.keys.Queue("it"))
	require.Len(t, raws, 1, "the interrupted job is back in its queue")
	require.NotContains(t, raws[0], "retry_count", "no retry counted")
	require.Equal(t, 0, v.zcard(v.keys.Retry()))
	f := v.rdb.HGetAll(context.Background(), v.keys.Iteration(jid)).Val()
	require.Equal(t, "41", f["c"], "the cursor of the next item is saved")
	require.Equal(t, "1", f["ex"])

	v.start(Options{Queues: []Queue{{Name: "it", Concurrency: 1}}, Workers: map[string]Worker{"Walk": it}})
	v.waitFor("the resumed iteration's end", func() bool { items, _ := c.snapshot(); return len(items) == 100 })
	v.waitFor("complete", func() bool { _, h := c.snapshot(); return h[len(h)-1] == "complete" })
	items, hooks := c.snapshot()
	for i := 0; i < 100; i++ {
		require.Equal(t, 1, items[i], "item %d", i)
	}
	require.Equal(t, []string{"start", "stop", "resume", "complete"}, hooks)
	require.Equal(t, "2", v.rdb.HGet(context.Background(), v.keys.Iteration(jid), "ex").Val())
}

// Sidekiq's cancel! (HSETNX it-<jid> cancelled <unix>) written while the job runs stops it at
// its next save: OnCancel, the dead set with "Canceled", no retry, and the state removed.
func TestIterationCancelFlagStopsTheJobAtItsNextSave(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := newIterCount()
	gate := make(chan struct{})
	e := v.start(Options{Queues: []Queue{{Name: "it", Concurrency: 1}},
		Workers: map[string]Worker{"Walk": countingIteration(c, -1, 10, gate)}})
	jid, err := e.Enqueue(context.Background(), "it", "Walk", []any{1000})
	require.NoError(t, err)
	v.waitFor("item 9", func() bool { items, _ := c.snapshot(); return items[9] == 1 })
	ctx := context.Background()
	require.NoError(t, v.rdb.HSetNX(ctx, v.keys.Iteration(jid), "cancelled", time.Now().Unix()).Err())
	close(gate)
	v.waitFor("the dead job", func() bool { return v.zcard(v.keys.Dead()) == 1 })
	items, hooks := c.snapshot()
	require.LessOrEqual(t, len(items), 12, "stops at the save after item 10")
	require.Equal(t, []string{"start", "cancel"}, hooks)
	dead := decode(t, v.zset(v.keys.Dead())[0].Member.(string))
	require.Equal(t, "Canceled", dead["error_message"])
	require.Equal(t, 0, v.zcard(v.keys.Retry()))
	require.Zero(t, v.rdb.Exists(ctx, v.keys.Iteration(jid)).Val(), "the state is removed, as Sidekiq's cleanup does")
}

// CancelJob of a waiting job moves it to the dead set wherever it waits, and it never runs; a
// jid found nowhere is ErrJobNotFound and leaves no key behind.
func TestCancelJobBuriesAWaitingJobWhereverItWaits(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"queue", "schedule", "retry", "key's list", "key's delayed set"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
			require.NoError(t, err)
			defer c.Close()
			var jid string
			switch where {
			case "queue":
				jid, err = c.Enqueue(ctx, "q", "Walk", []any{1})
			case "schedule":
				jid, err = c.EnqueueIn(ctx, "q", "Walk", time.Hour, []any{1})
			case "retry":
				jid = "0123456789abcdef01234567"
				raw := `{"class":"Walk","queue":"q","args":[1],"jid":"` + jid + `","retry":true,"retry_count":0}`
				err = v.rdb.ZAdd(ctx, v.keys.Retry(), redisZ(time.Now().Add(time.Hour), raw)).Err()
			case "key's list":
				_, err = c.Enqueue(ctx, "q", "Walk", []any{0}, Key("a")) // another job of the key stays
				require.NoError(t, err)
				jid, err = c.Enqueue(ctx, "q", "Walk", []any{1}, Key("a"))
			case "key's delayed set":
				jid, err = c.EnqueueIn(ctx, "q", "Walk", time.Hour, []any{1}, Key("a"))
			}
			require.NoError(t, err)
			api := NewAPIForTest(t, v)
			node, err := api.CancelJob(ctx, jid)
			require.NoError(t, err)
			require.Empty(t, node)
			require.Equal(t, 1, v.zcard(v.keys.Dead()))
			require.Empty(t, v.list(v.keys.Queue("q")))
			require.Equal(t, 0, v.zcard(v.keys.Schedule())+v.zcard(v.keys.Retry())+v.zcard(v.keys.KeyDelayed("q")))
			for _, raw := range v.list(v.keys.KeyJobs("q", "a")) {
				require.NotContains(t, raw, jid, "the job left its key's list")
			}
			require.Zero(t, v.rdb.Exists(ctx, v.keys.Iteration(jid)).Val(), "no flag is left for a job buried where it waited")

			_, err = api.CancelJob(ctx, jid)
			require.ErrorIs(t, err, ErrJobNotFound)
			require.Zero(t, v.rdb.Exists(ctx, v.keys.Iteration(jid)).Val())
		})
	}
}

// CancelJob of a running iterable job stops it at its next item (a CANCEL signal ends its
// context; its flag is also set): OnCancel, dead, not retried.
func TestCancelJobStopsARunningIteration(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := newIterCount()
	it := countingIteration(c, time.Hour, -1, nil)
	each := it.Each
	it.Each = func(ctx context.Context, job *Job, n, cursor int) (int, bool, error) {
		time.Sleep(time.Millisecond)
		return each(ctx, job, n, cursor)
	}
	e := v.start(Options{Queues: []Queue{{Name: "it", Concurrency: 1}}, HeartbeatInterval: 200 * time.Millisecond,
		Workers: map[string]Worker{"Walk": it}})
	jid, err := e.Enqueue(context.Background(), "it", "Walk", []any{1_000_000})
	require.NoError(t, err)
	api := e.API()
	// Running: its OnStart ran (a job cancelled before its run reads its state is cancelled
	// without starting), and the busy list shows it.
	v.waitFor("the iteration started", func() bool {
		_, hooks := c.snapshot()
		return len(hooks) > 0
	})
	v.waitFor("the busy list", func() bool {
		b, err := api.BusyJobs(context.Background())
		return err == nil && len(b) == 1
	})
	node, err := api.CancelJob(context.Background(), jid)
	require.NoError(t, err)
	require.Equal(t, e.NodeID(), node)
	v.waitFor("the dead job", func() bool { return v.zcard(v.keys.Dead()) == 1 })
	_, hooks := c.snapshot()
	require.Equal(t, []string{"start", "cancel"}, hooks)
	require.Equal(t, 0, v.zcard(v.keys.Retry()))
}
