package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store/scripts"
)

// ttls is the TTL of every key of the env's namespace whose name starts with prefix, by name
// without the namespace.
func (v *env) ttls(prefix string) map[string]time.Duration {
	v.t.Helper()
	out := map[string]time.Duration{}
	iter := v.rdb.Scan(ctx(v.t), 0, v.p(prefix)+"*", 1000).Iterator()
	for iter.Next(ctx(v.t)) {
		ttl, err := v.rdb.PTTL(ctx(v.t), iter.Val()).Result()
		require.NoError(v.t, err)
		out[iter.Val()[len(v.ns)+1:]] = ttl
	}
	require.NoError(v.t, iter.Err())
	return out
}

// Every key of a batch expires with its hash, whatever its jobs' runs did to the batch: the
// dead set, which does not exist when the creation sets the TTLs, and the pending hash, which a
// failure of its only pending job empties (Redis deletes it) and writes again; at every level
// of a nested batch.
func TestEveryKeyOfABatchExpiresWithItWhateverItsJobsDo(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs []string
		runs [][2]string // jid, outcome
		want []string    // keys expected to exist
	}{
		{"a job dies", []string{"j1", "j2"}, [][2]string{{"j1", RunDied}},
			[]string{"batch:b", "batch:b:jobs", "batch:b:pending", "batch:b:dead"}},
		{"its only job fails", []string{"j1"}, [][2]string{{"j1", RunFailed}},
			[]string{"batch:b", "batch:b:jobs", "batch:b:pending"}},
		{"its only job fails, then dies", []string{"j1"}, [][2]string{{"j1", RunFailed}, {"j1", RunDied}},
			[]string{"batch:b", "batch:b:jobs", "batch:b:pending", "batch:b:dead"}},
		{"one job succeeds, the other dies", []string{"j1", "j2"}, [][2]string{{"j2", RunSucceeded}, {"j1", RunDied}},
			[]string{"batch:b", "batch:b:jobs", "batch:b:pending", "batch:b:dead"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			jq := v.store("")
			_, _, err := jq.BatchWrite(ctx(t), "b", "create", "t", "", "", flowNow, time.Hour, noCallbacks, flowJobs("q", tc.jobs...))
			require.NoError(t, err)
			for _, r := range tc.runs {
				_, _, err := jq.BatchSettle(ctx(t), "b", r[0], r[1], flowNow)
				require.NoError(t, err)
			}
			ttls := v.ttls("batch:")
			assert.ElementsMatch(t, tc.want, keysOf(ttls))
			for key, ttl := range ttls {
				assert.Greater(t, ttl, 59*time.Minute, "%s expires with its batch", key)
				assert.LessOrEqual(t, ttl, time.Hour, key)
			}
		})
	}
	t.Run("nested", func(t *testing.T) {
		v := newEnv(t)
		jq := v.store("")
		_, _, err := jq.BatchWrite(ctx(t), "p", "create", "t1", "", "", flowNow, 2*time.Hour, noCallbacks, flowJobs("q", "pj"))
		require.NoError(t, err)
		_, _, err = jq.BatchWrite(ctx(t), "c", "create", "t2", "p", "pj", flowNow, time.Hour, noCallbacks, flowJobs("q", "cj"))
		require.NoError(t, err)
		// The parent's own job succeeds (the child keeps it pending), the child's dies: the
		// death goes up as the child's member's, into the parent's dead set.
		_, _, err = jq.BatchSettle(ctx(t), "p", "pj", RunSucceeded, flowNow)
		require.NoError(t, err)
		_, _, err = jq.BatchSettle(ctx(t), "c", "cj", RunDied, flowNow)
		require.NoError(t, err)
		ttls := v.ttls("batch:")
		assert.Contains(t, ttls, "batch:p:dead")
		assert.Contains(t, ttls, "batch:c:dead")
		for key, ttl := range ttls {
			assert.Positive(t, ttl, "%s expires", key)
			if key[:len("batch:p")] == "batch:p" {
				assert.Greater(t, ttl, time.Hour+59*time.Minute, "%s expires with the parent", key)
			}
		}
	})
	// A parent whose hash is gone (it expired before its child's news) records nothing: its
	// pending hash, emptied, was written again with no TTL and stayed for good.
	t.Run("the parent expired first", func(t *testing.T) {
		v := newEnv(t)
		jq := v.store("")
		_, _, err := jq.BatchWrite(ctx(t), "p", "create", "t1", "", "", flowNow, 2*time.Hour, noCallbacks, flowJobs("q", "pj"))
		require.NoError(t, err)
		_, _, err = jq.BatchWrite(ctx(t), "c", "create", "t2", "p", "pj", flowNow, time.Hour, noCallbacks, flowJobs("q", "cj"))
		require.NoError(t, err)
		require.NoError(t, v.rdb.Del(ctx(t), v.p("batch:p"), v.p("batch:p:pending"), v.p("batch:p:jobs")).Err())
		_, _, err = jq.BatchSettle(ctx(t), "c", "cj", RunDied, flowNow)
		require.NoError(t, err)
		ttls := v.ttls("batch:")
		assert.NotContains(t, ttls, "batch:p:pending", "not written again")
		assert.NotContains(t, ttls, "batch:p:dead", "not created")
		for key, ttl := range ttls {
			assert.Positive(t, ttl, "%s expires", key)
		}
	})
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A node's trim of the listing indexes removes the ids whose data has expired, and only those,
// over a pass of bounded pages (ZSCAN) that sees every id; an id written again meanwhile stays.
func TestTrimIndexRemovesExpiredIDsInBoundedPages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		idx   FlowIndex
		index string
		hash  func(id string) string
	}{
		{"batches", BatchIndex, "batches", func(id string) string { return "batch:" + id }},
		{"workflows", WorkflowIndex, "workflows", func(id string) string { return "wf:" + id }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			jq := v.store("")
			// 600 ids, every third one's data still there.
			var members []redis.Z
			kept := map[string]bool{}
			for i := range 600 {
				id := fmt.Sprintf("id%03d", i)
				members = append(members, redis.Z{Score: float64(i), Member: id})
				if i%3 == 0 {
					kept[id] = true
					require.NoError(t, v.rdb.HSet(ctx(t), v.p(tc.hash(id)), "created_at", i).Err())
				}
			}
			require.NoError(t, v.rdb.ZAdd(ctx(t), v.p(tc.index), members...).Err())

			var cursor uint64
			pages, removed := 0, 0
			for {
				next, n, err := jq.TrimIndex(ctx(t), tc.idx, cursor, 100)
				require.NoError(t, err)
				removed += n
				pages++
				if cursor = next; cursor == 0 {
					break
				}
				require.Less(t, pages, 100, "the pass ends")
			}
			assert.Greater(t, pages, 1, "a large index takes several bounded steps")
			assert.Equal(t, 400, removed)
			left := v.rdb.ZRange(ctx(t), v.p(tc.index), 0, -1).Val()
			assert.Len(t, left, 200)
			for _, id := range left {
				assert.True(t, kept[id], id)
			}
		})
	}
}

