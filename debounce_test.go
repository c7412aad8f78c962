package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// scheduled is the schedule set, decoded: member, score and the job's fields.
func (v *env) scheduled() []scheduledJob {
	v.t.Helper()
	var out []scheduledJob
	for _, z := range v.zset(v.keys.Schedule()) {
		raw := z.Member.(string)
		out = append(out, scheduledJob{raw: raw, score: z.Score, fields: decode(v.t, raw)})
	}
	return out
}

type scheduledJob struct {
	raw    string
	score  float64
	fields map[string]any
}

// at is the job's due time from its score, to the microsecond.
func (s scheduledJob) at() time.Time { return wire.ParseTime(s.score) }

func (v *env) client_() *Client {
	v.t.Helper()
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(v.t, err)
	v.t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestDebouncedBurstRunsOnceWithTheLastArgs(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c := v.client_()
	const n = 10
	var first string
	for i := range n {
		jid, err := c.Enqueue(ctx, "default", "W", []any{i}, Debounce("user:42", time.Second, time.Minute))
		require.NoError(t, err)
		if i == 0 {
			first = jid
		}
		assert.Equal(t, first, jid, "every enqueue of the burst returns the burst's jid")
	}
	sched := v.scheduled()
	require.Len(t, sched, 1, "one job waits for the whole burst")
	assert.Equal(t, first, sched[0].fields["jid"])
	assert.Equal(t, []any{json.Number(fmt.Sprint(n - 1))}, sched[0].fields["args"], "the last args win")
	assert.Equal(t, "user:42", sched[0].fields[wire.DebounceField])

	rec := &recorder{}
	v.start(Options{Queues: []Queue{{Name: "default", Concurrency: 2}}, Workers: map[string]Worker{"W": rec}})
	testutil.WaitFor(t, "the burst's job ran", func() bool { return rec.count() >= 1 })
	testutil.WaitFor(t, "the schedule set is empty", func() bool { return v.zcard(v.keys.Schedule()) == 0 })
	assert.Equal(t, []string{first}, rec.jids(), "one run, by the burst's jid")
	// A later enqueue is a new burst, with a new jid.
	jid, err := c.Enqueue(ctx, "default", "W", []any{"next"}, Debounce("user:42", time.Hour, time.Hour))
	require.NoError(t, err)
	assert.NotEqual(t, first, jid)
}

// Each enqueue moves the run time to now + d on the server's clock, but never past the
// burst's first enqueue + maxWait; enqueued_at (Exq reads it as the due time) follows the score.
func TestDebounceMovesTheRunTimeButNeverPastMaxWait(t *testing.T) {
	t.Parallel()
	const d = time.Hour
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
		millis  bool
	}{
		{"far cap: each enqueue moves the run time to now + d", 10 * d, false},
		{"cap d: the run time never moves", d, false},
		{"cap d + 30ms: the second enqueue stops at the cap", d + 30*time.Millisecond, false},
		{"millisecond timestamps", 10 * d, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			e := v.start(Options{Queues: []Queue{}, DisableScheduler: true, MillisecondTimestamps: tc.millis})
			var firstAt time.Time
			for i := range 3 {
				before := v.serverTime()
				_, err := e.Enqueue(ctx, "default", "W", []any{i}, Debounce("k", d, tc.maxWait))
				require.NoError(t, err)
				after := v.serverTime()
				sched := v.scheduled()
				require.Len(t, sched, 1)
				at := sched[0].at()
				if i == 0 {
					firstAt = at
					// first ∈ [before, after], so the first due time is first + d.
					assert.False(t, at.Before(before.Add(d).Truncate(time.Microsecond)), "due %s, enqueued after %s", at, before)
					assert.False(t, at.After(after.Add(d)), "due %s, enqueued before %s", at, after)
				} else {
					firstEnqueue := firstAt.Add(-d)
					lo := minTime(before.Add(d), firstEnqueue.Add(tc.maxWait)).Truncate(time.Microsecond)
					hi := minTime(after.Add(d), firstEnqueue.Add(tc.maxWait))
					assert.False(t, at.Before(lo), "due %s, before %s", at, lo)
					assert.False(t, at.After(hi), "due %s, after %s", at, hi)
					assert.False(t, at.After(firstEnqueue.Add(tc.maxWait)), "never past first + maxWait")
				}
				stamp := sched[0].fields["enqueued_at"].(json.Number).String()
				if tc.millis {
					assert.Equal(t, fmt.Sprint(at.UnixMilli()), stamp, "enqueued_at in ms is the due time")
				} else {
					assert.Equal(t, wire.FormatTime(at), stamp, "enqueued_at is the due time")
				}
				ttl := v.rdb.PTTL(ctx, v.keys.Debounce("k")).Val()
				assert.InDelta(t, float64(at.Sub(after)+store.DebounceStateMargin), float64(ttl), float64(time.Second),
					"the state lives until a minute after the due time")
				if i == 0 && tc.maxWait == d+30*time.Millisecond {
					// Wait (on the server's clock) until the cap is nearer than d.
					testutil.WaitFor(t, "30ms of server time", func() bool {
						return v.serverTime().After(firstAt.Add(-d).Add(31 * time.Millisecond))
					})
				}
			}
			if tc.maxWait == d {
				assert.Equal(t, firstAt, v.scheduled()[0].at(), "with maxWait = d the run time never moves")
			}
			if tc.maxWait == d+30*time.Millisecond {
				assert.Equal(t, firstAt.Add(30*time.Millisecond), v.scheduled()[0].at(), "capped at first + maxWait")
			}
		})
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Every way to misuse Debounce is refused before anything is written.
func TestDebounceRefusesNonsenseAndLeavesRedisUnchanged(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c := v.client_()
	// A burst already waits: a refused call must not touch it either.
	_, err := c.Enqueue(ctx, "default", "W", []any{1}, Debounce("k", time.Hour, 2*time.Hour))
	require.NoError(t, err)
	ok := Debounce("k", time.Hour, 2*time.Hour)
	unique := Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour})
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"empty key", func() error {
			_, err := c.Enqueue(ctx, "default", "W", nil, Debounce("", time.Second, time.Second))
			return err
		}, "key is empty"},
		{"key too long", func() error {
			_, err := c.Enqueue(ctx, "default", "W", nil, Debounce(strings.Repeat("k", MaxDebounceKeyBytes+1), time.Second, time.Second))
			return err
		}, "MaxDebounceKeyBytes"},
		{"key not UTF-8", func() error {
			_, err := c.Enqueue(ctx, "default", "W", nil, Debounce("k\xff", time.Second, time.Second))
			return err
		}, "not valid UTF-8"},
		{"key with a line break", func() error {
			_, err := c.Enqueue(ctx, "default", "W", nil, Debounce("a\nb", time.Second, time.Second))
			return err
		}, "control or format character U+000A"},
		{"key with a bidi override", func() error {
			_, err := c.Enqueue(ctx, "default", "W", nil, Debounce("a\u202eb", time.Second, time.Second))
			return err
		}, "control or format character U+202E"},
		{"d zero", func() error { _, err := c.Enqueue(ctx, "default", "W", nil, Debounce("k", 0, time.Second)); return err }, "d must be at least 1ms"},
		{"d negative", func() error {
			_, err := c.Enqueue(ctx, "default", "W", nil, Debounce("k", -time.Second, time.Second))
			return err
		}, "d must be at least 1ms"},
		{"d under a millisecond", func() error {
			_, err := c.Enqueue(ctx, "default", "W", nil, Debounce("k", time.Microsecond, time.Second))
			return err
		}, "d must be at least 1ms"},
		{"maxWait under d", func() error {
			_, err := c.Enqueue(ctx, "default", "W", nil, Debounce("k", time.Minute, time.Second))
			return err
		}, "maxWait (1s) must be at least d (1m0s)"},
		{"with Unique", func() error { _, err := c.Enqueue(ctx, "default", "W", nil, ok, unique); return err }, "Debounce and Unique cannot be combined"},
		{"Unique first", func() error { _, err := c.Enqueue(ctx, "default", "W", nil, unique, ok); return err }, "Debounce and Unique cannot be combined"},
		{"with Key", func() error { _, err := c.Enqueue(ctx, "default", "W", nil, ok, Key("tenant-1")); return err }, "Debounce and Key cannot be combined"},
		{"EnqueueIn", func() error { _, err := c.EnqueueIn(ctx, "default", "W", time.Minute, nil, ok); return err }, "use Enqueue"},
		{"EnqueueIn zero", func() error { _, err := c.EnqueueIn(ctx, "default", "W", 0, nil, ok); return err }, "use Enqueue"},
		{"EnqueueAt", func() error {
			_, err := c.EnqueueAt(ctx, "default", "W", time.Now().Add(time.Hour), nil, ok)
			return err
		}, "use Enqueue"},
		{"EnqueueAll", func() error {
			_, err := c.EnqueueAll(ctx, []JobSpec{{Class: "W"}, {Class: "W", Options: []EnqueueOption{ok}}})
			return err
		}, "job 1: Debounce is for Enqueue, not EnqueueAll"},
		{"a batch", func() error {
			_, _, err := c.NewBatch(ctx, BatchOptions{}, []JobSpec{{Class: "W", Options: []EnqueueOption{ok}}})
			return err
		}, "not for a job of a batch or a workflow"},
		{"a workflow", func() error {
			_, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "a", Class: "W", Options: []EnqueueOption{ok}}})
			return err
		}, "not for a job of a batch or a workflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.Snapshot(t, v.rdb, v.ns)
			err := tc.call()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidJob)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, before, testutil.Snapshot(t, v.rdb, v.ns), "Redis unchanged")
		})
	}
	t.Run("a state key of another type", func(t *testing.T) {
		require.NoError(t, v.rdb.Set(ctx, v.keys.Debounce("str"), "x", 0).Err())
		before := testutil.Snapshot(t, v.rdb, v.ns)
		_, err := c.Enqueue(ctx, "default", "W", nil, Debounce("str", time.Second, time.Second))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "WRONGTYPE")
		assert.Equal(t, before, testutil.Snapshot(t, v.rdb, v.ns), "Redis unchanged")
	})
}

