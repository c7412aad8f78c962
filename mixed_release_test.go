package exq

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// previousBury is bury.lua as the previous release has it (before the incarnation tokens and
// the sets of backup queues, commit ea8e84d): it forgets the heartbeat, the deadline and the
// busy list, and knows nothing of heartbeat_epochs or backup_queues:<node>.
const previousBury = `local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[2])
return 1`

// buryAsThePreviousRelease leaves what a node of the previous release leaves when it rescues
// and buries node, a crashed node of this release that had taken a job from queue q: the jobs of
// known queues moved back (its rescue covered only those), then its bury.
func buryAsThePreviousRelease(t *testing.T, v *env, node, q string, rescued bool) {
	t.Helper()
	ctx := context.Background()
	// What node wrote as it joined and fetched (beat.lua "join", fetch.lua).
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Heartbeats(), redis.Z{Score: 1000, Member: node}).Err())
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.HeartbeatDeadlines(), redis.Z{Score: 1010, Member: node}).Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.HeartbeatEpochs(), node, "token-of-"+node).Err())
	require.NoError(t, v.rdb.SAdd(ctx, v.keys.BackupQueues(node), q).Err())
	require.NoError(t, v.rdb.RPush(ctx, v.keys.Backup(node, q), `{"class":"W","args":[],"queue":"`+q+`","jid":"of-`+node+`"}`).Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Workers(node), "r1", "{}").Err())
	// The previous release's rescue and bury.
	if rescued {
		require.NoError(t, v.rdb.LMove(ctx, v.keys.Backup(node, q), v.keys.Queue(q), "LEFT", "RIGHT").Err())
	}
	n, err := v.rdb.Eval(ctx, previousBury, []string{v.keys.Heartbeats(), v.keys.Workers(node), v.keys.HeartbeatDeadlines()}, node, 1000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "buried")
}

// In a rolling upgrade, a node of the previous release buries a crashed node of this one and
// leaves its incarnation token and its set of backup queues for good. A node of this release
// sweeps them once the node's backup lists are empty; it keeps those of a gone node whose
// lists still hold a job, and never touches a live node's.
func TestANodeSweepsWhatABurialByThePreviousReleaseLeft(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	buryAsThePreviousRelease(t, v, "crashed-1", "q", true)
	buryAsThePreviousRelease(t, v, "crashed-2", "unlisted", false) // a job its rescue missed
	logs := &testutil.LogBuffer{}
	o := Options{HeartbeatInterval: 50 * time.Millisecond, Queues: []Queue{{Name: "other"}}}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	live := v.start(o)
	other := v.start(Options{HeartbeatInterval: 50 * time.Millisecond, Queues: []Queue{{Name: "other"}}})

	testutil.WaitFor(t, "the buried node's records are swept", func() bool {
		return !v.rdb.HExists(ctx, v.keys.HeartbeatEpochs(), "crashed-1").Val() &&
			v.rdb.Exists(ctx, v.keys.BackupQueues("crashed-1")).Val() == 0
	})
	testutil.WaitFor(t, "the records kept for the job left are reported", func() bool {
		return logs.Contains("left jobs in its backup lists") && logs.Contains("crashed-2")
	})
	assert.True(t, v.rdb.HExists(ctx, v.keys.HeartbeatEpochs(), "crashed-2").Val(), "its backup list holds a job")
	assert.EqualValues(t, 1, v.rdb.Exists(ctx, v.keys.BackupQueues("crashed-2")).Val())
	assert.EqualValues(t, 1, v.rdb.LLen(ctx, v.keys.Backup("crashed-2", "unlisted")).Val(), "the job is left where it is")
	for _, e := range []*Exq{live, other} {
		assert.True(t, v.rdb.HExists(ctx, v.keys.HeartbeatEpochs(), e.NodeID()).Val(), "a live node keeps its incarnation")
		assert.NotNil(t, v.rdb.ZScore(ctx, v.keys.Heartbeats(), e.NodeID()).Val())
	}
}
