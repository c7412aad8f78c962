package exq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// A killed node's jobs come back from every backup list it has, whether or not their queue is
// in the queues set: a queue removed (API.RemoveQueue, Sidekiq Web's Delete) while its jobs
// run, or filled by a producer that never SADDs the set (a plain LPUSH), is one the rescuer
// does not know by name.
func testFleetAKilledNodesJobsOfRemovedAndUnlistedQueuesAreRescued(t *testing.T) {
	// Timed (timed_test.go): child processes judged by heartbeat windows; a starved one is taken for dead.
	v := newEnv(t)
	ctx := context.Background()
	const interval = 200 * time.Millisecond
	fed := v.enqueueRuns("listed", 2, 0)
	fed = append(fed, v.enqueueRuns("removed", 2, 0)...)
	for i := 0; i < 2; i++ {
		jid := fmt.Sprintf("unlisted-%d", i)
		require.NoError(t, v.rdb.LPush(ctx, v.keys.Queue("unlisted"),
			fmt.Sprintf(`{"class":"Run","args":[0],"queue":"unlisted","jid":%q,"retry":true}`, jid)).Err())
		fed = append(fed, jid)
	}
	victim := v.startRunNode(runNodeConfig{Heartbeat: interval, Queues: []Queue{
		{Name: "listed", Concurrency: 2}, {Name: "removed", Concurrency: 2}, {Name: "unlisted", Concurrency: 2}}})
	testutil.WaitFor(t, "the node runs every job", func() bool { return len(v.runs().started) == len(fed) })
	api, err := NewAPI(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer api.Close()
	require.NoError(t, api.RemoveQueue(ctx, "removed"))
	require.False(t, v.rdb.SIsMember(ctx, v.keys.Queues(), "unlisted").Val(), "nobody listed the queue")

	// A live node working on another queue only buries the killed one.
	v.start(Options{HeartbeatInterval: interval, Queues: []Queue{{Name: "other", Concurrency: 1}},
		Workers: map[string]Worker{"Run": runJob(v.rdb, v.ns, "rescuer")}})
	victim.kill()
	testutil.WaitFor(t, "the killed node is buried", func() bool {
		return v.rdb.ZScore(ctx, v.keys.Heartbeats(), victim.id).Err() == redis.Nil
	})
	// A node that works on every queue runs what came back.
	v.start(Options{HeartbeatInterval: interval, Queues: []Queue{
		{Name: "listed", Concurrency: 5}, {Name: "removed", Concurrency: 5}, {Name: "unlisted", Concurrency: 5}},
		Workers: map[string]Worker{"Run": runJob(v.rdb, v.ns, "finisher")}})
	within := testutil.Within(func() bool { return len(v.runs().done) == 0 && v.runs().runsOn("finisher") == len(fed) })
	runs := v.runs()
	missing, stranded := 0, 0
	for _, q := range []string{"listed", "removed", "unlisted"} {
		stranded += len(v.list(v.keys.Backup(victim.id, q)))
	}
	for _, jid := range fed {
		if len(runs.started[jid]) < 2 {
			missing++
		}
		assert.LessOrEqual(t, len(runs.started[jid]), 2, "job %s: one run on the killed node, one after the rescue", jid)
	}
	t.Logf("fed %d in-flight jobs, killed their node: %d ran again after the rescue (explained by the kill), %d missing, %d left in a buried node's backup lists (settled: %v)",
		len(fed), runs.runsOn("finisher"), missing, stranded, within)
	assert.Zero(t, missing, "every job of the killed node runs again")
	assert.Zero(t, stranded, "no buried node keeps jobs in a backup list")
}

// An Exq node keeps no set of its backup queues: its lists are found by a SCAN of the
// namespace (on a Redis Cluster, on the master that holds the namespace's slot), and a list of
// another node whose identity merely starts with the dead one's is left alone.
func TestAnExqNodesBackupListOfAnUnlistedQueueIsFoundAndRescued(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now, err := v.rdb.Time(ctx).Result()
	require.NoError(t, err)
	dead, other := "exq-elixir", "exq-elixir::x" // no exq identity holds "::"; an Exq one might
	job := `{"class":"W","args":[],"queue":"unlisted","jid":"e1"}`
	require.NoError(t, v.rdb.LPush(ctx, v.keys.Backup(dead, "unlisted"), job).Err())
	require.NoError(t, v.rdb.LPush(ctx, v.keys.Backup(other, "q"), `{"class":"W","args":[],"queue":"q","jid":"o1"}`).Err())
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Heartbeats(), redis.Z{Score: float64(now.Add(-7 * time.Minute).Unix()), Member: dead}).Err())
	// A window of 1 s for Exq nodes, not the default 6 min: a gap of 200 ms between this node's
	// heartbeat calls (a loaded machine) counts as a stall, after which every node has a whole
	// window of its own again (scripts/stale.lua), and the Exq node would outlive the wait.
	v.start(Options{HeartbeatInterval: 100 * time.Millisecond, ForeignHeartbeatWindow: time.Second,
		Queues: []Queue{{Name: "elsewhere", Concurrency: 1}}})
	testutil.WaitFor(t, "the Exq node is buried", func() bool {
		return v.rdb.ZScore(ctx, v.keys.Heartbeats(), dead).Err() == redis.Nil
	})
	assert.Empty(t, v.list(v.keys.Backup(dead, "unlisted")), "the backup list was rescued")
	assert.Equal(t, []string{job}, v.list(v.keys.Queue("unlisted")), "its job is back in its queue")
	assert.Len(t, v.list(v.keys.Backup(other, "q")), 1, "another node's list stays")
}

// A node that stops cleanly leaves no set of backup queues behind, with heartbeats or without.
func TestACleanStopRemovesTheSetOfBackupQueues(t *testing.T) {
	t.Parallel()
	for _, noHeartbeat := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableHeartbeat=%v", noHeartbeat), func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			rec := &recorder{}
			e, err := start(ctx, Options{Redis: v.client, Namespace: v.ns, Logger: testLogger(), DisableHeartbeat: noHeartbeat,
				PollTimeout: 20 * time.Millisecond, Queues: []Queue{{Name: "q", Concurrency: 1}}, Workers: map[string]Worker{"W": rec}}, testHooks{})
			require.NoError(t, err)
			v.enqueueN("q", 1)
			testutil.WaitFor(t, "the job ran", func() bool { return rec.count() == 1 })
			assert.Equal(t, int64(1), v.rdb.Exists(ctx, v.keys.BackupQueues(e.NodeID())).Val(), "the fetch recorded its queue")
			require.NoError(t, e.Stop(ctx))
			assert.Zero(t, v.rdb.Exists(ctx, v.keys.BackupQueues(e.NodeID())).Val())
		})
	}
}
