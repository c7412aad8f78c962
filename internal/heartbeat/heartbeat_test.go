package heartbeat

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// The heartbeat against a real Redis, in a namespace of the test's own. Windows are an hour
// unless a test needs a node to be dead: then its deadline is passed on the server's clock
// (pastDeadline polls TIME), never by sleeping.

type env struct {
	rdb  *redis.Client
	ns   string
	keys wire.Keys
	logs *testutil.LogBuffer
}

func newEnv(t *testing.T) *env {
	t.Parallel()
	rdb, ns := testutil.Redis(t)
	return &env{rdb: rdb, ns: ns, keys: wire.NewKeys(ns), logs: &testutil.LogBuffer{}}
}

// heartbeat returns the heartbeat of node with a window of an hour (Interval 20 min, Missed 2),
// subscribed to q; edit changes its parts.
func (e *env) heartbeat(node string, edit func(*Parts)) *Heartbeat {
	p := Parts{Store: store.New(e.rdb, store.Config{Namespace: e.ns, Node: node}), Interval: 20 * time.Minute, Missed: 2,
		Foreign: 10 * time.Second, Timeout: 5 * time.Second, Queues: func() []string { return []string{"q"} },
		Log: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if edit != nil {
		edit(&p)
	}
	return New(p)
}

func (e *env) serverNow(t *testing.T) time.Time {
	t.Helper()
	now, err := e.rdb.Time(context.Background()).Result()
	require.NoError(t, err)
	return now
}

// pastDeadline waits until the server's clock is past node's published deadline.
func (e *env) pastDeadline(t *testing.T, node string) {
	t.Helper()
	d, err := e.rdb.ZScore(context.Background(), e.keys.HeartbeatDeadlines(), node).Result()
	require.NoError(t, err)
	testutil.WaitFor(t, "the server's clock past "+node+"'s deadline", func() bool {
		return float64(e.serverNow(t).UnixMicro())/1e6 > d
	})
}

// exqNode writes a node of another runtime that publishes no window, whose last beat is age
// old on the server's clock.
func (e *env) exqNode(t *testing.T, node string, age time.Duration) {
	t.Helper()
	at := e.serverNow(t).Add(-age)
	require.NoError(t, e.rdb.ZAdd(context.Background(), e.keys.Heartbeats(), redis.Z{Score: float64(at.UnixMicro()) / 1e6, Member: node}).Err())
}

// inFlight puts jobs in node's backup list of q, as its fetches would.
func (e *env) inFlight(t *testing.T, node, q string, jobs ...string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.rdb.SAdd(ctx, e.keys.Queues(), q).Err())
	for _, j := range jobs {
		require.NoError(t, e.rdb.RPush(ctx, e.keys.Backup(node, q), j).Err())
	}
}

func (e *env) list(t *testing.T, key string) []string {
	t.Helper()
	l, err := e.rdb.LRange(context.Background(), key, 0, -1).Result()
	require.NoError(t, err)
	return l
}

func (e *env) beating(t *testing.T, node string) bool {
	t.Helper()
	err := e.rdb.ZScore(context.Background(), e.keys.Heartbeats(), node).Err()
	if err == redis.Nil {
		return false
	}
	require.NoError(t, err)
	return true
}

// rescues records what Parts.Rescued reports.
type rescues struct {
	mu  sync.Mutex
	got []string
}

func (r *rescues) add(queue, from string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%s from %s: %d", queue, from, n))
}

