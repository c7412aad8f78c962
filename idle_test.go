package exq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/scheduler"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// startLog records when each attempt of each job began, by jid.
type startLog struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (s *startLog) record(jid string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string][]time.Time{}
	}
	s.at[jid] = append(s.at[jid], time.Now())
	return len(s.at[jid])
}

// attempt returns when attempt n (1-based) of jid began, or the zero time.
func (s *startLog) attempt(jid string, n int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.at[jid]) < n {
		return time.Time{}
	}
	return s.at[jid][n-1]
}

// waitAttempt polls until attempt n of jid began, failing the test after within.
func (s *startLog) waitAttempt(t *testing.T, jid string, n int, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if at := s.attempt(jid, n); !at.IsZero() {
			return at
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("attempt %d of %s did not start within %s", n, jid, within)
	return time.Time{}
}

// commandCalls sums the calls of INFO commandstats (commands run by scripts included), leaving
// out the INFO and CONFIG calls of the test itself.
func commandCalls(t *testing.T, rdb *redis.Client) (int, map[string]int) {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	total, by := 0, map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") || name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.Atoi(calls)
		require.NoError(t, err, line)
		total += n
		by[name] = n
	}
	return total, by
}

// idleNode starts a node with the default poll settings and three queues (a, b, c) on a
// redis-server of its own, in the default namespace: a worker OK, and FailOnce, whose first
// attempt fails (Backoff 1 s). It returns the node, a plain client of the server, and the log
// of when each attempt began.
func idleNode(t *testing.T) (*Exq, *redis.Client, *startLog) {
	t.Helper()
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	st := &startLog{}
	failOnce := WorkerFunc(func(ctx context.Context, job *Job) error {
		if st.record(job.JID) == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	})
	ok := WorkerFunc(func(ctx context.Context, job *Job) error { st.record(job.JID); return nil })
	o := Options{RedisURL: srv.URL(), Logger: testLogger(),
		Queues:  []Queue{{Name: "a", Concurrency: 5}, {Name: "b", Concurrency: 5}, {Name: "c", Concurrency: 5}},
		Workers: map[string]Worker{"OK": ok, "FailOnce": failOnce},
		Backoff: func(int, *Job) time.Duration { return time.Second }}
	e, err := start(context.Background(), o, testHooks{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
	})
	return e, rdb, st
}

// An idle node with the default poll settings and three queues costs Redis a few commands a
// second, yet still finds a job whose wake-up never came (pushed as Sidekiq does) within the
// idle poll cap, and moves a scheduled job written without an announcement within the
// scheduler's cap. It runs on a Redis of its own (INFO commandstats counts every client's
// calls), so it runs beside other tests: its bounds are the caps of seconds, plus 500 ms.
func TestIdleNodeIsCheapAndStillFindsUnannouncedJobs(t *testing.T) {
	t.Parallel()
	_, rdb, st := idleNode(t)
	ctx := context.Background()
	keys := wire.NewKeys(DefaultNamespace)
	pollCap, schedCap := idleCap(DefaultPollTimeout), scheduler.Cap(DefaultSchedulerPollTimeout)

	// Commands: once the poll back-off has reached its cap (100 ms doubled up to 5 s, 6.3 s of
	// sleeps; 8 s leaves room for a node slowed by the tests beside it), over a window of two
	// whole periods of everything an idle node does every 5 s (heartbeat, ping, stats, capped
	// poll, scheduler's cap): it holds two of each whatever their phase, where an 8 s window
	// held one or two (10.1-10.2 commands/s when it caught two of each, which made the test run
	// alone for a while: d961405).
	time.Sleep(8 * time.Second)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	const window = 10 * time.Second
	time.Sleep(window)
	total, by := commandCalls(t, rdb)
	perSec := float64(total) / window.Seconds()
	t.Logf("idle node, 3 queues: %.1f commands/s %v", perSec, by)
	assert.LessOrEqual(t, perSec, 10.0, "commands per second of an idle node, in-script ones included: %v", by)

	// A job pushed without a wake-up, as Sidekiq does, while the node polls at its cap: found
	// by the safety poll, within the cap.
	raw := `{"class":"OK","args":[],"queue":"c","jid":"pushed","retry":true,"enqueued_at":` + wire.FormatTime(time.Now()) + `}`
	t0 := time.Now()
	require.NoError(t, rdb.LPush(ctx, keys.Queue("c"), raw).Err())
	at := st.waitAttempt(t, "pushed", 1, pollCap+2*time.Second)
	assert.LessOrEqual(t, at.Sub(t0), pollCap+500*time.Millisecond, "a job whose wake-up never came waits at most the idle poll cap")

	// A scheduled job written without an announcement (Sidekiq, Exq, an older exq) while the
	// scheduler sleeps (the sets are empty: at its cap): moved within the cap of being due.
	due := time.Now().Add(500 * time.Millisecond)
	raw = `{"class":"OK","args":[],"queue":"b","jid":"foreign","retry":true,"enqueued_at":` + wire.FormatTime(time.Now()) + `}`
	require.NoError(t, rdb.ZAdd(ctx, keys.Schedule(), redis.Z{Score: float64(due.UnixMicro()) / 1e6, Member: raw}).Err())
	at = st.waitAttempt(t, "foreign", 1, schedCap+2*time.Second)
	assertNotBeforeDue(t, at, due)
	assert.LessOrEqual(t, at.Sub(due), schedCap+500*time.Millisecond, "an unannounced scheduled job is moved within the scheduler's cap")
}

