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

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
)

// queuedCalls is how many calls wait for en's next group write.
func queuedCalls(en *enqueuer) int {
	n, _ := en.group.Waiting()
	return n
}

// writeInFlight reports whether en has a write in flight.
func writeInFlight(en *enqueuer) bool {
	_, busy := en.group.Waiting()
	return busy
}

// slowClient is a client of the env's Redis through a proxy that delays every reply by
// latency, so that calls queue behind a write in flight; counter counts what it sends. With
// noRetry it never sends a command again (as exq's own client).
func slowClient(t *testing.T, v *env, latency time.Duration, noRetry bool) (*redis.Client, *testutil.Counter, *testutil.Proxy) {
	t.Helper()
	p := testutil.NewProxy(t, v.rdb.Options().Addr)
	p.SetLatency(latency)
	opts := *v.rdb.Options()
	opts.Addr = p.Addr()
	if noRetry {
		opts.MaxRetries = -1
	}
	c := redis.NewClient(&opts)
	t.Cleanup(func() { _ = c.Close() })
	counter := testutil.NewCounter()
	c.AddHook(counter)
	return c, counter, p
}

// docJIDs returns the jid of every document in docs, failing on a document seen twice.
func docJIDs(t *testing.T, docs []string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, d := range docs {
		jid, _ := decode(t, d)["jid"].(string)
		seen[jid]++
		assert.Equal(t, 1, seen[jid], "job %s written once", jid)
	}
	return seen
}

func (v *env) zsetMemberList(key string) []string {
	v.t.Helper()
	m, err := v.rdb.ZRange(context.Background(), key, 0, -1).Result()
	require.NoError(v.t, err)
	return m
}

func TestConcurrentEnqueuesShareRoundTripsAndEachGetsItsJob(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rdb, counter, _ := slowClient(t, v, 2*time.Millisecond, false)

	var mu sync.Mutex
	var events []Event
	finished := map[string]int{}
	hook := func(ctx context.Context, job *OutgoingJob) func(string, error) {
		return func(jid string, err error) {
			mu.Lock()
			defer mu.Unlock()
			assert.NoError(t, err)
			finished[jid]++
		}
	}
	c, err := NewClient(ctx, ClientOptions{Redis: rdb, Namespace: v.ns, Logger: testLogger(),
		Listeners:    []Listener{func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }},
		EnqueueHooks: []EnqueueHook{hook}})
	require.NoError(t, err)
	defer c.Close()

	sub := v.rdb.Subscribe(ctx, v.keys.Wake())
	defer sub.Close()
	_, err = sub.Receive(ctx) // the subscription is in place
	require.NoError(t, err)
	before := counter.Count("evalsha")

	const calls = 200
	jids := make([]string, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch i % 4 {
			case 3:
				jids[i], err = c.EnqueueIn(ctx, "default", "W", time.Hour, []any{i})
			case 2:
				jids[i], err = c.EnqueueAt(ctx, "default", "W", time.Now().Add(time.Hour), []any{i})
			default:
				jids[i], err = c.Enqueue(ctx, "default", "W", []any{i})
			}
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	scripts := counter.Count("evalsha") - before

	returned := map[string]int{}
	for _, jid := range jids {
		require.NotEmpty(t, jid)
		returned[jid]++
	}
	assert.Len(t, returned, calls, "every call returned a jid of its own")
	now := docJIDs(t, v.list(v.keys.Queue("default")))
	later := docJIDs(t, v.zsetMemberList(v.keys.Schedule()))
	assert.Len(t, now, calls/2)
	assert.Len(t, later, calls/2)
	for i, jid := range jids {
		if i%4 >= 2 {
			assert.Equal(t, 1, later[jid], "scheduled job %d", i)
		} else {
			assert.Equal(t, 1, now[jid], "job %d", i)
		}
	}
	assert.Less(t, scripts, calls, "fewer script calls than enqueues")
	assert.Less(t, counter.RoundTrips(), calls+1, "fewer round trips than enqueues")
	t.Logf("%d enqueues in %d script calls", calls, scripts)

	mu.Lock()
	assert.Len(t, events, calls, "one JobEnqueued per job")
	for _, e := range events {
		assert.Equal(t, JobEnqueued, e.Kind)
		assert.Equal(t, 1, returned[e.JID])
	}
	assert.Len(t, finished, calls, "every hook heard its own job's end")
	mu.Unlock()

	// Wake-ups: at most one per script call (one queue). A PUBLISH of the test's own, sent
	// after every enqueue returned, arrives after all of theirs.
	require.NoError(t, v.rdb.Publish(ctx, v.keys.Wake(), "end-of-test").Err())
	wakes, dues := 0, 0
	for m := range sub.Channel() {
		if m.Payload == "end-of-test" {
			break
		}
		if strings.HasPrefix(m.Payload, ":due:") {
			dues++ // the scheduler's: a scheduled job due before every other
			continue
		}
		assert.Equal(t, "default", m.Payload)
		wakes++
	}
	assert.Positive(t, wakes)
	assert.LessOrEqual(t, wakes, scripts, "at most one wake-up per queue per write")
	assert.LessOrEqual(t, dues, scripts, "at most one due announcement per write")
}