func (r *rescues) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// A check rescues exactly the nodes that are dead by the server's clock (an exq node past its
// published deadline, a node of another runtime silent past ForeignHeartbeatWindow): their
// in-flight jobs go to the consumption end of their queue (right, where the next fetch takes
// from), the node is forgotten, and Rescued hears of it. Live nodes and the checking node
// itself keep their jobs.
func TestRescueDeadTakesBackTheJobsOfDeadNodesOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		node    func(t *testing.T, e *env) string // writes the other node, returns its id
		rescued bool
	}{
		{"an exq node past its deadline", func(t *testing.T, e *env) string {
			require.NoError(t, e.heartbeat("other", func(p *Parts) { p.Interval, p.Missed = time.Millisecond, 0 }).Join(context.Background()))
			return "other"
		}, true},
		{"an exq node within its window", func(t *testing.T, e *env) string {
			require.NoError(t, e.heartbeat("other", nil).Join(context.Background()))
			return "other"
		}, false},
		{"an Exq node silent past the foreign window", func(t *testing.T, e *env) string {
			e.exqNode(t, "exq-elixir", time.Minute)
			return "exq-elixir"
		}, true},
		{"an Exq node within the foreign window", func(t *testing.T, e *env) string {
			e.exqNode(t, "exq-elixir", time.Second)
			return "exq-elixir"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			other := tc.node(t, e)
			e.inFlight(t, other, "q", "j1", "j2")
			require.NoError(t, e.rdb.RPush(ctx, e.keys.Queue("q"), "waiting").Err())
			if tc.rescued && e.rdb.ZScore(ctx, e.keys.HeartbeatDeadlines(), other).Err() == nil {
				e.pastDeadline(t, other)
			}
			var r rescues
			h := e.heartbeat("monitor", func(p *Parts) { p.Rescued = r.add })
			// Its own join comes after the other's deadline: the proof RescueDead needs.
			require.NoError(t, h.Join(ctx))
			require.NoError(t, h.RescueDead(ctx))

			if tc.rescued {
				assert.Empty(t, e.list(t, e.keys.Backup(other, "q")), "the dead node's backup list")
				assert.Equal(t, []string{"waiting", "j1", "j2"}, e.list(t, e.keys.Queue("q")), "rescued jobs go where the next fetch takes from")
				assert.False(t, e.beating(t, other), "the dead node is forgotten")
				assert.Equal(t, []string{"q from " + other + ": 2"}, r.list())
				assert.True(t, e.logs.Contains("rescued the in-flight jobs of a node that stopped beating"), e.logs.String())
			} else {
				assert.Equal(t, []string{"j1", "j2"}, e.list(t, e.keys.Backup(other, "q")), "a live node keeps its jobs")
				assert.Equal(t, []string{"waiting"}, e.list(t, e.keys.Queue("q")))
				assert.True(t, e.beating(t, other))
				assert.Empty(t, r.list())
			}
			assert.True(t, e.beating(t, "monitor"))
		})
	}
}

// The checking node never rescues itself, however late its own beat: here its entry says it
// went past its deadline ten seconds before its own call.
func TestRescueDeadNeverTakesTheCheckingNodesOwnJobs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.heartbeat("self", nil)
	require.NoError(t, h.Join(ctx))
	e.inFlight(t, "self", "q", "mine")
	past := e.serverNow(t).Add(-10 * time.Second)
	require.NoError(t, e.rdb.ZAdd(ctx, e.keys.Heartbeats(), redis.Z{Score: float64(past.Add(-time.Second).UnixMicro()) / 1e6, Member: "self"}).Err())
	require.NoError(t, e.rdb.ZAdd(ctx, e.keys.HeartbeatDeadlines(), redis.Z{Score: float64(past.UnixMicro()) / 1e6, Member: "self"}).Err())
	require.NoError(t, h.RescueDead(ctx))
	assert.Equal(t, []string{"mine"}, e.list(t, e.keys.Backup("self", "q")))
	assert.True(t, e.beating(t, "self"))
}

// A check rescues a node only once one of its own earlier calls ran after the node's deadline:
// the first check of a node that never called proves nothing, the next one does.
func TestRescueDeadWaitsForItsOwnCallToProveTheDeadline(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.exqNode(t, "exq-elixir", time.Minute)
	e.inFlight(t, "exq-elixir", "q", "j")
	h := e.heartbeat("monitor", nil)
	require.NoError(t, h.RescueDead(ctx))
	assert.Equal(t, []string{"j"}, e.list(t, e.keys.Backup("exq-elixir", "q")), "the first check of a node that never called")
	require.NoError(t, h.RescueDead(ctx))
	assert.Empty(t, e.list(t, e.keys.Backup("exq-elixir", "q")), "the second check")
	assert.Equal(t, []string{"j"}, e.list(t, e.keys.Queue("q")))
}