// An idle node with the default poll settings picks up an enqueued job at once, and moves a
// scheduled job and a retry when they are due, not at the scheduler's next safety look.
func testIdleNodeRunsAnnouncedJobsPromptly(t *testing.T) {
	// Timed (timed_test.go): asserts pickups within 200 ms and moves within SchedulerPollTimeout + 300 ms.
	e, _, st := idleNode(t)
	ctx := context.Background()
	schedCap := scheduler.Cap(DefaultSchedulerPollTimeout)
	time.Sleep(time.Second) // the sets are empty: the scheduler sleeps at its cap

	// A job scheduled 1 s ahead runs when due, not at the scheduler's next safety look.
	due := time.Now().Add(time.Second)
	jid, err := e.EnqueueAt(ctx, "a", "OK", due, nil)
	require.NoError(t, err)
	at := st.waitAttempt(t, jid, 1, schedCap+2*time.Second)
	assertNotBeforeDue(t, at, due)
	assert.LessOrEqual(t, at.Sub(due), DefaultSchedulerPollTimeout+300*time.Millisecond, "a scheduled job runs within SchedulerPollTimeout of being due")

	// A retry (Backoff 1 s) comes back on time.
	jid, err = e.Enqueue(ctx, "a", "FailOnce", nil)
	require.NoError(t, err)
	first := st.waitAttempt(t, jid, 1, time.Second)
	second := st.waitAttempt(t, jid, 2, schedCap+2*time.Second)
	assert.GreaterOrEqual(t, second.Sub(first), time.Second, "not before its backoff")
	assert.LessOrEqual(t, second.Sub(first), time.Second+DefaultSchedulerPollTimeout+300*time.Millisecond, "a retry runs within SchedulerPollTimeout of being due")

	// A job enqueued to a node idle for 3 s starts at once: the enqueue's wake-up.
	time.Sleep(3 * time.Second)
	t0 := time.Now()
	jid, err = e.Enqueue(ctx, "b", "OK", nil)
	require.NoError(t, err)
	at = st.waitAttempt(t, jid, 1, time.Second)
	assert.Less(t, at.Sub(t0), 200*time.Millisecond, "pickup of an enqueued job by an idle node")
}