// The script checks each id again as it removes it: one whose data was written again after the
// page was read stays.
func TestTrimIndexKeepsAnIDWrittenAgainAfterItsCheck(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("batches"), redis.Z{Score: 1, Member: "b1"}, redis.Z{Score: 2, Member: "b2"}).Err())
	// What TrimIndex sends after its EXISTS saw both gone, once b1 was written again.
	require.NoError(t, v.rdb.HSet(ctx(t), v.p("batch:b1"), "created_at", 3).Err())
	n, err := runTrim(ctx(t), jq, "b1", "b2")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"b1"}, v.rdb.ZRange(ctx(t), v.p("batches"), 0, -1).Val())
}

func runTrim(c context.Context, jq *Store, ids ...string) (int, error) {
	keys := []string{jq.keys.Batches()}
	args := make([]any, len(ids))
	for i, id := range ids {
		keys = append(keys, jq.keys.Batch(id))
		args[i] = id
	}
	return scripts.TrimIndex.Run(c, jq.rdb, keys, args...).Int()
}

// One node of a namespace claims a pass at a time, until the claim lapses.
func TestClaimIndexTrimGoesToOneNodeAtATime(t *testing.T) {
	v := newEnv(t)
	a, b := v.store("a"), v.store("b")
	ok, err := a.ClaimIndexTrim(ctx(t), time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = b.ClaimIndexTrim(ctx(t), time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "a holds the pass")
	ttl := v.rdb.PTTL(ctx(t), v.p("index_trim")).Val()
	assert.Greater(t, ttl, 59*time.Second, "the claim expires by itself")
	require.NoError(t, v.rdb.Del(ctx(t), v.p("index_trim")).Err()) // as it lapses
	ok, err = b.ClaimIndexTrim(ctx(t), time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
}

// GoneNodes lists the nodes of heartbeat_epochs in no heartbeat; SweepNode forgets such a
// node's token and set of backup queues only while it is in no heartbeat and its backup lists
// are empty, and touches nothing of any other node.
func TestSweepNodeForgetsOnlyAGoneNodeWithEmptyBackupLists(t *testing.T) {
	v := newEnv(t)
	jq := v.store("me")
	for _, n := range []string{"live", "gone", "gone-with-jobs"} {
		require.NoError(t, v.rdb.HSet(ctx(t), v.p("heartbeat_epochs"), n, "tok-"+n).Err())
		require.NoError(t, v.rdb.SAdd(ctx(t), v.p("backup_queues:"+n), "q").Err())
	}
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"), redis.Z{Score: 1, Member: "live"}).Err())
	require.NoError(t, v.rdb.RPush(ctx(t), v.p("queue:backup::gone-with-jobs::q"), job("q", "j1")).Err())

	gone, next, err := jq.GoneNodes(ctx(t), 0, 100)
	require.NoError(t, err)
	assert.Zero(t, next)
	assert.ElementsMatch(t, []string{"gone", "gone-with-jobs"}, gone)

	for _, tc := range []struct {
		node string
		want int
	}{{"live", SweepAlive}, {"gone-with-jobs", SweepJobsLeft}, {"gone", SweepDone}, {"gone", SweepDone}} {
		r, err := jq.SweepNode(ctx(t), tc.node)
		require.NoError(t, err)
		assert.Equal(t, tc.want, r, tc.node)
	}
	assert.Equal(t, map[string]string{"live": "tok-live", "gone-with-jobs": "tok-gone-with-jobs"}, v.hash(v.p("heartbeat_epochs")))
	assert.Equal(t, map[string]string{"backup_queues:live": "set", "backup_queues:gone-with-jobs": "set",
		"heartbeats": "zset", "heartbeat_epochs": "hash", "queue:backup::gone-with-jobs::q": "list"}, v.layout())

	// A queue added to the set after the caller read it: the script refuses, as bury.lua does.
	require.NoError(t, v.rdb.HSet(ctx(t), v.p("heartbeat_epochs"), "late", "tok").Err())
	require.NoError(t, v.rdb.SAdd(ctx(t), v.p("backup_queues:late"), "q2").Err())
	r, err := scripts.SweepNode.Run(ctx(t), v.rdb, []string{v.p("heartbeats"), v.p("heartbeat_epochs"), v.p("backup_queues:late")}, "late").Int()
	require.NoError(t, err)
	assert.Equal(t, SweepJobsLeft, r)
}
