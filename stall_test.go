package exq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// busyScript keeps Redis busy for ARGV[1] microseconds, as another client's long script does:
// no other command runs meanwhile (it stays under the busy-script threshold, so nobody gets
// BUSY errors either).
var busyScript = redis.NewScript(`
local t0 = redis.call('TIME')
repeat
  local t = redis.call('TIME')
until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) >= tonumber(ARGV[1])
return 1`)

// Redis stalled for longer than the nodes' heartbeat window is no reason to take a node for
// dead, whether their beats wait in the server meanwhile (a script under the busy threshold,
// DEBUG SLEEP) or are refused with BUSY (a script past it): no job in flight may be rescued,
// and none runs twice.
func TestFleetARedisStallLongerThanTheWindowKillsNoNode(t *testing.T) {
	t.Parallel()
	const interval = 500 * time.Millisecond
	// Windows of 1.5 s, so that a loaded machine's late beats alone take no node for dead.
	same := []nodeBeat{{interval, 2}, {interval, 2}}
	// One beats (and checks) five times as often as the other, so it looks again soon after
	// Redis is free, before the other's next beat.
	mixed := []nodeBeat{{interval, 2}, {interval / 5, 14}}
	busy := []string{"--busy-reply-threshold", "500"}
	debug := []string{"--enable-debug-command", "yes"}
	cases := []stallCase{
		{"calls wait for the script", nil, same, 3 * time.Second, false},
		{"calls wait for the script, nodes beating at different rates", nil, mixed, 3 * time.Second, false},
		{"calls get BUSY", busy, same, 3 * time.Second, false},
		{"calls get BUSY, nodes beating at different rates", busy, mixed, 3 * time.Second, false},
		{"DEBUG SLEEP", debug, same, 3 * time.Second, true},
	}
	if testutil.Long() {
		// Longer than the nodes' RedisTimeout (5 s): their calls time out, and are sent again.
		cases = append(cases, stallCase{"DEBUG SLEEP past the calls' timeout", debug, same, 8 * time.Second, true},
			stallCase{"calls get BUSY for 8 s", busy, same, 8 * time.Second, false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case on a redis-server of its own
			stallFleet(t, tc)
		})
	}
}

// stallCase is one way of stalling Redis under a fleet.
type stallCase struct {
	name       string
	args       []string   // the redis-server's
	nodes      []nodeBeat // one per node
	stall      time.Duration
	debugSleep bool // DEBUG SLEEP rather than a busy script
}

// nodeBeat is one node's heartbeat settings.
type nodeBeat struct {
	interval time.Duration
	missed   int
}

// stallFleet runs 24 jobs on nodes beating as tc says (each with a window of 1.5 s) against a
// redis-server of its own, stalls it while they run, and counts the runs.
func stallFleet(t *testing.T, tc stallCase) {
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: tc.args})
	opts, err := redis.ParseURL(srv.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	ns := testutil.Namespace(t)
	const interval = 500 * time.Millisecond
	stall := tc.stall
	const jobs = 24
	var mu sync.Mutex
	ran := map[string]int{}
	var started sync.WaitGroup
	started.Add(jobs)
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		mu.Lock()
		ran[job.JID]++
		first := ran[job.JID] == 1
		mu.Unlock()
		if first {
			started.Done()
		}
		time.Sleep(2*interval + stall + 3*time.Second) // well past the stall: a rescue would have time to act
		return nil
	})
	cl, err := NewClient(ctx, ClientOptions{Redis: rdb, Namespace: ns, Logger: testLogger()})
	require.NoError(t, err)
	defer cl.Close()
	var fed []string
	for i := 0; i < jobs; i++ {
		jid, err := cl.Enqueue(ctx, "q", "W", []any{i})
		require.NoError(t, err)
		fed = append(fed, jid)
	}
	var nodes []*Exq
	for _, beat := range tc.nodes {
		e, err := Start(ctx, Options{Redis: rdb, Namespace: ns, HeartbeatInterval: beat.interval, MissedHeartbeatsAllowed: beat.missed,
			PollTimeout: 20 * time.Millisecond, DisableScheduler: true, RedisTimeout: 5 * time.Second, Logger: testLogger(),
			Queues: []Queue{{Name: "q", Concurrency: jobs / 2}}, Workers: map[string]Worker{"W": w}})
		require.NoError(t, err)
		nodes = append(nodes, e)
		time.Sleep(interval / 3) // nodes out of step, as in a real fleet
	}
	defer func() {
		for _, e := range nodes {
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			assert.NoError(t, e.Stop(sctx))
			cancel()
		}
	}()
	started.Wait()
	// Let each node beat and check a few times, then stall the server.
	time.Sleep(2 * interval)
	// Another client, which waits for its own call as long as it takes.
	sopts := *opts
	sopts.ReadTimeout = stall + 5*time.Second
	staller := redis.NewClient(&sopts)
	defer staller.Close()
	if tc.debugSleep {
		require.NoError(t, staller.Do(ctx, "DEBUG", "SLEEP", stall.Seconds()).Err())
	} else {
		require.NoError(t, busyScript.Run(ctx, staller, nil, stall.Microseconds()).Err())
	}
	testutil.WaitFor(t, "every job ended", func() bool {
		n := 0
		for _, e := range nodes {
			n += e.mgr.inFlight()
		}
		return n == 0 && rdb.LLen(ctx, queueKey(ns, "q")).Val() == 0
	})
	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for _, jid := range fed {
		if ran[jid] > 1 {
			twice++
		}
		assert.Equal(t, 1, ran[jid], "job %s runs once", jid)
	}
	t.Logf("fed %d jobs, all in flight; Redis stalled %s with windows of %s: %d ran twice",
		jobs, stall, interval*3, twice)
}

