package exq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/testutil"
)

// api returns an API (and an enqueuer) on the env's namespace, with no node running.
func (v *env) api() (*API, *Client) {
	v.t.Helper()
	ctx := context.Background()
	a, err := NewAPI(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(v.t, err)
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(v.t, err)
	return a, c
}

func jidsOf(recs []JobRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		if j, err := r.Job(); err == nil {
			out[i] = j.JID
		}
	}
	return out
}

// jobOf is the job of r; the test fails if r does not decode.
func jobOf(t *testing.T, r JobRecord) *Job {
	t.Helper()
	j, err := r.Job()
	require.NoError(t, err)
	return j
}

func TestAPIQueuesSizesAndRemoval(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, c := v.api()
	qs, err := a.Queues(ctx)
	require.NoError(t, err)
	assert.Empty(t, qs)
	require.NoError(t, a.RemoveQueue(ctx, "unknown"))
	_, err = c.Enqueue(ctx, "custom", "W", nil)
	require.NoError(t, err)
	_, err = c.Enqueue(ctx, "b", "W", nil)
	require.NoError(t, err)
	qs, _ = a.Queues(ctx)
	assert.Equal(t, []string{"b", "custom"}, qs)
	sizes, err := a.QueueSizes(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"b": 1, "custom": 1}, sizes)
	n, _ := a.QueueSize(ctx, "custom")
	assert.EqualValues(t, 1, n)
	require.NoError(t, a.RemoveQueue(ctx, "custom"))
	qs, _ = a.Queues(ctx)
	assert.Equal(t, []string{"b"}, qs)
	n, _ = a.QueueSize(ctx, "custom")
	assert.Zero(t, n)
}

func TestAPIJobsInAQueueArePaginatedNewestFirst(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, c := v.api()
	var jids []string
	for i := 0; i < 5; i++ {
		jid, err := c.Enqueue(ctx, "q", "W", []any{i})
		require.NoError(t, err)
		jids = append(jids, jid)
	}
	all, err := a.Jobs(ctx, "q", ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{jids[4], jids[3], jids[2], jids[1], jids[0]}, jidsOf(all), "newest first")
	page, err := a.Jobs(ctx, "q", ListOptions{Offset: 1, Size: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{jids[3], jids[2]}, jidsOf(page))
	oldest, err := a.Jobs(ctx, "q", ListOptions{Offset: 1, Size: 2, Reverse: true})
	require.NoError(t, err)
	assert.Equal(t, []string{jids[1], jids[2]}, jidsOf(oldest), "Reverse: next to run first")
	assert.Equal(t, v.list(v.keys.Queue("q"))[1], page[0].Raw, "raw is the stored string")
	_, err = a.Jobs(ctx, "q", ListOptions{Offset: -1})
	assert.Error(t, err)

	rec, err := a.FindInQueue(ctx, "q", jids[2])
	require.NoError(t, err)
	assert.Equal(t, jids[2], jobOf(t, rec).JID)
	_, err = a.FindInQueue(ctx, "q", "missing")
	assert.ErrorIs(t, err, ErrJobNotFound)

	removed, err := a.RemoveJobs(ctx, "q", []string{rec.Raw, rec.Raw}, RemoveOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, removed)
	_, err = a.FindInQueue(ctx, "q", jids[2])
	assert.ErrorIs(t, err, ErrJobNotFound)
}

func TestAPIFindScansPastOnePage(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, c := v.api()
	specs := make([]JobSpec, 1200)
	for i := range specs {
		specs[i] = JobSpec{Queue: "big", Class: "W", Args: []any{i}, In: time.Duration(i+1) * time.Minute}
	}
	res, err := c.EnqueueAll(ctx, specs)
	require.NoError(t, err)
	rec, err := a.Find(ctx, ScheduledSet, res[1100].JID)
	require.NoError(t, err)
	assert.Equal(t, res[1100].JID, jobOf(t, rec).JID)
	assert.False(t, rec.At.IsZero())
}

func TestAPIFindsAJIDThatJSONEscapes(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, _ := v.api()
	jid := `j"<\>`
	raw := `{"class":"W","args":[],"queue":"q","jid":"j\"\u003c\\>"}`
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Retry(), redisZ(time.Now(), raw)).Err())
	v.push("q", raw)
	rec, err := a.Find(ctx, RetrySet, jid)
	require.NoError(t, err, "the document holds the jid escaped")
	assert.Equal(t, raw, rec.Raw)
	_, err = a.FindInQueue(ctx, "q", jid)
	require.NoError(t, err)
}

