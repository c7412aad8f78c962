package exq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/scheduler"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// scheduler returns a scheduler on the env's Redis whose clock reads now.
func (v *env) scheduler(now time.Time, page int) *scheduler.Scheduler {
	return scheduler.New(testStore(v.client, v.keys, "n"), time.Hour, page, func() time.Time { return now }, testLogger(), 5*time.Second)
}

func TestSchedulerMovesOnlyDueJobsWithMicrosecondPrecision(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 667948000)
	add := func(set, jid string, at time.Time) string {
		raw := fmt.Sprintf(`{"class":"W","args":[],"queue":"mail","jid":%q, "extra" : [1 , 2]}`, jid)
		require.NoError(t, v.rdb.ZAdd(ctx, set, redisZ(at, raw)).Err())
		return raw
	}
	early := add(v.keys.Schedule(), "early", now.Add(-time.Microsecond))
	exact := add(v.keys.Schedule(), "exact", now)
	add(v.keys.Schedule(), "late", now.Add(time.Microsecond))
	retryDue := add(v.keys.Retry(), "retry-due", now.Add(-time.Hour))
	add(v.keys.Retry(), "retry-later", now.Add(time.Second))

	require.NoError(t, v.scheduler(now, 10).Tick(ctx))

	q := v.list(v.keys.Queue("mail"))
	assert.ElementsMatch(t, []string{early, exact, retryDue}, q, "due jobs moved with their raw strings unchanged")
	assert.Equal(t, []string{"mail"}, v.rdb.SMembers(ctx, v.keys.Queues()).Val())
	assert.Equal(t, 1, v.zcard(v.keys.Schedule()), "the job due one microsecond later stays")
	assert.Equal(t, 1, v.zcard(v.keys.Retry()))
	assert.Equal(t, early, q[len(q)-1], "the earliest due job is next to run")
}

func TestSchedulerMovesInPages(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 0)
	for i := 0; i < 10; i++ {
		raw := fmt.Sprintf(`{"class":"W","args":[%d],"queue":"q","jid":"s%d"}`, i, i)
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Schedule(), redisZ(now.Add(-time.Duration(10-i)*time.Second), raw)).Err())
	}
	client, counter := v.countingClient()
	s := scheduler.New(testStore(client, v.keys, "n"), time.Hour, 3, func() time.Time { return now }, testLogger(), 5*time.Second)
	require.NoError(t, s.Tick(ctx))
	assert.Len(t, v.list(v.keys.Queue("q")), 10)
	assert.Zero(t, v.zcard(v.keys.Schedule()))
	// schedule: pages of 3, 3, 3, 1, each read and then moved by a script; retry: one empty
	// read and no script.
	assert.Equal(t, 5, counter.Count("zrangebyscore"))
	assert.Equal(t, 4, counter.Count("evalsha"))
	q := v.list(v.keys.Queue("q"))
	assert.Contains(t, q[len(q)-1], `"jid":"s0"`, "oldest due first")
}

func TestSchedulerDeadLettersMembersItCannotRoute(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 0)
	for _, raw := range []string{`garbage`, `{"class":"W","args":[]}`, `{"class":"W","queue":""}`, `[1]`} {
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Retry(), redisZ(now.Add(-time.Second), raw)).Err())
	}
	good := `{"class":"W","args":[],"queue":"default","jid":"ok"}`
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Retry(), redisZ(now.Add(-time.Second), good)).Err())
	require.NoError(t, v.scheduler(now, 10).Tick(ctx))
	assert.Equal(t, []string{good}, v.list(v.keys.Queue("default")))
	assert.Zero(t, v.zcard(v.keys.Retry()))
	dead := v.zset(v.keys.Dead())
	require.Len(t, dead, 4)
	raws := []string{}
	for _, z := range dead {
		m := decode(t, z.Member.(string))
		assert.Equal(t, wire.PoisonClass, m["class"])
		assert.Equal(t, wire.PoisonErrorClass, m["error_class"])
		assert.Contains(t, m["error_message"], "cannot route a job from "+v.keys.Retry())
		raws = append(raws, m["raw"].(string))
	}
	assert.ElementsMatch(t, []string{`garbage`, `{"class":"W","args":[]}`, `{"class":"W","queue":""}`, `[1]`}, raws)
}

func TestScheduledAndRetriedJobsRunWhenDue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"W": rec}})
	jidIn, err := e.EnqueueIn(ctx, "default", "W", 0, []any{"in"})
	require.NoError(t, err)
	jidAt, err := e.EnqueueAt(ctx, "default", "W", time.Now().Add(-time.Second), []any{"at"})
	require.NoError(t, err)
	res, err := e.EnqueueAll(ctx, []JobSpec{
		{Queue: "default", Class: "W", Args: []any{"now"}},
		{Queue: "default", Class: "W", Args: []any{"all-at"}, At: time.Now()},
		{Queue: "default", Class: "W", Args: []any{"all-in"}, In: 0},
	})
	require.NoError(t, err)
	later, err := e.EnqueueIn(ctx, "default", "W", time.Hour, nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "5 jobs ran", func() bool { return rec.count() == 5 })
	assert.ElementsMatch(t, []string{jidIn, jidAt, res[0].JID, res[1].JID, res[2].JID}, rec.jids())
	assert.NotContains(t, rec.jids(), later)
	assert.Equal(t, 1, v.zcard(v.keys.Schedule()))
}