// A node buried while it could not beat learns it at its next beat: it drops the runs from
// before (Orphan), says so, and joins again as a new incarnation.
func TestABuriedNodeDropsItsRunsAndJoinsAgainAtItsNextBeat(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	orphaned := 0
	victim := e.heartbeat("victim", func(p *Parts) {
		p.Interval, p.Missed = time.Millisecond, 0
		p.Orphan = func() int { orphaned++; return 3 }
	})
	require.NoError(t, victim.Join(ctx))
	first := victim.Store.Epoch()
	require.NotEmpty(t, first)
	e.inFlight(t, "victim", "q", "j")
	e.pastDeadline(t, "victim")
	monitor := e.heartbeat("monitor", nil)
	require.NoError(t, monitor.Join(ctx))
	require.NoError(t, monitor.RescueDead(ctx))
	require.False(t, e.beating(t, "victim"), "buried")

	require.NoError(t, victim.beat(ctx))
	assert.Equal(t, 1, orphaned, "the runs from before are dropped once")
	assert.True(t, e.logs.Contains("this node was taken for dead"), e.logs.String())
	assert.True(t, e.beating(t, "victim"), "joined again")
	again := victim.Store.Epoch()
	assert.NotEqual(t, first, again, "a new incarnation")
	stored, err := e.rdb.HGet(ctx, e.keys.HeartbeatEpochs(), "victim").Result()
	require.NoError(t, err)
	assert.Equal(t, again, stored)

	require.NoError(t, victim.beat(ctx))
	assert.Equal(t, 1, orphaned, "a beat of the living incarnation drops nothing")
}

// Run beats, checks and sweeps on its own goroutines until its context ends: the node's score
// moves on, a dead node is rescued, and Run returns when cancelled.
func TestRunBeatsRescuesAndStopsWithItsContext(t *testing.T) {
	e := newEnv(t)
	// Beats every 20 ms, checks every 10 ms; a window of a second, so that a check held up on
	// a loaded machine is not taken for a stall of Redis (which gives every node a window more).
	h := e.heartbeat("n", func(p *Parts) { p.Interval, p.Missed = 20*time.Millisecond, 50 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, h.Join(ctx))
	joined, err := e.rdb.ZScore(ctx, e.keys.Heartbeats(), "n").Result()
	require.NoError(t, err)
	e.exqNode(t, "exq-elixir", time.Minute)
	e.inFlight(t, "exq-elixir", "q", "j")
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()

	testutil.WaitFor(t, "a beat after the join", func() bool {
		s, err := e.rdb.ZScore(ctx, e.keys.Heartbeats(), "n").Result()
		return err == nil && s > joined
	})
	testutil.WaitFor(t, "the dead node rescued", func() bool { return len(e.list(t, e.keys.Queue("q"))) == 1 })
	cancel()
	select {
	case <-done:
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("Run did not return after its context ended")
	}
}

// A failing call is logged once per spell, and its recovery once.
func TestRunLogsAFailingSpellOnceAndItsEnd(t *testing.T) {
	e := newEnv(t)
	proxy := testutil.NewProxy(t, e.rdb.Options().Addr)
	opts := *e.rdb.Options()
	opts.Addr = proxy.Addr()
	opts.MaxRetries = -1
	client := redis.NewClient(&opts)
	t.Cleanup(func() { _ = client.Close() })
	h := e.heartbeat("n", func(p *Parts) {
		p.Store = store.New(client, store.Config{Namespace: e.ns, Node: "n"})
		p.Interval, p.Timeout = 10*time.Millisecond, 200*time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, h.Join(ctx))
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	defer func() { cancel(); <-done }()

	proxy.Down()
	testutil.WaitFor(t, "the failure logged", func() bool { return e.logs.Contains("heartbeat: beat failed; will retry") })
	proxy.Up()
	testutil.WaitFor(t, "the recovery logged", func() bool { return e.logs.Contains("heartbeat: beat works again") })
	cancel()
	<-done
	assert.Equal(t, 1, strings.Count(e.logs.String(), "heartbeat: beat failed"), e.logs.String())
}

// A sweep forgets the incarnation and backup-queue set of nodes in no heartbeat whose backup
// lists are empty, keeps (and reports once) those of a node whose lists hold jobs, and leaves
// beating nodes and the sweeping node itself alone.
func TestSweepGoneForgetsOnlyTheRecordsOfGoneNodesWithoutJobs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		node      string
		beating   bool
		jobs      bool
		forgotten bool
		log       string
	}{
		{"a gone node with empty backup lists", "gone", false, false, true, "forgot the incarnation and backup-queue set"},
		{"a gone node with jobs left", "gone", false, true, false, "left jobs in its backup lists"},
		{"a beating node", "alive", true, false, false, ""},
		{"the sweeping node itself, buried", "self", false, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			require.NoError(t, e.rdb.HSet(ctx, e.keys.HeartbeatEpochs(), tc.node, "epoch-1").Err())
			require.NoError(t, e.rdb.SAdd(ctx, e.keys.BackupQueues(tc.node), "q").Err())
			if tc.beating {
				e.exqNode(t, tc.node, 0)
			}
			if tc.jobs {
				e.inFlight(t, tc.node, "q", "j")
			}
			h := e.heartbeat("self", nil)
			require.NoError(t, h.SweepGone(ctx))
			require.NoError(t, h.SweepGone(ctx)) // a second sweep: nothing new to report

			kept := e.rdb.HExists(ctx, e.keys.HeartbeatEpochs(), tc.node).Val()
			set := e.rdb.Exists(ctx, e.keys.BackupQueues(tc.node)).Val() == 1
			assert.Equal(t, !tc.forgotten, kept, "incarnation kept")
			assert.Equal(t, !tc.forgotten, set, "backup-queue set kept")
			if tc.jobs {
				assert.Equal(t, []string{"j"}, e.list(t, e.keys.Backup(tc.node, "q")))
			}
			if tc.log != "" {
				assert.Equal(t, 1, strings.Count(e.logs.String(), tc.log), e.logs.String())
			} else {
				assert.NotContains(t, e.logs.String(), "level=WARN")
				assert.NotContains(t, e.logs.String(), "forgot")
			}
		})
	}
}

