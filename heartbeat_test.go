package exq

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// childNodeEnv makes the test binary run runChildNode instead of the tests.
const childNodeEnv = "EXQ_TEST_CHILD_NODE"

// runChildNode is a node in a process of its own, for tests that kill it with SIGKILL. It
// works on queue "rescue" with jobs that never end, and reports on stdout its node id and each
// job it started.
func runChildNode() {
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	interval, err := time.ParseDuration(os.Getenv("EXQ_CHILD_HEARTBEAT"))
	if err != nil {
		fail(err)
	}
	var out sync.Mutex
	say := func(a ...any) {
		out.Lock()
		fmt.Println(a...)
		out.Unlock()
	}
	block := WorkerFunc(func(ctx context.Context, job *Job) error {
		say("started", job.JID)
		<-ctx.Done()
		return ctx.Err()
	})
	e, err := Start(context.Background(), Options{
		RedisURL: os.Getenv(testutil.RedisURLEnv), Namespace: os.Getenv("EXQ_CHILD_NAMESPACE"),
		Queues: []Queue{{Name: "rescue", Concurrency: 50}}, Workers: map[string]Worker{"Slow": block},
		HeartbeatInterval: interval, Logger: testLogger(),
	})
	if err != nil {
		fail(err)
	}
	say("node", e.NodeID())
	select {} // until killed
}

// childNode is a node in a process of its own (runChildNode), to be killed with SIGKILL.
type childNode struct {
	cmd    *exec.Cmd
	node   string
	killed bool
}

// startChildNode starts a child node beating every heartbeat and waits until it has started
// jobs jobs of queue "rescue". It is killed when the test ends, if the test did not kill it.
func (v *env) startChildNode(heartbeat time.Duration, jobs int) *childNode {
	t := v.t
	t.Helper()
	cmd := testutil.ChildNode()
	cmd.Env = append(os.Environ(), childNodeEnv+"=1", "EXQ_CHILD_NAMESPACE="+v.ns, "EXQ_CHILD_HEARTBEAT="+heartbeat.String(),
		testutil.RedisURLEnv+"="+testutil.RedisURL(t))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &childNode{cmd: cmd}
	t.Cleanup(func() {
		if !c.killed {
			c.kill()
		}
	})
	started := 0
	lines := bufio.NewScanner(stdout)
	// The child says its node id once Start returns, and its workers may start every job
	// before that: read until both are known.
	for (started < jobs || c.node == "") && lines.Scan() {
		f := strings.Fields(lines.Text())
		switch {
		case len(f) == 2 && f[0] == "node":
			c.node = f[1]
		case len(f) == 2 && f[0] == "started":
			started++
		default:
			t.Fatalf("child node: %s", lines.Text())
		}
	}
	require.Equal(t, jobs, started, "the child started every job")
	require.Len(t, v.list(v.keys.Backup(c.node, "rescue")), jobs)
	return c
}

// kill sends SIGKILL and waits for the process to end.
func (c *childNode) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
	c.killed = true
}