// startQueued starts an enqueue in a goroutine once the calls before it are queued, and waits
// until it is queued too.
type groupRun struct {
	t  *testing.T
	en *enqueuer
	wg sync.WaitGroup
}

type callResult struct {
	jid string
	err error
	at  time.Time // when the call returned
}

// lead starts a call that finds no write in flight and writes alone (slowly, through the
// proxy), so the next calls queue behind it.
func (r *groupRun) lead(call func() (string, error)) *callResult {
	r.t.Helper()
	res := r.goCall(call)
	testutil.WaitFor(r.t, "the first write is in flight", func() bool { return writeInFlight(r.en) })
	return res
}

// queue starts a call and waits until it is queued behind the write in flight.
func (r *groupRun) queue(call func() (string, error)) *callResult {
	r.t.Helper()
	n := queuedCalls(r.en)
	res := r.goCall(call)
	testutil.WaitFor(r.t, "the call is queued", func() bool { return queuedCalls(r.en) > n })
	return res
}

func (r *groupRun) goCall(call func() (string, error)) *callResult {
	res := &callResult{}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		res.jid, res.err = call()
		res.at = time.Now()
	}()
	return res
}

func TestAGroupResolvesUniqueConflictsInArrivalOrderAndFailsJobsAlone(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rdb, counter, _ := slowClient(t, v, 100*time.Millisecond, true)
	en := &enqueuer{jq: testStore(rdb, v.keys, ""), now: time.Now, maxRetries: DefaultMaxRetries}
	require.NoError(t, v.rdb.Set(ctx, v.keys.Queue("broken"), "a string", 0).Err())
	require.NoError(t, scripts.Enqueue.Load(ctx, v.rdb).Err())
	require.NoError(t, scripts.EnqueueGroup.Load(ctx, v.rdb).Err())
	unique := Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour, Token: "tok"})

	r := &groupRun{t: t, en: en}
	first := r.lead(func() (string, error) { return en.enqueue(ctx, "default", "W", []any{0}, nil) })
	winner := r.queue(func() (string, error) {
		return en.enqueue(ctx, "default", "W", []any{1}, []EnqueueOption{JID("winner"), unique})
	})
	loser := r.queue(func() (string, error) {
		return en.enqueueAt(ctx, "enqueue in", "default", "W", time.Now().Add(time.Hour), []any{2},
			[]EnqueueOption{JID("loser"), unique})
	})
	broken := r.queue(func() (string, error) { return en.enqueue(ctx, "broken", "W", []any{3}, nil) })
	later := r.queue(func() (string, error) {
		return en.enqueueAt(ctx, "enqueue at", "mail", "W", time.Now().Add(time.Minute), []any{4}, nil)
	})
	r.wg.Wait()

	require.NoError(t, first.err)
	require.NoError(t, winner.err)
	assert.Equal(t, "winner", winner.jid)
	require.Error(t, loser.err)
	assert.ErrorIs(t, loser.err, ErrUniqueConflict)
	var uc *UniqueConflictError
	require.ErrorAs(t, loser.err, &uc)
	assert.Equal(t, "winner", uc.JID, "the conflict names the job that took the lock first")
	assert.Equal(t, "winner", loser.jid)
	require.Error(t, broken.err)
	assert.Contains(t, broken.err.Error(), "exq: enqueue W to broken: WRONGTYPE")
	require.NoError(t, later.err, "a job's failure fails that job only")

	assert.Equal(t, 2, counter.Count("evalsha"), "the first write, then one for the four queued calls")
	assert.Equal(t, "winner", v.rdb.Get(ctx, v.keys.Unique("tok")).Val())
	q := docJIDs(t, v.list(v.keys.Queue("default")))
	assert.Equal(t, map[string]int{first.jid: 1, "winner": 1}, q)
	assert.Equal(t, map[string]int{later.jid: 1}, docJIDs(t, v.zsetMemberList(v.keys.Schedule())),
		"the loser is not scheduled")
	assert.ElementsMatch(t, []string{"default", "broken"}, v.rdb.SMembers(ctx, v.keys.Queues()).Val(),
		"as enqueue.lua: SADD before the LPUSH that failed; a scheduled job joins its queue when it comes due")
}