// The same call sent again (the same jid) after its job is due writes nothing more: without
// the check the script would start a new burst with that jid, a second job of one jid.
func TestDebounceScriptIsIdempotentForTheSameCall(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jq := testStore(v.client, v.keys, "")
	j := wire.NewJob{Class: "W", Args: json.RawMessage(`[1]`), Queue: "default", JID: "call-1", EnqueuedAt: time.Now(), CreatedAt: time.Now()}
	head, tail, err := j.DebounceParts(j.Encode())
	require.NoError(t, err)
	call := store.Debounced{Key: "k", Wait: time.Millisecond, MaxWait: time.Millisecond, JID: "call-1", Head: head, Tail: tail}
	first, err := jq.Debounce(ctx, call)
	require.NoError(t, err)
	assert.Equal(t, store.DebounceStarted, first.How)
	testutil.WaitFor(t, "the job is due on the server's clock", func() bool { return v.serverTime().After(first.At) })
	again, err := jq.Debounce(ctx, call)
	require.NoError(t, err)
	assert.Equal(t, store.DebounceRepeat, again.How)
	assert.Equal(t, first.JID, again.JID)
	assert.Equal(t, first.At, again.At)
	assert.Equal(t, 1, v.zcard(v.keys.Schedule()), "one job")
}