func testKilledNodesJobsAreRescuedByAnotherNodeAndComplete(t *testing.T) {
	// Timed (timed_test.go): asserts a rescue within the heartbeat window + one interval; child process.
	v := newEnv(t)
	const jobs = 20
	const interval = 500 * time.Millisecond
	const missed = 3
	en := v.enqueuer(time.Now)
	want := map[string]bool{}
	for i := 0; i < jobs; i++ {
		jid, err := en.enqueue(context.Background(), "rescue", "Slow", []any{i}, nil)
		require.NoError(t, err)
		want[jid] = true
	}

	child := v.startChildNode(interval, jobs)
	require.Len(t, v.list(v.keys.Backup(child.node, "rescue")), jobs)

	// The rescuer runs the queue too, with a worker that completes.
	rec := &recorder{}
	logs := &logLines{}
	v.start(Options{HeartbeatInterval: interval, MissedHeartbeatsAllowed: missed,
		Queues: []Queue{{Name: "rescue", Concurrency: 50}}, Workers: map[string]Worker{"Slow": rec},
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})

	child.kill()
	killedAt := time.Now()

	testutil.WaitFor(t, "the dead node's backup list is empty", func() bool {
		return len(v.list(v.keys.Backup(child.node, "rescue"))) == 0
	})
	rescuedIn := time.Since(killedAt)
	bound := interval*(missed+1) + interval
	assert.LessOrEqual(t, rescuedIn, bound, "rescued within interval × (missed+1) + one interval")
	t.Logf("rescued %d jobs %s after SIGKILL (bound %s)", jobs, rescuedIn.Round(time.Millisecond), bound)

	testutil.WaitFor(t, "every rescued job completed", func() bool { return rec.count() == jobs })
	ran := map[string]int{}
	for _, jid := range rec.jids() {
		ran[jid]++
	}
	for jid := range want {
		assert.Equal(t, 1, ran[jid], "job %s ran exactly once", jid)
	}
	// The rescuer forgets the node after it has moved every backup list, so the rescued jobs
	// can finish before that step on a loaded machine.
	ctx := context.Background()
	testutil.WaitFor(t, "the dead node is forgotten and its busy list is gone", func() bool {
		return v.rdb.ZScore(ctx, v.keys.Heartbeats(), child.node).Err() == redis.Nil &&
			v.rdb.Exists(ctx, v.keys.Workers(child.node)).Val() == 0
	})
	// What operators see agrees at once, not when the process hash expires a minute after the
	// kill: no process, and none of its rescued jobs counted as busy (exq stats' BUSY).
	api, _ := v.api()
	testutil.WaitFor(t, "no job counts as busy (the rescuer's own row catches up within a second)", func() bool {
		o, err := api.Overview(ctx)
		return err == nil && o.Busy == 0
	})
	procs, err := api.Processes(ctx)
	require.NoError(t, err)
	for _, p := range procs {
		assert.NotEqual(t, child.node, p.Identity, "the buried node is not listed")
	}
	assert.False(t, v.rdb.SIsMember(ctx, v.keys.Processes(), child.node).Val(), "the buried node left the processes set")

	// The rescue's log line says what happened in words: the node, how many jobs, and whether
	// the node was forgotten; no field a reader has to guess at.
	var rescued []map[string]any
	for _, r := range logs.records(t) {
		if strings.HasPrefix(fmt.Sprint(r["msg"]), "exq: rescued") {
			rescued = append(rescued, r)
		}
	}
	require.NotEmpty(t, rescued, "the rescue is logged")
	last := rescued[len(rescued)-1]
	assert.Equal(t, "exq: rescued the in-flight jobs of a node that stopped beating, and forgot the node", last["msg"])
	assert.Equal(t, child.node, last["node"])
	for _, r := range rescued {
		for k := range r {
			assert.Contains(t, []string{"time", "level", "msg", "node", "jobs"}, k, "field %q of the rescue line", k)
		}
	}
}

// staleBackup prepares a dead node with n jobs in its backup list for queue q and returns
// the stale heartbeat entry a monitor would see.
func (v *env) staleBackup(node, q string, n int) store.StaleNode {
	v.t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		v.push(q, fmt.Sprintf(`{"class":"W","args":[%d],"queue":%q,"jid":"%s-%d"}`, i, q, node, i))
		v.take(q, node)
	}
	require.NoError(v.t, v.rdb.ZAdd(ctx, v.keys.Heartbeats(), redis.Z{Score: 1700000000.123456, Member: node}).Err())
	jq := testStore(v.rdb, v.keys, "monitor")
	stale, _, err := jq.StaleNodes(ctx, time.Minute, time.Minute, 0)
	require.NoError(v.t, err)
	for _, s := range stale {
		if s.Node == node {
			return s
		}
	}
	v.t.Fatalf("node %s is not stale", node)
	return store.StaleNode{}
}