func TestAPISortedSetsListInTheirOrderWithScores(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, c := v.api()
	now := time.Now()
	// Scheduled: soonest first.
	late, err := c.EnqueueAt(ctx, "custom", "W", now.Add(2*time.Hour), nil)
	require.NoError(t, err)
	soon, err := c.EnqueueAt(ctx, "custom", "W", now.Add(time.Hour), nil)
	require.NoError(t, err)
	sched, err := a.Scheduled(ctx, ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{soon, late}, jidsOf(sched))
	assert.WithinDuration(t, now.Add(time.Hour), sched[0].At, time.Millisecond)
	page, _ := a.Scheduled(ctx, ListOptions{Offset: 1, Size: 1})
	assert.Equal(t, []string{late}, jidsOf(page))

	// Dead: newest death first; retry: soonest first.
	for i, jid := range []string{"1", "2"} {
		raw := fmt.Sprintf(`{"class":"W","args":[],"queue":"test","jid":%q}`, jid)
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Dead(), redisZ(now.Add(time.Duration(i)*time.Second), raw)).Err())
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Retry(), redisZ(now.Add(time.Duration(i)*time.Second), raw)).Err())
	}
	dead, _ := a.Dead(ctx, ListOptions{})
	assert.Equal(t, []string{"2", "1"}, jidsOf(dead))
	dead, _ = a.Dead(ctx, ListOptions{Offset: 1, Size: 1})
	assert.Equal(t, []string{"1"}, jidsOf(dead))
	retries, _ := a.Retries(ctx, ListOptions{})
	assert.Equal(t, []string{"1", "2"}, jidsOf(retries))

	for _, s := range []Set{RetrySet, DeadSet} {
		rec, err := a.Find(ctx, s, "2")
		require.NoError(t, err, s)
		assert.Equal(t, "2", jobOf(t, rec).JID)
		_, err = a.Find(ctx, s, "nope")
		assert.ErrorIs(t, err, ErrJobNotFound)
	}
	n, _ := a.Size(ctx, DeadSet)
	assert.EqualValues(t, 2, n)
	_, err = a.Size(ctx, Set("bogus"))
	assert.Error(t, err)

	// An undecodable member is listed with its raw string and the reason.
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Dead(), redisZ(now.Add(time.Hour), "garbage")).Err())
	dead, _ = a.Dead(ctx, ListOptions{Size: 1})
	j, err := dead[0].Job()
	assert.Nil(t, j)
	assert.ErrorIs(t, err, ErrUndecodableJob)
	assert.Equal(t, "garbage", dead[0].Raw)
}

func TestAPIRequeueMovesJobsByteIdenticalAndIdempotently(t *testing.T) {
	t.Parallel()
	for _, s := range []Set{RetrySet, ScheduledSet, DeadSet} {
		t.Run(string(s), func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			a, _ := v.api()
			key := setKeyOf(v.keys, s)
			raw := `{"class":"W","args":[1, {"x":"ü"}],"queue":"custom","jid":"r1","bid":"keep","retry_count":3}`
			require.NoError(t, v.rdb.ZAdd(ctx, key, redisZ(time.Now().Add(time.Hour), raw)).Err())
			moved, err := a.Requeue(ctx, s, []string{raw})
			require.NoError(t, err)
			assert.Equal(t, 1, moved)
			moved, err = a.Requeue(ctx, s, []string{raw})
			require.NoError(t, err)
			assert.Zero(t, moved, "a second call moves nothing")
			assert.Equal(t, []string{raw}, v.list(v.keys.Queue("custom")), "byte for byte")
			assert.Contains(t, v.rdb.SMembers(ctx, v.keys.Queues()).Val(), "custom")
			assert.Zero(t, v.zcard(key))
		})
	}
}