// A reply lost on the connection: go-redis (a caller's client with retries) sends the script
// again, and exq's own client returns the error, which the caller retries with the same JID.
// Either way, one job.
func TestADebouncedEnqueueWhoseReplyIsLostWritesOneJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		retrying bool
	}{{"the client sends it again", true}, {"the caller retries with the same JID", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCutter(t)
			ctx := context.Background()
			o := ClientOptions{Namespace: c.ns, Logger: testLogger()}
			if tc.retrying {
				o.Redis = c.retrying()
			} else {
				o.RedisURL = c.url()
			}
			cl, err := NewClient(ctx, o)
			require.NoError(t, err)
			defer cl.Close()
			cut := c.cutScript(scripts.Debounce, 1)
			opts := []EnqueueOption{Debounce("k", time.Millisecond, time.Millisecond), JID("call-1")}
			jid, err := cl.Enqueue(ctx, "default", "W", []any{1}, opts...)
			waitCut(t, cut)
			if !tc.retrying {
				require.Error(t, err, "exq's client does not send it again")
				// The caller retries once the job is due (a scheduler may even have moved it).
				testutil.WaitFor(t, "the job is due", func() bool {
					s := c.scheduled()
					return len(s) == 1 && c.serverTime().After(s[0].at())
				})
				jid, err = cl.Enqueue(ctx, "default", "W", []any{1}, opts...)
			}
			require.NoError(t, err)
			assert.Equal(t, "call-1", jid)
			sched := c.scheduled()
			require.Len(t, sched, 1, "one job")
			assert.Equal(t, "call-1", sched[0].fields["jid"])
		})
	}
}