func testACallCancelledWhileQueuedIsNeverWritten(t *testing.T) {
	// Timed (timed_test.go): asserts the cancelled call returns within half a round trip.
	v := newEnv(t)
	ctx := context.Background()
	const latency = 300 * time.Millisecond
	rdb, counter, _ := slowClient(t, v, latency, true)
	var mu sync.Mutex
	heard := map[string]error{}
	hook := func(ctx context.Context, job *OutgoingJob) func(string, error) {
		id := job.JID
		return func(_ string, err error) { mu.Lock(); heard[id] = err; mu.Unlock() }
	}
	en := &enqueuer{jq: testStore(rdb, v.keys, ""), now: time.Now, maxRetries: DefaultMaxRetries,
		hooks: []EnqueueHook{hook}}

	r := &groupRun{t: t, en: en}
	first := r.lead(func() (string, error) { return en.enqueue(ctx, "default", "W", []any{0}, nil) })
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cancelled := r.queue(func() (string, error) {
		return en.enqueue(cctx, "default", "W", []any{1}, []EnqueueOption{JID("cancelled")})
	})
	kept := r.queue(func() (string, error) {
		return en.enqueue(ctx, "default", "W", []any{2}, []EnqueueOption{JID("kept")})
	})
	cancelledAt := time.Now()
	cancel()
	r.wg.Wait()

	require.NoError(t, first.err)
	require.NoError(t, kept.err)
	require.Error(t, cancelled.err)
	assert.ErrorIs(t, cancelled.err, context.Canceled)
	assert.Equal(t, "exq: enqueue W to default: context canceled", cancelled.err.Error())
	assert.Empty(t, cancelled.jid)
	assert.Less(t, cancelled.at.Sub(cancelledAt), latency/2, "the cancelled call returned at once")
	assert.True(t, cancelled.at.Before(first.at), "… before the write it waited for ended")
	mu.Lock()
	assert.ErrorIs(t, heard["cancelled"], context.Canceled, "its hook heard the error")
	assert.NoError(t, heard["kept"])
	mu.Unlock()

	assert.Equal(t, map[string]int{first.jid: 1, "kept": 1}, docJIDs(t, v.list(v.keys.Queue("default"))),
		"the cancelled job was never written")
	assert.Equal(t, 2, counter.Count("evalsha"))
}

func TestAGroupWhoseReplyIsLostFailsEveryCallerAndWritesEachJobOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		noRetry bool
	}{
		// exq's own client: every caller of the group hears the lost reply.
		{"exq's client reports the error", true},
		// A client that sends the script again: the unique jobs' locks, held by their own
		// jids, make the repeat write nothing.
		{"caller's client sends it again", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			rdb, counter, proxy := slowClient(t, v, 100*time.Millisecond, tc.noRetry)
			en := &enqueuer{jq: testStore(rdb, v.keys, ""), now: time.Now, maxRetries: DefaultMaxRetries}
			require.NoError(t, scripts.Enqueue.Load(ctx, v.rdb).Err())
			require.NoError(t, scripts.EnqueueGroup.Load(ctx, v.rdb).Err())
			cut := proxy.CutReplyTo(1, scripts.EnqueueGroup.Hash())

			r := &groupRun{t: t, en: en}
			first := r.lead(func() (string, error) { return en.enqueue(ctx, "default", "W", []any{0}, nil) })
			var group []*callResult
			for i := 1; i <= 10; i++ {
				opts := []EnqueueOption{JID(fmt.Sprintf("j%d", i)),
					Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour, Token: fmt.Sprint(i)})}
				group = append(group, r.queue(func() (string, error) {
					return en.enqueue(ctx, "default", "W", []any{i}, opts)
				}))
			}
			r.wg.Wait()
			waitCut(t, cut)

			require.NoError(t, first.err)
			want := map[string]int{first.jid: 1}
			for i, res := range group {
				jid := fmt.Sprintf("j%d", i+1)
				want[jid] = 1
				if tc.noRetry {
					require.Error(t, res.err, jid)
					assert.Contains(t, res.err.Error(), "exq: enqueue W to default: ", jid)
					assert.Empty(t, res.jid)
				} else {
					require.NoError(t, res.err, jid)
					assert.Equal(t, jid, res.jid)
				}
			}
			assert.Equal(t, want, docJIDs(t, v.list(v.keys.Queue("default"))),
				"Redis ran the group: each job is in its queue, once")
			if tc.noRetry {
				assert.Equal(t, 2, counter.Count("evalsha"), "the group was sent once")
			}
		})
	}
}