func TestAPIKillMovesJobsToDeadByteIdenticalAndIdempotently(t *testing.T) {
	t.Parallel()
	for _, s := range []Set{RetrySet, ScheduledSet} {
		t.Run(string(s), func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			a, _ := v.api()
			key := setKeyOf(v.keys, s)
			raw := `{"class":"W","args":[1, {"x":"ü"}],"queue":"custom","jid":"k1","bid":"keep","retry_count":3}`
			other := `{"class":"W","args":[],"queue":"custom","jid":"k2"}`
			require.NoError(t, v.rdb.ZAdd(ctx, key, redisZ(time.Now().Add(time.Hour), raw), redisZ(time.Now().Add(time.Hour), other)).Err())
			before := time.Now()
			moved, err := a.Kill(ctx, s, []string{raw, `{"not":"there"}`})
			require.NoError(t, err)
			assert.Equal(t, 1, moved)
			moved, err = a.Kill(ctx, s, []string{raw})
			require.NoError(t, err)
			assert.Zero(t, moved, "a second call moves nothing")
			dead := v.rdb.ZRangeWithScores(ctx, v.keys.Dead(), 0, -1).Val()
			require.Len(t, dead, 1)
			assert.Equal(t, raw, dead[0].Member, "byte for byte")
			assert.InDelta(t, float64(before.UnixMicro())/1e6, dead[0].Score, 5, "scored at its death")
			assert.Equal(t, []string{other}, v.rdb.ZRange(ctx, key, 0, -1).Val())
		})
	}
	v := newEnv(t)
	a, _ := v.api()
	_, err := a.Kill(context.Background(), DeadSet, []string{"x"})
	assert.Error(t, err, "dead jobs are dead already")
}

func TestAPIRequeueJobMovesOneJobByJIDByteForByteOnce(t *testing.T) {
	t.Parallel()
	for _, s := range []Set{RetrySet, ScheduledSet, DeadSet} {
		t.Run(string(s), func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			a, _ := v.api()
			key := setKeyOf(v.keys, s)
			raw := `{"class":"W","args":[1, {"x":"ü"}],"queue":"custom","jid":"r1","bid":"keep","retry_count":3}`
			other := `{"class":"W","args":[],"queue":"custom","jid":"r2"}`
			require.NoError(t, v.rdb.ZAdd(ctx, key, redisZ(time.Now().Add(time.Hour), raw), redisZ(time.Now(), other)).Err())
			rec, err := a.RequeueJob(ctx, s, "r1")
			require.NoError(t, err)
			assert.Equal(t, raw, rec.Raw)
			assert.Equal(t, "custom", jobOf(t, rec).Queue)
			assert.Equal(t, []string{raw}, v.list(v.keys.Queue("custom")), "byte for byte")
			assert.Equal(t, 1, v.zcard(key), "only that job moved")

			_, err = a.RequeueJob(ctx, s, "r1")
			assert.ErrorIs(t, err, ErrJobNotFound, "a second call finds nothing")
			assert.Len(t, v.list(v.keys.Queue("custom")), 1, "and moves nothing")
			_, err = a.RequeueJob(ctx, s, "nope")
			assert.ErrorIs(t, err, ErrJobNotFound)
			_, err = a.RequeueJob(ctx, Set("bogus"), "r2")
			assert.Error(t, err)
		})
	}
}

func TestAPIRequeueAllReportsProgressAndLeavesUnroutableJobs(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, _ := v.api()
	const n = 1234
	for i := 0; i < n; i++ {
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Dead(), redisZ(time.Unix(int64(1700000000+i), 0),
			fmt.Sprintf(`{"class":"W","args":[%d],"queue":"revived","jid":"d%d"}`, i, i))).Err())
	}
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Dead(), redisZ(time.Unix(1600000000, 0), "no queue here")).Err())
	var calls, last int
	moved, err := a.RequeueAll(ctx, DeadSet, func(done, total int) {
		calls++
		last = done
		assert.Equal(t, n+1, total)
	})
	require.NoError(t, err)
	assert.Equal(t, n, moved)
	assert.Equal(t, n, last)
	assert.GreaterOrEqual(t, calls, 3, "progress after every page")
	assert.Len(t, v.list(v.keys.Queue("revived")), n)
	assert.Equal(t, 1, v.zcard(v.keys.Dead()), "the unroutable member stays")
}