// Schedulers move debounced jobs while many goroutines enqueue: every jid an enqueue returned
// runs exactly once, with the args of a call that returned that jid, and no other job runs.
// Two ways: exq's schedulers alone, which move a job when it is due (racing the enqueues that
// come at the cap), and with a foreign scheduler as Sidekiq's poller is, which reads what is
// due by its own clock, here d ahead of the server's, pops it and pushes it to its queue: it
// moves every job while its burst is still open, so each later enqueue must start a new burst.
func TestDebounceRacingSchedulersRunsEveryBurstExactlyOnce(t *testing.T) {
	t.Parallel()
	const d, maxWait = 10 * time.Millisecond, 40 * time.Millisecond
	for _, tc := range []struct {
		name  string
		ahead time.Duration // the foreign scheduler's clock ahead of the server's; 0: none
	}{
		{"exq's schedulers", 0},
		{"and a foreign scheduler moving jobs early", d},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			var mu sync.Mutex
			runs := map[string][]string{} // jid → args of each run
			w := WorkerFunc(func(_ context.Context, j *Job) error {
				var arg string
				if err := j.Bind(&arg); err != nil {
					return err
				}
				mu.Lock()
				runs[j.JID] = append(runs[j.JID], arg)
				mu.Unlock()
				return nil
			})
			for range 2 {
				v.start(Options{Queues: []Queue{{Name: "default", Concurrency: 10}}, Workers: map[string]Worker{"W": w},
					SchedulerPollTimeout: time.Millisecond})
			}
			moverCtx, stopMover := context.WithCancel(ctx)
			moverDone := make(chan struct{})
			var moved atomic.Int64
			// Sidekiq 7's poller pops one due job at a time by its own clock (ZRANGEBYSCORE and
			// ZREM in one script), then pushes it to its queue.
			pop := redis.NewScript(`local j = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1)[1]
if j then redis.call('ZREM', KEYS[1], j) end
return j`)
			go func() {
				defer close(moverDone)
				for tc.ahead > 0 && moverCtx.Err() == nil {
					now := v.serverTime().Add(tc.ahead)
					raw, err := pop.Run(ctx, v.rdb, []string{v.keys.Schedule()}, wire.FormatTime(now)).Text()
					if err == nil {
						moved.Add(1)
						v.rdb.LPush(ctx, v.keys.Queue("default"), raw)
					}
				}
			}()
			const goroutines, calls = 8, 40
			returned := map[string]map[string]bool{} // jid → args of the calls that returned it
			var rmu sync.Mutex
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				cl := v.client_()
				go func() {
					defer wg.Done()
					for i := range calls {
						key := fmt.Sprintf("k%d", i%8)
						arg := fmt.Sprintf("%d-%d", g, i)
						jid, err := cl.Enqueue(ctx, "default", "W", []any{arg}, Debounce(key, d, maxWait))
						if !assert.NoError(t, err) {
							return
						}
						rmu.Lock()
						if returned[jid] == nil {
							returned[jid] = map[string]bool{}
						}
						returned[jid][arg] = true
						rmu.Unlock()
					}
				}()
			}
			wg.Wait()
			ok := testutil.Within(func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(runs) >= len(returned)
			})
			testutil.WaitFor(t, "schedule and queue empty", func() bool {
				return v.zcard(v.keys.Schedule()) == 0 && len(v.list(v.keys.Queue("default"))) == 0
			})
			stopMover()
			<-moverDone
			mu.Lock()
			defer mu.Unlock()
			assert.True(t, ok, "every burst ran: %d bursts, %d ran", len(returned), len(runs))
			total := 0
			for _, a := range runs {
				total += len(a)
			}
			t.Logf("%d calls made %d bursts, %d runs; the foreign scheduler moved %d", goroutines*calls, len(returned), total, moved.Load())
			assert.Greater(t, len(returned), 3, "bursts ended while calls came in")
			if tc.ahead == 0 {
				// The goroutines go through the keys in step, so calls of a key come together.
				assert.Less(t, len(returned), goroutines*calls, "calls joined bursts")
			} else {
				assert.Positive(t, moved.Load(), "the foreign scheduler moved jobs")
			}
			for jid, args := range runs {
				require.Contains(t, returned, jid, "job %s ran, but no enqueue returned its jid", jid)
				assert.Len(t, args, 1, "burst %s runs once", jid)
				assert.True(t, returned[jid][args[0]], "burst %s ran with %q, the args of a call that returned it", jid, args[0])
			}
			for jid := range returned {
				assert.Contains(t, runs, jid, "burst %s ran", jid)
			}
		})
	}
}