func TestRescueLeavesANodeThatBeatAgainAlone(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	stale := v.staleBackup("sleepy", "default", 5)
	// The node beats again before the monitor acts.
	jq := testStore(v.rdb, v.keys, "sleepy")
	_, err := jq.Join(ctx, time.Minute, nil, "e1")
	require.NoError(t, err)
	moved, err := jq.RescueBackup(ctx, stale, "default", time.Second)
	require.NoError(t, err)
	assert.Zero(t, moved)
	buried, err := jq.Bury(ctx, stale, []string{"default"})
	require.NoError(t, err)
	assert.Equal(t, store.BuryBeatAgain, buried)
	assert.Len(t, v.list(v.keys.Backup("sleepy", "default")), 5)
	_, err = v.rdb.ZScore(ctx, v.keys.Heartbeats(), "sleepy").Result()
	assert.NoError(t, err, "its heartbeat entry stays")
}

func TestTwoMonitorsRacingMoveEachBackupEntryExactlyOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	const n = 200
	stale := v.staleBackup("dead", "default", n)
	require.Empty(t, v.list(v.keys.Queue("default")))
	var wg sync.WaitGroup
	moved := make([]int, 2)
	errs := make([]error, 2)
	for i := range moved {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// A page of one makes the two monitors interleave entry by entry.
			jq := testStore(v.rdb, v.keys, fmt.Sprintf("monitor-%d", i))
			for {
				_, m, err := jq.RescuePage(ctx, stale, "default", 1)
				if err != nil || m == 0 {
					errs[i] = err
					return
				}
				moved[i] += m
			}
		}(i)
	}
	wg.Wait()
	assert.NoError(t, errs[0], "monitor 0")
	assert.NoError(t, errs[1], "monitor 1")
	assert.Equal(t, n, moved[0]+moved[1])
	q := v.list(v.keys.Queue("default"))
	assert.Len(t, q, n)
	seen := map[string]bool{}
	for _, raw := range q {
		assert.False(t, seen[raw], "duplicate %s", raw)
		seen[raw] = true
	}
	assert.Empty(t, v.list(v.keys.Backup("dead", "default")))
}

func TestHeartbeatsUseTheRedisServerClock(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	// A node whose own clock is a year behind still beats "now".
	behind := func() time.Time { return time.Now().Add(-365 * 24 * time.Hour) }
	e := v.start(Options{}, testHooks{now: behind})
	score, err := v.rdb.ZScore(ctx, v.keys.Heartbeats(), e.NodeID()).Result()
	require.NoError(t, err)
	server, err := v.rdb.Time(ctx).Result()
	require.NoError(t, err)
	assert.InDelta(t, float64(server.UnixMicro())/1e6, score, 60)
}

func TestMonitorRescuesOnlyStaleNodesAndNeverItself(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	v.staleBackup("crashed", "default", 3)
	rec := &recorder{}
	// "crashed" publishes no window, as an Exq node: judged by ForeignHeartbeatWindow, 1 s here,
	// not 6 min, since a 200 ms gap in this node's calls (a loaded run) counts as a stall of
	// Redis, after which every node has a whole window again (scripts/stale.lua).
	e := v.start(Options{HeartbeatInterval: 100 * time.Millisecond, ForeignHeartbeatWindow: time.Second, Workers: map[string]Worker{"W": rec}})
	// A live node (beat just now) keeps its backup list.
	live := testStore(v.rdb, v.keys, "live")
	v.push("other", `{"class":"W","args":[],"queue":"other","jid":"live-1"}`)
	v.take("other", "live")
	_, err := live.Join(ctx, time.Minute, nil, "e1")
	require.NoError(t, err)
	testutil.WaitFor(t, "the crashed node's jobs ran", func() bool { return rec.count() == 3 })
	assert.ElementsMatch(t, []string{"crashed-0", "crashed-1", "crashed-2"}, rec.jids(), "each of the crashed node's jobs ran once")
	assert.Len(t, v.list(v.keys.Backup("live", "other")), 1)
	_, err = v.rdb.ZScore(ctx, v.keys.Heartbeats(), e.NodeID()).Result()
	assert.NoError(t, err)
}