func TestAPIRequeueAllMovesOnlyWhatWasThereWhileMovedJobsFailBackIn(t *testing.T) {
	t.Parallel()
	// Jobs of a class that fails at once come back into a set while RequeueAll is still
	// paging through it: dead again (retry 0), or into retry ahead of the jobs still waiting
	// there. The call moves each job that was there when it started, once, and returns.
	const n = 3000
	for _, tc := range []struct {
		set   Set
		retry int
	}{
		{DeadSet, 0},
		{RetrySet, 25},
		{ScheduledSet, 25},
	} {
		t.Run(string(tc.set), func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			a, _ := v.api()
			key := setKeyOf(v.keys, tc.set)
			start := time.Now().Add(time.Hour)
			for i := 0; i < n; i += 500 {
				zs := make([]redis.Z, 0, 500)
				for j := i; j < i+500; j++ {
					zs = append(zs, redisZ(start.Add(time.Duration(j)*time.Millisecond),
						fmt.Sprintf(`{"class":"Dies","args":[%d],"queue":"revived","jid":"d%d","retry":%d}`, j, j, tc.retry)))
				}
				require.NoError(t, v.rdb.ZAdd(ctx, key, zs...).Err())
			}
			v.start(Options{
				Queues:           []Queue{{Name: "revived", Concurrency: 50}},
				Workers:          map[string]Worker{"Dies": WorkerFunc(func(context.Context, *Job) error { return errors.New("dies") })},
				Backoff:          func(int, *Job) time.Duration { return time.Minute }, // before every job still waiting in retry
				DisableScheduler: true,
			})
			moved, err := a.RequeueAll(ctx, tc.set, nil)
			require.NoError(t, err)
			assert.Equal(t, n, moved, "each job that was there moved once")
			testutil.WaitFor(t, "every moved job failed once", func() bool {
				return v.zcard(v.keys.Dead())+v.zcard(v.keys.Retry()) == n && len(v.list(v.keys.Queue("revived"))) == 0
			})
		})
	}
}

func TestAPIRequeueAllPagesThroughMembersSharingOneScore(t *testing.T) {
	t.Parallel()
	// EnqueueAll with one At gives a whole batch one score: paging by score must still see
	// every member once, with unroutable ones staying behind in the same score.
	v := newEnv(t)
	ctx := context.Background()
	a, _ := v.api()
	at := time.Unix(1796010415, 0)
	const n = 1300
	zs := make([]redis.Z, 0, n)
	for i := 0; i < n; i++ {
		raw := fmt.Sprintf(`{"class":"W","args":[%d],"queue":"same","jid":"s%04d"}`, i, i)
		if i%3 != 0 { // more unroutable members than a page: the scan must step over them
			raw = fmt.Sprintf(`{"class":"W","args":[%d],"jid":"s%04d"}`, i, i) // no queue
		}
		zs = append(zs, redisZ(at, raw))
	}
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Schedule(), zs...).Err())
	moved, err := a.RequeueAll(ctx, ScheduledSet, nil)
	require.NoError(t, err)
	assert.Equal(t, 434, moved)
	assert.Len(t, v.list(v.keys.Queue("same")), 434)
	assert.Equal(t, n-434, v.zcard(v.keys.Schedule()))
}

func TestAPIRemoveAndClearWithAndWithoutUniqueLocks(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"queue", "retry", "schedule", "dead"} {
		t.Run(where, func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			a, c := v.api()
			// Two unique jobs and a plain one sit in the same place.
			var raws []string
			for i, tok := range []string{"t1", "t2", ""} {
				opts := []EnqueueOption{JID(fmt.Sprintf("j%d", i))}
				if tok != "" {
					opts = append(opts, Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour, Token: tok}))
				}
				_, err := c.Enqueue(ctx, "custom", "W", []any{i}, opts...)
				require.NoError(t, err)
			}
			raws = v.list(v.keys.Queue("custom"))
			raws[0], raws[2] = raws[2], raws[0] // first enqueued first: t1, t2, plain
			if where != "queue" {
				require.NoError(t, v.rdb.Del(ctx, v.keys.Queue("custom")).Err())
				for _, r := range raws {
					require.NoError(t, v.rdb.ZAdd(ctx, v.ns+":"+where, redisZ(time.Now(), r)).Err())
				}
			}
			remove := func(rs []string, o RemoveOptions) (int, error) {
				if where == "queue" {
					return a.RemoveJobs(ctx, "custom", rs, o)
				}
				return a.Remove(ctx, Set(where), rs, o)
			}
			// Without clearing: the lock stays.
			n, err := remove(raws[:1], RemoveOptions{})
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			jid, err := c.Enqueue(ctx, "other", "W", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour, Token: tokenOf(t, raws[0])}))
			assert.ErrorIs(t, err, ErrUniqueConflict)
			assert.NotEmpty(t, jid)
			// With clearing: the rest go and their locks are released.
			n, err = remove(raws[1:], RemoveOptions{ClearUniqueLocks: true})
			require.NoError(t, err)
			assert.Equal(t, 2, n)
			for _, r := range raws[1:] {
				if tok := tokenOf(t, r); tok != "" {
					_, err := c.Enqueue(ctx, "other", "W", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour, Token: tok}))
					assert.NoError(t, err, "lock %s released", tok)
				}
			}
		})
	}
	v := newEnv(t)
	ctx := context.Background()
	a, c := v.api()
	_, err := c.EnqueueIn(ctx, "q", "W", time.Hour, nil)
	require.NoError(t, err)
	require.NoError(t, a.Clear(ctx, ScheduledSet))
	assert.Zero(t, v.zcard(v.keys.Schedule()))
}