// A debounced job is an ordinary scheduled job to the API (and so to the exq command and the
// dashboard), and tells its debounce key.
func TestADebouncedJobShowsAsScheduledWithItsKey(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, c := v.api()
	jid, err := c.Enqueue(ctx, "default", "W", []any{1}, Debounce("user:7", time.Hour, time.Hour))
	require.NoError(t, err)
	rec, err := a.Find(ctx, ScheduledSet, jid)
	require.NoError(t, err)
	job, err := rec.Job()
	require.NoError(t, err)
	assert.Equal(t, "user:7", job.DebounceKey())
	assert.InDelta(t, float64(time.Hour), float64(time.Until(rec.At)), float64(time.Minute))
}

// A sharded client puts a key's burst in one shard, whatever the queue.
func TestShardedDebounceKeepsABurstInOneShard(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	shards := ShardOptions{Namespaces: []string{v.ns + "-a", v.ns + "-b", v.ns + "-c"}}
	if testutil.OnCluster() {
		t.Skip("the shard namespaces would need hash tags of their own")
	}
	sc, err := NewShardedClient(ctx, ClientOptions{Redis: v.client}, shards)
	require.NoError(t, err)
	defer sc.Close()
	var jids []string
	for i, q := range []string{"a", "b", "c", "d", "e", "f"} {
		jid, err := sc.Enqueue(ctx, q, "W", []any{i}, Debounce("one", time.Hour, time.Hour))
		require.NoError(t, err)
		jids = append(jids, jid)
	}
	for _, jid := range jids {
		assert.Equal(t, jids[0], jid)
	}
	total := 0
	for _, ns := range shards.Namespaces {
		total += int(v.rdb.ZCard(ctx, wire.NewKeys(ns).Schedule()).Val())
	}
	assert.Equal(t, 1, total, "one job in all the shards")
	t.Cleanup(func() {
		for _, ns := range shards.Namespaces {
			keys := v.rdb.Keys(context.Background(), ns+":*").Val()
			if len(keys) > 0 {
				v.rdb.Del(context.Background(), keys...)
			}
		}
	})
}

// BenchmarkDebouncedEnqueue compares one caller's debounced Enqueue, joining one burst or
// starting a new one each call, with a plain Enqueue and an EnqueueIn of the same job.
func BenchmarkDebouncedEnqueue(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	en := &enqueuer{jq: testStore(rdb, keysFor(ns), ""), now: time.Now, maxRetries: DefaultMaxRetries}
	args := []any{42, "welcome"}
	for _, bc := range []struct {
		name string
		call func(i int) error
	}{
		{"plain", func(int) error { _, err := en.enqueue(ctx, "default", "W", args, nil); return err }},
		{"EnqueueIn", func(int) error { _, err := en.enqueueIn(ctx, "default", "W", time.Hour, args, nil); return err }},
		{"debounce joining one burst", func(int) error {
			_, err := en.enqueue(ctx, "default", "W", args, []EnqueueOption{Debounce("one", time.Hour, 2*time.Hour)})
			return err
		}},
		{"debounce starting a burst per call", func(i int) error {
			_, err := en.enqueue(ctx, "default", "W", args, []EnqueueOption{Debounce(fmt.Sprint("k", i), time.Hour, 2*time.Hour)})
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := bc.call(i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// EnqueueHooks hear each call's outcome as the burst's jid, and a JobEnqueued event carries
// the burst's jid and due time.
func TestDebouncedEnqueueReportsTheBurstToHooksAndListeners(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var mu sync.Mutex
	var done []string
	var events []Event
	hook := func(_ context.Context, _ *OutgoingJob) func(string, error) {
		return func(jid string, err error) {
			mu.Lock()
			defer mu.Unlock()
			done = append(done, jid)
		}
	}
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, EnqueueHooks: []EnqueueHook{hook},
		Listeners: []Listener{func(e Event) { mu.Lock(); defer mu.Unlock(); events = append(events, e) }}})
	require.NoError(t, err)
	defer c.Close()
	first, err := c.Enqueue(ctx, "default", "W", []any{1}, Debounce("k", time.Hour, time.Hour))
	require.NoError(t, err)
	_, err = c.Enqueue(ctx, "default", "W", []any{2}, Debounce("k", time.Hour, time.Hour))
	require.NoError(t, err)
	due := v.scheduled()[0].at()
	testutil.WaitFor(t, "two events", func() bool { mu.Lock(); defer mu.Unlock(); return len(events) == 2 })
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{first, first}, done)
	for _, e := range events {
		assert.Equal(t, JobEnqueued, e.Kind)
		assert.Equal(t, first, e.JID)
		assert.True(t, due.Equal(e.At), "event at %s, due %s", e.At, due)
	}
}