func TestAGroupWaitsForReplicasOnceAndReportsEachJobNotReplicated(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	const wait = 150 * time.Millisecond
	// A script Redis does not know yet is sent again after NOSCRIPT, with a WAIT of its own:
	// on a fresh cluster master that made three or four WAITs. Load them first.
	for _, s := range []*redis.Script{scripts.Enqueue, scripts.EnqueueGroup, scripts.EnqueueAt} {
		require.NoError(t, s.Load(ctx, v.rdb).Err())
	}
	rdb, counter := v.countingClient()
	c, err := NewClient(ctx, ClientOptions{Redis: rdb, Namespace: v.ns, Logger: testLogger(), WaitReplicas: 1, WaitTimeout: wait})
	require.NoError(t, err)
	defer c.Close()

	r := &groupRun{t: t, en: c.enq}
	first := r.lead(func() (string, error) { return c.Enqueue(ctx, "default", "W", []any{0}) })
	var group []*callResult
	for i := 1; i <= 5; i++ {
		group = append(group, r.queue(func() (string, error) {
			if i%2 == 0 {
				return c.EnqueueIn(ctx, "default", "W", time.Hour, []any{i})
			}
			return c.Enqueue(ctx, "default", "W", []any{i})
		}))
	}
	r.wg.Wait()

	for i, res := range append([]*callResult{first}, group...) {
		require.Error(t, res.err, i)
		assert.ErrorIs(t, res.err, ErrNotReplicated, i)
		assert.NotEmpty(t, res.jid, "the jid of the written job comes with the error")
		assert.Contains(t, res.err.Error(), "job "+res.jid+" written on the master: ")
		assert.Contains(t, res.err.Error(), "0 of 1 replicas acknowledged the write within 150ms")
	}
	assert.Len(t, v.list(v.keys.Queue("default")), 4)
	assert.Equal(t, 2, v.zcard(v.keys.Schedule()))
	assert.Equal(t, 2, counter.Count("evalsha"))
	assert.Equal(t, 2, counter.Count("wait"), "one WAIT per write, after it, on its connection")
}

func TestCloseAndStopWithCallersQueued(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		open func(t *testing.T, v *env, url string) (en *enqueuer, enqueue func(int) (string, error), end func())
	}{
		{"Client.Close", func(t *testing.T, v *env, url string) (*enqueuer, func(int) (string, error), func()) {
			c, err := NewClient(context.Background(), ClientOptions{RedisURL: url, Namespace: v.ns, Logger: testLogger()})
			require.NoError(t, err)
			return c.enq, func(i int) (string, error) {
					return c.Enqueue(context.Background(), "default", "W", []any{i})
				}, func() {
					assert.NoError(t, c.Close())
				}
		}},
		{"Exq.Stop", func(t *testing.T, v *env, url string) (*enqueuer, func(int) (string, error), func()) {
			e, err := Start(context.Background(), Options{RedisURL: url, Namespace: v.ns, Logger: testLogger(),
				Queues: []Queue{{Name: "other", Concurrency: 1}}, DisableScheduler: true, PollTimeout: 20 * time.Millisecond})
			require.NoError(t, err)
			return e.enq, func(i int) (string, error) {
					return e.Enqueue(context.Background(), "default", "W", []any{i})
				}, func() {
					ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
					defer cancel()
					assert.NoError(t, e.Stop(ctx))
				}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			p := testutil.NewProxy(t, v.rdb.Options().Addr)
			en, enqueue, end := tc.open(t, v, fmt.Sprintf("redis://%s/%d", p.Addr(), v.rdb.Options().DB))
			p.SetLatency(50 * time.Millisecond)

			r := &groupRun{t: t, en: en}
			results := []*callResult{r.lead(func() (string, error) { return enqueue(0) })}
			for i := 1; i <= 20; i++ {
				results = append(results, r.goCall(func() (string, error) { return enqueue(i) }))
			}
			testutil.WaitFor(t, "calls are queued", func() bool { return queuedCalls(en) > 0 })
			end()
			done := make(chan struct{})
			go func() { r.wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(testutil.WaitTimeout):
				t.Fatal("callers still wait after the close")
			}
			stored := docJIDs(t, v.list(v.keys.Queue("default")))
			ok := 0
			for _, res := range results {
				if res.err != nil {
					assert.Empty(t, res.jid)
					t.Log(res.err)
					continue
				}
				ok++
				assert.Equal(t, 1, stored[res.jid], "a job reported written is in its queue once")
			}
			assert.False(t, writeInFlight(en) && queuedCalls(en) > 0, "nobody is left waiting")
			t.Logf("%d of %d calls wrote their job before the close", ok, len(results))
		})
	}
}