func tokenOf(t *testing.T, raw string) string {
	tok, _ := decode(t, raw)["unique_token"].(string)
	return tok
}

func TestAPIStatsProcessesBusyAndSignals(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	rec := &recorder{fn: func(ctx context.Context, job *Job) error {
		if job.JID == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if job.JID == "bad" {
			return errors.New("x")
		}
		return nil
	}}
	e := v.start(Options{Workers: map[string]Worker{"W": rec}}, testHooks{pingInterval: 10 * time.Millisecond, statsInterval: 10 * time.Millisecond})
	a := e.API()
	st, err := a.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, Stats{}, st)
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"ok"}`)
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"bad","retry":0}`)
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"slow"}`)
	testutil.WaitFor(t, "1 processed, 1 failed", func() bool {
		st, _ := a.Stats(ctx)
		return st == Stats{Processed: 1, Failed: 1}
	})
	days, err := a.StatsBetween(ctx, time.Now().AddDate(0, 0, -1), time.Now())
	require.NoError(t, err)
	require.Len(t, days, 2)
	assert.Equal(t, Stats{}, days[0].Stats)
	assert.Equal(t, Stats{Processed: 1, Failed: 1}, days[1].Stats)
	rt, err := a.Realtime(ctx)
	require.NoError(t, err)
	var sum Stats
	for _, s := range rt {
		sum.Processed += s.Processed
		sum.Failed += s.Failed
	}
	assert.Equal(t, Stats{Processed: 1, Failed: 1}, sum)

	// The busy list is written every 10 ms from the running jobs: the failed job is among them
	// from its stats until its slot is freed, and the slow one only once it is fetched.
	testutil.WaitFor(t, "the slow job alone is busy", func() bool {
		b, _ := a.BusyJobs(ctx)
		if len(b) != 1 {
			return false
		}
		j, err := b[0].JobRecord.Job()
		return err == nil && j.JID == "slow"
	})
	busy, _ := a.BusyJobs(ctx)
	assert.Equal(t, e.NodeID(), busy[0].Node)
	assert.Equal(t, "slow", jobOf(t, busy[0].JobRecord).JID)
	assert.Equal(t, "default", busy[0].Queue)
	procs, err := a.Processes(ctx)
	require.NoError(t, err)
	require.Len(t, procs, 1)
	assert.Equal(t, e.NodeID(), procs[0].Identity)
	assert.Equal(t, names.DefaultTag(), procs[0].Tag)
	assert.Equal(t, []string{"exq-go"}, procs[0].Labels)
	assert.Equal(t, []string{"default"}, procs[0].Queues)
	assert.Equal(t, DefaultConcurrency, procs[0].Concurrency)
	ov, err := a.Overview(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, ov.Processes)
	assert.EqualValues(t, 1, ov.Dead)

	node, err := a.CancelJob(ctx, "slow")
	require.NoError(t, err)
	assert.Equal(t, e.NodeID(), node)
	testutil.WaitFor(t, "the cancelled job is dead", func() bool {
		_, err := a.Find(ctx, DeadSet, "slow")
		return err == nil
	})
	testutil.WaitFor(t, "the busy list is empty", func() bool {
		b, _ := a.BusyJobs(ctx)
		return len(b) == 0
	})
	_, err = a.CancelJob(ctx, "slow")
	assert.ErrorIs(t, err, ErrJobNotFound)

	require.NoError(t, a.QuietNode(ctx, e.NodeID()))
	testutil.WaitFor(t, "the node is quiet", func() bool {
		p, _ := a.Processes(ctx)
		return len(p) == 1 && p[0].Quiet
	})
	require.NoError(t, a.StopNode(ctx, e.NodeID()))
	testutil.WaitFor(t, "Done is closed", func() bool {
		select {
		case <-e.Done():
			return true
		default:
			return false
		}
	})
	assert.Error(t, a.SendSignal(ctx, "", "TSTP"))
	close(release)
}

func TestAPIRedisInfo(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	a, _ := v.api()
	info, err := a.RedisInfo(context.Background())
	require.NoError(t, err)
	assert.NotEmpty(t, info.Version)
	assert.NotEmpty(t, info.Mode)
	assert.Positive(t, info.UsedMemory)
	assert.GreaterOrEqual(t, info.PeakMemory, info.UsedMemory/2)
	assert.Positive(t, info.Clients)
	assert.NotEmpty(t, info.Eviction)
}

func TestNewAPIAndNewClientFailClearlyWithoutRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := NewAPI(ctx, ClientOptions{RedisURL: "redis://:pw@127.0.0.1:1/0", RedisTimeout: time.Second})
	assert.ErrorIs(t, err, ErrRedisUnavailable)
	assert.NotContains(t, err.Error(), ":pw@")
	_, err = NewClient(ctx, ClientOptions{RedisURL: "redis://127.0.0.1:1/0", RedisTimeout: time.Second})
	assert.ErrorIs(t, err, ErrRedisUnavailable)
}

func TestPrepareJobIsWhatEnqueueWrites(t *testing.T) {
	t.Parallel()
	j, err := PrepareJob(time.Now(), JobSpec{Queue: "mail", Class: "W", Args: []any{1, "a"}, Options: []EnqueueOption{JID("p1"), MaxRetries(2)}})
	require.NoError(t, err)
	assert.Equal(t, "p1", j.JID)
	assert.Equal(t, 2, j.MaxRetries)
	assert.JSONEq(t, `[1,"a"]`, string(j.Args))
	assert.Contains(t, j.Raw(), `{"class":"W","args":[1,"a"],"queue":"mail","jid":"p1","enqueued_at":`)
	_, err = PrepareJob(time.Now(), JobSpec{Queue: "mail"})
	assert.ErrorIs(t, err, ErrInvalidJob)
	at := time.Now().Add(time.Hour)
	j, err = PrepareJob(time.Now(), JobSpec{Queue: "mail", Class: "W", At: at})
	require.NoError(t, err)
	assert.WithinDuration(t, at, j.EnqueuedAt, time.Millisecond)
}

// A node's stored busy count near the int64 limit, or negative, never wraps the overview's
// total into a negative number of busy jobs (two nodes storing 9223372036854775807 and
// -9223372036854775808 made exq stats and the dashboard say "-1 busy"); sums over shards
// stop at the limit too.
func TestOverviewCountsNeverWrapWhateverNodesStore(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, _ := v.api()
	for id, busy := range map[string]string{"big:1:a": "9223372036854775807", "big:1:b": "9223372036854775807", "neg:1:c": "-9223372036854775808"} {
		require.NoError(t, v.rdb.HSet(ctx, v.ns+":"+id, "info", `{"hostname":"h"}`, "busy", busy).Err())
		require.NoError(t, v.rdb.SAdd(ctx, v.ns+":processes", id).Err())
	}
	o, err := a.Overview(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, o.Processes)
	assert.Equal(t, math.MaxInt, o.Busy, "held at the limit, the negative count read as none")
	procs, err := a.Processes(ctx)
	require.NoError(t, err)
	for _, p := range procs {
		assert.GreaterOrEqual(t, p.Busy, 0, p.Identity)
	}

	var sum Overview
	sum.Add(Overview{Stats: Stats{Processed: math.MaxInt64}, Busy: math.MaxInt, Enqueued: math.MaxInt64})
	sum.Add(Overview{Stats: Stats{Processed: 5}, Busy: 1, Enqueued: 1})
	assert.Equal(t, int64(math.MaxInt64), sum.Processed)
	assert.Equal(t, math.MaxInt, sum.Busy)
	assert.Equal(t, int64(math.MaxInt64), sum.Enqueued)
	sum.Add(Overview{Stats: Stats{Failed: math.MinInt64}})
	sum.Add(Overview{Stats: Stats{Failed: -1}})
	assert.Equal(t, int64(math.MinInt64), sum.Failed)
}