func TestFailedJobIsRetriedThroughTheRetrySet(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var attempts []int
	done := make(chan struct{})
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		attempts = append(attempts, job.RetryCount)
		if job.RetryCount < 2 {
			return fmt.Errorf("attempt %d fails", job.RetryCount+1)
		}
		close(done)
		return nil
	})
	e := v.start(Options{Queues: []Queue{{Name: "default", Concurrency: 1}}, Workers: map[string]Worker{"W": w},
		Backoff: func(int, *Job) time.Duration { return 0 }})
	_, err := e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "third attempt succeeded", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	assert.Equal(t, []int{0, 1, 2}, attempts)
	testutil.WaitFor(t, "nothing left", func() bool {
		return v.zcard(v.keys.Retry()) == 0 && len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0
	})
}

func TestSchedulerMovesMembersWithNegativeScores(t *testing.T) {
	t.Parallel()
	// Another runtime (or an older exq) may have written jobs due before 1970: they are due.
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 0)
	for _, tc := range []struct {
		name  string
		set   string
		score string
	}{
		{"schedule, just before 1970", v.keys.Schedule(), "-0.5"},
		{"schedule, 1900", v.keys.Schedule(), "-2208988800"},
		{"retry, far past", v.keys.Retry(), "-1e300"},
		{"retry, minus infinity", v.keys.Retry(), "-inf"},
	} {
		raw := fmt.Sprintf(`{"class":"W","args":[],"queue":"old","jid":%q}`, tc.name)
		require.NoError(t, v.rdb.Do(ctx, "ZADD", tc.set, tc.score, raw).Err(), tc.name)
	}
	require.NoError(t, v.scheduler(now, 10).Tick(ctx))
	assert.Len(t, v.list(v.keys.Queue("old")), 4, "every member due before 1970 moved")
	assert.Zero(t, v.zcard(v.keys.Schedule()))
	assert.Zero(t, v.zcard(v.keys.Retry()))
}

func TestJobsDueBefore1970Run(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"W": rec}})
	pre1970 := time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		enqueue func() (string, error)
	}{
		{"EnqueueAt 1969", func() (string, error) { return e.EnqueueAt(ctx, "default", "W", pre1970, nil) }},
		{"EnqueueAt year 1", func() (string, error) {
			return e.EnqueueAt(ctx, "default", "W", time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), nil)
		}},
		{"EnqueueIn minus 100 years", func() (string, error) { return e.EnqueueIn(ctx, "default", "W", -100*365*24*time.Hour, nil) }},
		{"EnqueueAll At 1969", func() (string, error) {
			res, err := e.EnqueueAll(ctx, []JobSpec{{Queue: "default", Class: "W", At: pre1970}})
			if err != nil {
				return "", err
			}
			return res[0].JID, res[0].Err
		}},
		{"EnqueueAll In minus 100 years", func() (string, error) {
			res, err := e.EnqueueAll(ctx, []JobSpec{{Queue: "default", Class: "W", In: -100 * 365 * 24 * time.Hour}})
			if err != nil {
				return "", err
			}
			return res[0].JID, res[0].Err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jid, err := tc.enqueue()
			require.NoError(t, err)
			testutil.WaitFor(t, "the job ran", func() bool {
				for _, j := range rec.jids() {
					if j == jid {
						return true
					}
				}
				return false
			})
		})
	}
	assert.Zero(t, v.zcard(v.keys.Schedule()), "nothing is left scheduled")
}

// The members are read before the script moves them, so schedulers racing over the same pages
// must move each member once: the script moves only what is still in the set.
func TestRacingSchedulersMoveEachJobOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 0)
	const n = 300
	for i := 0; i < n; i++ {
		raw := fmt.Sprintf(`{"class":"W","args":[],"queue":"q%d","jid":"r%d"}`, i%3, i)
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Schedule(), redisZ(now.Add(-time.Duration(i)*time.Millisecond), raw)).Err())
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- v.scheduler(now, 7).Tick(ctx) }()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	seen := map[string]bool{}
	for q := 0; q < 3; q++ {
		for _, raw := range v.list(v.keys.Queue(fmt.Sprintf("q%d", q))) {
			jid := decode(t, raw)["jid"].(string)
			require.False(t, seen[jid], "%s moved twice", jid)
			seen[jid] = true
		}
	}
	assert.Len(t, seen, n)
	assert.Zero(t, v.zcard(v.keys.Schedule()))
	assert.Zero(t, v.zcard(v.keys.Dead()))
}