// queueKey is the key of queue q in namespace ns.
func queueKey(ns, q string) string { return keysFor(ns).Queue(q) }

// A node's deadline that passes while another client holds Redis counts for nothing:
// whatever order the server runs the calls in once it is free, and even if the node's beat
// was not sent at all (its connections waiting, its call timed out), no check takes it for
// dead until a whole window of its own has passed since the stall ended. Once that window has
// passed without a beat, it is dead.
func TestAStallOfRedisGivesEveryNodeAWholeWindowFromItsEnd(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	opts, err := redis.ParseURL(srv.URL())
	require.NoError(t, err)
	opts.ReadTimeout = 10 * time.Second
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	keys := keysFor(testutil.Namespace(t))
	const window = time.Second
	victim := testStore(rdb, keys, "victim")
	checker := testStore(rdb, keys, "checker")
	joined, err := victim.Join(ctx, window, nil, "e1")
	require.NoError(t, err)
	// The checker passes the server's time of its previous call, as its heartbeat does.
	previous := 0.0
	check := func() []store.StaleNode {
		stale, now, err := checker.StaleNodes(ctx, time.Minute, window, previous)
		require.NoError(t, err)
		previous = now
		return stale
	}
	check()

	// Another client holds the server for twice the victim's window (CLIENT PAUSE: every call
	// sent meanwhile waits in the server, as behind a long script, and the pause has begun when
	// its reply comes back). The checker's next check is sent during it; the victim sends
	// nothing.
	pauser := redis.NewClient(opts)
	defer pauser.Close()
	require.NoError(t, pauser.Do(ctx, "CLIENT", "PAUSE", (2*window).Milliseconds(), "ALL").Err())
	stale := check()
	now := previous
	deadline := rdb.ZScore(ctx, keys.HeartbeatDeadlines(), "victim").Val()
	require.Greater(t, now, deadline, "the victim's deadline passed during the stall")
	assert.Empty(t, stale, "no node is dead at the first check after the stall")
	ended, err := rdb.Get(ctx, keys.HeartbeatResumed()).Float64()
	require.NoError(t, err, "the check recorded the stall's end")
	assert.InDelta(t, now, ended, 1e-6)
	// A node whose calls the stall did not hold (it had made none) judges by that record too.
	fresh := testStore(rdb, keys, "fresh")
	stale, _, err = fresh.StaleNodes(ctx, time.Minute, window, 0)
	require.NoError(t, err)
	assert.Empty(t, stale, "a node with no previous call, right after the stall")

	// Checks right after it, with no gap of their own, still find no node dead...
	// (A check sent more than half a window after the previous one, on a loaded run, is a
	// stall of its own: the whole window then runs from that one's end.)
	for {
		stale = check()
		now = previous
		if again, err := rdb.Get(ctx, keys.HeartbeatResumed()).Float64(); err == nil && again > ended {
			t.Logf("a check recorded a stall of its own, %.3f s after the previous end", again-ended)
			ended = again
		}
		if now >= ended+window.Seconds() {
			break
		}
		assert.Empty(t, stale, "a check %.3f s after the stall ended", now-ended)
		time.Sleep(window / 10)
	}
	// ...and a whole window after it, the victim, which never beat again, is.
	require.Len(t, stale, 1, "a whole window after the stall")
	assert.Equal(t, "victim", stale[0].Node)

	// A beat that runs more than half a window after its node's previous call records a stall
	// the same way.
	alive, at, err := victim.Beat(ctx, window, nil, "e1", joined)
	require.NoError(t, err)
	require.True(t, alive)
	ended, err = rdb.Get(ctx, keys.HeartbeatResumed()).Float64()
	require.NoError(t, err)
	assert.InDelta(t, at, ended, 1e-6, "the beat recorded the end of its node's gap")
}