// The back-off of the poll loop, with the test's PollTimeout: it doubles from PollTimeout up
// to idleCap, and a wake-up sets it back, so a pushed job is found within the cap.
func testIdlePollBacksOffAndWakeUpsReset(t *testing.T) {
	// Timed (timed_test.go): asserts polls per 2 s and pickups within 200 ms.
	assert.Equal(t, 5*time.Second, idleCap(100*time.Millisecond))
	assert.Equal(t, time.Second, idleCap(20*time.Millisecond))
	assert.Equal(t, 10*time.Second, idleCap(10*time.Second), "never less than PollTimeout")
	assert.Equal(t, 5*time.Second, scheduler.Cap(200*time.Millisecond))
	assert.Equal(t, 500*time.Millisecond, scheduler.Cap(20*time.Millisecond))
	assert.Equal(t, time.Minute, scheduler.Cap(time.Minute))

	v := newEnv(t)
	var st startLog
	e := v.start(Options{Queues: []Queue{{Name: "q"}},
		Workers: map[string]Worker{"OK": WorkerFunc(func(ctx context.Context, job *Job) error { st.record(job.JID); return nil })}})
	// Idle for 2 s with PollTimeout 20 ms: 20, 40, … 640 ms, then 1 s: about 7 polls, where
	// polling every PollTimeout made 100.
	time.Sleep(2 * time.Second)
	polls := e.mgr.polls.Load()
	assert.LessOrEqual(t, polls, uint64(12), "polls of an idle node in 2 s")
	assert.GreaterOrEqual(t, polls, uint64(4))

	// An enqueue wakes it at once.
	t0 := time.Now()
	jid, err := e.Enqueue(context.Background(), "q", "OK", nil)
	require.NoError(t, err)
	assert.Less(t, st.waitAttempt(t, jid, 1, time.Second).Sub(t0), 200*time.Millisecond)

	// A push without a wake-up is found by the next poll, within the cap.
	time.Sleep(2 * time.Second)
	t0 = time.Now()
	v.push("q", `{"class":"OK","args":[],"queue":"q","jid":"pushed"}`)
	assert.LessOrEqual(t, st.waitAttempt(t, "pushed", 1, 3*time.Second).Sub(t0), idleCap(20*time.Millisecond)+200*time.Millisecond)
}

// The scripts that add to the schedule and retry sets announce a job only when it is due
// before every job the set held, with a payload the poll loop cannot take for a queue.
func testScheduledWritesAnnounceOnlyAnEarlierHead(t *testing.T) {
	// Timed (timed_test.go): each announcement must arrive within 500 ms.
	v := newEnv(t)
	ctx := context.Background()
	ps := v.rdb.Subscribe(ctx, v.keys.Wake())
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	msgs := ps.Channel()
	next := func() string {
		t.Helper()
		select {
		case m := <-msgs:
			return m.Payload
		case <-time.After(500 * time.Millisecond):
			return "(none)"
		}
	}
	assert.Error(t, names.CheckQueue(scheduler.DueWakePrefix+"1"), "the payload cannot be a queue name")

	cl, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	_, err = cl.EnqueueAt(ctx, "q", "W", base, nil)
	require.NoError(t, err)
	assert.Equal(t, scheduler.DueWakePrefix+wire.FormatTime(base), next(), "first job of an empty set")
	_, err = cl.EnqueueAt(ctx, "q", "W", base.Add(time.Minute), nil)
	require.NoError(t, err)
	_, err = cl.EnqueueAll(ctx, []JobSpec{{Queue: "q", Class: "W", At: base.Add(time.Second)}, {Queue: "q", Class: "W", At: base.Add(2 * time.Second)}})
	require.NoError(t, err)
	assert.Equal(t, "(none)", next(), "later than the head: nothing announced")
	_, err = cl.EnqueueAll(ctx, []JobSpec{{Queue: "q", Class: "W", At: base.Add(time.Second)}, {Queue: "q", Class: "W", At: base.Add(-2 * time.Second)}})
	require.NoError(t, err)
	assert.Equal(t, scheduler.DueWakePrefix+wire.FormatTime(base.Add(-2*time.Second)), next(), "a batch announces its earliest job")
	_, err = cl.EnqueueAt(ctx, "q", "W", base.Add(-time.Minute), nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour}))
	require.NoError(t, err)
	assert.Equal(t, scheduler.DueWakePrefix+wire.FormatTime(base.Add(-time.Minute)), next(), "unique jobs too")

	// retry.lua, as a failing job's outcome writes it.
	jq := testStore(v.client, v.keys, "n")
	for i, at := range []time.Time{base, base.Add(-time.Second), base.Add(time.Second)} {
		raw := fmt.Sprintf(`{"class":"W","args":[],"queue":"q","jid":"r%d"}`, i)
		require.NoError(t, v.rdb.LPush(ctx, v.keys.Backup("n", "q"), raw).Err())
		written, err := jq.Retry(ctx, "q", raw, raw, at, "")
		require.NoError(t, err)
		require.True(t, written)
	}
	assert.Equal(t, scheduler.DueWakePrefix+wire.FormatTime(base), next())
	assert.Equal(t, scheduler.DueWakePrefix+wire.FormatTime(base.Add(-time.Second)), next())
	assert.Equal(t, "(none)", next(), "a retry due after the head")
}