// fakeClock is a local clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Current says a node is alive for 95 % of its window after the latest beat that found
// it so was sent, by the local clock: a node paused past that cannot tell, and waits for its
// next beat's verdict, which wakes it whether it is alive or was buried (its runs orphaned
// first).
func TestCurrentHoldsForMostOfAWindowAfterABeatAndThenWaitsForTheNextVerdict(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	orphaned := 0
	var h *Heartbeat
	h = e.heartbeat("n", func(p *Parts) {
		p.Clock = clock.Now
		p.Orphan = func() int {
			orphaned++
			ok, _ := h.Current()
			assert.False(t, ok, "the runs are orphaned before any waiting run is woken")
			return 1
		}
	})
	window := h.window()
	ok, next := h.Current()
	assert.False(t, ok, "before the node joined")
	require.NoError(t, h.Join(ctx))
	assert.True(t, isClosed(next), "joining wakes the runs waiting")
	for _, tc := range []struct {
		after time.Duration
		alive bool
	}{
		{0, true},
		{window / 2, true},
		{window*19/20 - time.Nanosecond, true},
		{window * 19 / 20, false},
		{2 * window, false},
	} {
		at := clock.Now()
		clock.Add(tc.after)
		ok, next := h.Current()
		assert.Equal(t, tc.alive, ok, "%s after the beat was sent", tc.after)
		assert.Equal(t, tc.alive, next == nil, "a channel to wait on only when it cannot tell")
		clock.mu.Lock()
		clock.now = at
		clock.mu.Unlock()
	}

	// Paused past its window: it cannot tell until its next beat says it is alive.
	clock.Add(window)
	ok, next = h.Current()
	require.False(t, ok)
	assert.False(t, isClosed(next), "no verdict yet")
	require.NoError(t, h.beat(ctx))
	assert.True(t, isClosed(next), "the beat's verdict wakes the waiting runs")
	ok, _ = h.Current()
	assert.True(t, ok, "alive")

	// Paused past its window and buried meanwhile: the beat orphans the runs, then wakes them.
	clock.Add(window)
	_, next = h.Current()
	require.NoError(t, e.rdb.ZRem(ctx, e.keys.Heartbeats(), "n").Err())
	require.NoError(t, h.beat(ctx))
	assert.Equal(t, 1, orphaned)
	assert.True(t, isClosed(next), "woken after the runs were orphaned")
	ok, _ = h.Current()
	assert.True(t, ok, "the new incarnation is alive")
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
