package exq

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// Nodes with different heartbeat windows share one namespace: each judges the others by the
// window they publish, never by its own.

func TestANodeThatBeatsSlowlyIsNotTakenForDeadByAFastOne(t *testing.T) {
	t.Parallel() // the slow node's window is 8 s: only a node starved that long would be taken for dead
	v := newEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	slowRuns := &recorder{fn: func(ctx context.Context, job *Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	slow := v.start(Options{HeartbeatInterval: 2 * time.Second, Queues: []Queue{{Name: "shared", Concurrency: 3}},
		Workers: map[string]Worker{"W": slowRuns}})
	en := v.enqueuer(time.Now)
	for i := 0; i < 3; i++ {
		_, err := en.enqueue(ctx, "shared", "W", []any{i}, nil)
		require.NoError(t, err)
	}
	testutil.WaitFor(t, "the slow node runs the jobs", func() bool { return slowRuns.count() == 3 })

	// A fast node (window 800 ms) works on the same queue and checks every 100 ms.
	fastRuns := &recorder{}
	v.start(Options{HeartbeatInterval: 200 * time.Millisecond, Queues: []Queue{{Name: "shared", Concurrency: 3}},
		Workers: map[string]Worker{"W": fastRuns}})

	// Wait for two more beats of the slow node: each gap between them is longer than the
	// fast node's window, so the fast node had every chance to take it for dead.
	first, err := v.rdb.ZScore(ctx, v.keys.Heartbeats(), slow.NodeID()).Result()
	require.NoError(t, err)
	beats := 0
	last := first
	testutil.WaitFor(t, "two more beats of the slow node", func() bool {
		s, err := v.rdb.ZScore(ctx, v.keys.Heartbeats(), slow.NodeID()).Result()
		if err == nil && s != last {
			beats++
			last = s
		}
		return beats >= 2
	})
	assert.Zero(t, fastRuns.count(), "no job of the live slow node ran again on the fast node")
	assert.Len(t, v.list(v.keys.Backup(slow.NodeID(), "shared")), 3, "the slow node keeps its jobs")
}

func testAKilledFastNodeIsRescuedWithinItsOwnWindowByASlowNode(t *testing.T) {
	// Timed (timed_test.go): asserts a rescue within a heartbeat window; child process.
	v := newEnv(t)
	const fast = 200 * time.Millisecond
	const jobs = 5
	en := v.enqueuer(time.Now)
	for i := 0; i < jobs; i++ {
		_, err := en.enqueue(context.Background(), "rescue", "Slow", []any{i}, nil)
		require.NoError(t, err)
	}
	child := v.startChildNode(fast, jobs)

	// The rescuer beats every 2 s (window 8 s) and checks every second.
	const slow = 2 * time.Second
	rec := &recorder{}
	v.start(Options{HeartbeatInterval: slow, Queues: []Queue{{Name: "rescue", Concurrency: 10}}, Workers: map[string]Worker{"Slow": rec}})

	child.kill()
	killedAt := time.Now()
	testutil.WaitFor(t, "the killed node's jobs ran on the slow node", func() bool { return rec.count() == jobs })
	took := time.Since(killedAt)
	// Judged by the rescuer's own window it would take up to 8 s after the last beat (7.995 s
	// after the kill before the nodes published their windows, just inside an 8 s bound); by
	// its own, 800 ms plus the rescuer's check period (1 s), plus a margin for a loaded machine.
	ownWindow := fast * (DefaultMissedHeartbeats + 1)
	assert.Less(t, took, ownWindow+slow/2+2*time.Second, "rescued by the dead node's window, not the rescuer's")
	t.Logf("a node beating every %s was rescued %s after SIGKILL by a node beating every %s (its window %s, the rescuer checks every %s)",
		fast, took.Round(time.Millisecond), slow, ownWindow, slow/2)
	// The rescuer forgets the node (its deadline too) only after moving every backup list, so
	// the rescued jobs may finish first.
	testutil.WaitFor(t, "the dead node's deadline is gone", func() bool {
		return v.rdb.ZScore(context.Background(), v.keys.HeartbeatDeadlines(), child.node).Err() == redis.Nil
	})
}

func TestExqNodesThatPublishNoWindowAreJudgedByExqsDefault(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jq := testStore(v.rdb, v.keys, "monitor")
	now, err := v.rdb.Time(ctx).Result()
	require.NoError(t, err)
	at := func(ago time.Duration) float64 { return float64(now.Add(-ago).UnixMicro()) / 1e6 }
	// An Exq node (beats every 60 s by default) that beat 2 minutes ago is alive; one that beat
	// 7 minutes ago is dead. An exq node publishes its own deadline.
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Heartbeats(),
		redis.Z{Score: at(2 * time.Minute), Member: "exq-elixir-live"},
		redis.Z{Score: at(7 * time.Minute), Member: "exq-elixir-dead"},
		redis.Z{Score: at(10 * time.Minute), Member: "go-slow-live"},
	).Err())
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.HeartbeatDeadlines(),
		redis.Z{Score: at(-time.Minute), Member: "go-slow-live"}, // deadline a minute from now
		redis.Z{Score: at(time.Second), Member: "go-stopped"},    // deadline passed, heartbeat gone
	).Err())
	stale, _, err := jq.StaleNodes(ctx, ForeignHeartbeatWindow, time.Minute, 0)
	require.NoError(t, err)
	var names []string
	for _, s := range stale {
		names = append(names, s.Node)
	}
	assert.Equal(t, []string{"exq-elixir-dead"}, names)
	assert.Equal(t, redis.Nil, v.rdb.ZScore(ctx, v.keys.HeartbeatDeadlines(), "go-stopped").Err(),
		"a deadline whose heartbeat is gone is dropped")
}