// Scheduled jobs from runtimes that announce nothing are moved within the scheduler's cap (2.5 s
// with SchedulerPollTimeout 100 ms), and exq's own when due, even behind a far head.
func testSchedulerSleepsUntilTheEarliestJobOrItsCap(t *testing.T) {
	// Timed (timed_test.go): asserts moves within the interval + 300 ms.
	v := newEnv(t)
	ctx := context.Background()
	var st startLog
	const interval = 100 * time.Millisecond
	e := v.start(Options{Queues: []Queue{{Name: "q"}}, SchedulerPollTimeout: interval,
		Workers: map[string]Worker{"OK": WorkerFunc(func(ctx context.Context, job *Job) error { st.record(job.JID); return nil })}})
	time.Sleep(500 * time.Millisecond) // the sets are empty: the scheduler sleeps at its cap

	due := time.Now().Add(300 * time.Millisecond)
	raw := `{"class":"OK","args":[],"queue":"q","jid":"foreign"}`
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Schedule(), redis.Z{Score: float64(due.UnixMicro()) / 1e6, Member: raw}).Err())
	at := st.waitAttempt(t, "foreign", 1, 5*time.Second)
	assertNotBeforeDue(t, at, due)
	assert.LessOrEqual(t, at.Sub(due), scheduler.Cap(interval)+500*time.Millisecond)

	// A far job at the head does not delay a nearer one announced later: it runs when due,
	// not at the next look (up to 2.5 s later).
	_, err := e.EnqueueIn(ctx, "q", "OK", time.Hour, nil)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond)
	due = time.Now().Add(300 * time.Millisecond)
	jid, err := e.EnqueueAt(ctx, "q", "OK", due, nil)
	require.NoError(t, err)
	at = st.waitAttempt(t, jid, 1, 5*time.Second)
	assertNotBeforeDue(t, at, due)
	assert.LessOrEqual(t, at.Sub(due), interval+300*time.Millisecond)
}

// Due times that follow each other closely cost at most one pass per SchedulerPollTimeout, as
// polling did, and every job is still moved within it of being due.
func testSchedulerPassesAtMostOncePerInterval(t *testing.T) {
	// Timed (timed_test.go): asserts moves within the interval + 300 ms.
	v := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, counter := v.countingClient()
	const interval = 100 * time.Millisecond
	s := scheduler.New(testStore(client, v.keys, "n"), interval, 100, time.Now, testLogger(), 5*time.Second)
	start := time.Now().Add(100 * time.Millisecond)
	const jobs = 200 // one every 5 ms for a second
	for i := 0; i < jobs; i++ {
		raw := fmt.Sprintf(`{"class":"W","args":[],"queue":"q","jid":"j%d"}`, i)
		at := start.Add(time.Duration(i) * 5 * time.Millisecond)
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Schedule(), redis.Z{Score: float64(at.UnixMicro()) / 1e6, Member: raw}).Err())
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	last := start.Add(jobs * 5 * time.Millisecond)
	testutil.WaitFor(t, "every job moved", func() bool { return v.zcard(v.keys.Schedule()) == 0 })
	assert.LessOrEqual(t, time.Since(last), interval+300*time.Millisecond, "the last job moved within the interval of being due")
	cancel()
	<-done
	passes := counter.Count("zrange") / 2 // each head read is one ZRANGE per set
	assert.LessOrEqual(t, passes, 2*16, "head reads for ~1.1 s of due jobs at a 100 ms interval (two per pass that moved jobs)")
	assert.Len(t, v.list(v.keys.Queue("q")), jobs)
}

// clockSampleError is how early, by this process's clock, a node may move a job: its reading
// of the Redis server's clock is off by up to half the round trip of its TIME sample
// (serverclock), under a millisecond on a quiet loopback, more on a loaded 2-core machine
// running a Redis Cluster (a job was moved early once in CI's cluster run).
const clockSampleError = 25 * time.Millisecond

// assertNotBeforeDue asserts that a job that started at at was not moved before due, within
// clockSampleError.
func assertNotBeforeDue(t *testing.T, at, due time.Time) {
	t.Helper()
	assert.False(t, at.Before(due.Add(-clockSampleError)), "started %s before it was due, more than the node's clock sample may be off (%s)",
		due.Sub(at), clockSampleError)
}
