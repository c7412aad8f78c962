package store

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Per-method tests of cluster-wide limits: the limited fetch (leases, waiters, rate), the
// published limits, and the reads and clean-ups around them.

func TestLimitedFetchTakesLeasesUpToTheGlobalLimitAndWaits(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	v.pushed("q", "a", "b", "c")
	lim := Limits{Global: 2}
	before := v.serverNow()
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 3, Limits: lim, First: 1}}, time.Minute, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{job("q", "a"), job("q", "b")}, res.Jobs[0])
	assert.Equal(t, time.Duration(0), res.HeldBack(0), "held back, for an unknown time")
	assert.True(t, res.LimitHeld())
	assert.Equal(t, 7*time.Second, res.NextPoll(7*time.Second), "no known wait: the idle poll")

	leases := v.zset(v.p("leases:q"))
	require.Len(t, leases, 2)
	assert.Equal(t, []any{"n1:1", "n1:2"}, []any{leases[0].Member, leases[1].Member}, "<node>:<n> from First")
	assert.InDelta(t, before+60, leases[0].Score, 5, "scored by when the lease lapses")
	waiters := v.zset(v.p("lease_waiters:q"))
	require.Len(t, waiters, 1, "held back while the queue has jobs: n1 waits for a slot")
	assert.Equal(t, "n1", waiters[0].Member)
	assert.InDelta(t, before+10, waiters[0].Score, 5)
	assert.Equal(t, map[string]string{"queue:q": "list", "queue:backup::n1::q": "list", "backup_queues:n1": "set",
		"leases:q": "zset", "lease_waiters:q": "zset"}, v.layout())

	// The job of lease 1 ended: the next fetch names it, and takes the slot.
	res, err = jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 3, Limits: lim, First: 3, Release: []string{"n1:1"}}}, time.Minute, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{job("q", "c")}, res.Jobs[0])
	leases = v.zset(v.p("leases:q"))
	assert.ElementsMatch(t, []any{"n1:2", "n1:3"}, []any{leases[0].Member, leases[1].Member})
	assert.Empty(t, v.zset(v.p("lease_waiters:q")), "no longer waiting")
}

func TestLimitedFetchAtItsLimitWithAnEmptyQueueHoldsNothingBack(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	lim := Limits{Global: 2}
	v.pushed("q", "a", "b")
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 3, Limits: lim, First: 1}}, time.Minute, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, res.Jobs[0], 2)
	assert.Negative(t, res.HeldBack(0), "the take emptied the queue: the limit held nothing back")

	// The limit is full and the queue empty: nothing is held back either, so the node may idle
	// (and block on the queue) instead of polling for a slot it has no job for.
	res, err = jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 3, Limits: lim, First: 3}}, time.Minute, 10*time.Second)
	require.NoError(t, err)
	assert.Empty(t, res.Jobs[0])
	assert.Equal(t, time.Duration(-1), res.HeldBack(0), "no job waits for a slot")

	v.pushed("q", "c")
	res, err = jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 3, Limits: lim, First: 3}}, time.Minute, 10*time.Second)
	require.NoError(t, err)
	assert.Empty(t, res.Jobs[0])
	assert.Equal(t, time.Duration(0), res.HeldBack(0), "a job waits for a slot: held back, for an unknown time")
}

func TestLimitedFetchLeavesAWaitingNodeItsShare(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	v.pushed("q", "a", "b", "c", "d")
	now := v.serverNow()
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("lease_waiters:q"), redis.Z{Score: now + 3600, Member: "n2"}).Err())
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("leases:q"), redis.Z{Score: now - 1, Member: "dead:1"}).Err())
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 4, Limits: Limits{Global: 4}, First: 1}}, time.Minute, time.Second)
	require.NoError(t, err)
	assert.Len(t, res.Jobs[0], 1, "n2 holds none: n1 takes one more than it, not the whole limit")
	assert.Equal(t, time.Duration(0), res.HeldBack(0))
	leases := v.zset(v.p("leases:q"))
	require.Len(t, leases, 1, "the lapsed lease was dropped")
	assert.Equal(t, "n1:1", leases[0].Member)
}

func TestLimitedFetchPacesARate(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	v.pushed("q", "a", "b", "c", "d", "e")
	lim := Limits{RateN: 2, RatePer: time.Hour}
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 5, Limits: lim, First: 1}}, time.Minute, time.Second)
	require.NoError(t, err)
	assert.Len(t, res.Jobs[0], 2, "two starts in the window")
	wait := res.HeldBack(0)
	assert.Greater(t, wait, 59*time.Minute, "the next start is due when the oldest leaves the window")
	assert.LessOrEqual(t, wait, lim.window()+time.Second)
	assert.Equal(t, time.Second, res.NextPoll(time.Second))
	assert.Equal(t, wait, res.NextPoll(2*time.Hour))
	starts := v.zset(v.p("starts:q"))
	require.Len(t, starts, 2)
	assert.Equal(t, []any{"n1:1", "n1:2"}, []any{starts[0].Member, starts[1].Member})
	assert.Equal(t, "string", v.layout()["rate_pace:q"])
	assert.NotContains(t, v.layout(), "leases:q", "no global limit: no leases")

	uses, err := jq.QueueUses(ctx(t), []string{"q", "free"}, map[string]LimitsRecord{"q": recordOf(lim)})
	require.NoError(t, err)
	assert.Equal(t, map[string]QueueUse{"q": {Size: 3, Started: 2}, "free": {}}, uses)
}

func TestLimitedFetchOfAPausedQueueTakesNothing(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	v.pushed("q", "a")
	require.NoError(t, jq.Pause(ctx(t), "q"))
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 1, Limits: Limits{Global: 5}, First: 1}, {Queue: "free", N: 1}}, time.Minute, time.Second)
	require.NoError(t, err)
	assert.Empty(t, res.Jobs[0])
	assert.Equal(t, time.Duration(0), res.HeldBack(0))
	assert.Negative(t, res.HeldBack(1), "a queue without limits in a limited fetch is never held back")
	assert.NotContains(t, v.layout(), "leases:q")
}

func TestLimitedFetchAsABuriedIncarnationFails(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	jq.SetEpoch("gone")
	v.pushed("q", "a")
	_, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 1, Limits: Limits{Global: 5}, First: 1}}, time.Minute, time.Second)
	assert.ErrorIs(t, err, ErrBuried)
	assert.Len(t, v.list(v.p("queue:q")), 1)
}

func TestDropOwnLeasesRemovesOnlyThisNodesNumberedLeases(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	n, err := jq.DropOwnLeases(ctx(t), "q")
	require.NoError(t, err)
	assert.Zero(t, n, "no leases")
	var zs []redis.Z
	for _, m := range []string{"n1:1", "n1:22", "n10:1", "n1:x", "n1:", "n2:1"} {
		zs = append(zs, redis.Z{Score: 1e10, Member: m})
	}
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("leases:q"), zs...).Err())
	n, err = jq.DropOwnLeases(ctx(t), "q")
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	var left []any
	for _, z := range v.zset(v.p("leases:q")) {
		left = append(left, z.Member)
	}
	assert.ElementsMatch(t, []any{"n10:1", "n1:x", "n1:", "n2:1"}, left)
	n, err = jq.DropOwnLeases(ctx(t), "q")
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, jq.ReleaseLease(ctx(t), "q", "n2:1"))
	assert.Len(t, v.zset(v.p("leases:q")), 3)
}

func TestStopWaitingRemovesTheNodeFromEveryQueuesWaiters(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	require.NoError(t, jq.StopWaiting(ctx(t), nil))
	for _, q := range []string{"a", "b"} {
		require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("lease_waiters:"+q), redis.Z{Score: 1e10, Member: "n1"}, redis.Z{Score: 1e10, Member: "n2"}).Err())
	}
	require.NoError(t, jq.StopWaiting(ctx(t), []string{"a", "b"}))
	for _, q := range []string{"a", "b"} {
		assert.Equal(t, []redis.Z{{Score: 1e10, Member: "n2"}}, v.zset(v.p("lease_waiters:"+q)))
	}
}

func TestPublishLimitsRemovesAQueueWithoutLimitsAndRewritesAnUnreadableRecord(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	differ, err := jq.PublishLimits(ctx(t), nil)
	require.NoError(t, err)
	assert.Nil(t, differ)

	require.NoError(t, v.rdb.HSet(ctx(t), v.p("limits"), "was", `{"global_limit":3}`, "bad", "not json", "free", "{}").Err())
	differ, err = jq.PublishLimits(ctx(t), []QueueLimits{{Name: "was"}, {Name: "bad", Limits: Limits{Global: 1}}, {Name: "free"}, {Name: "new"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]LimitsRecord{"was": {GlobalLimit: 3}, "bad": {}, "free": {}}, differ,
		"the records before, for those that change; an unreadable one, or an empty one, counts as different")
	assert.Equal(t, map[string]string{"bad": `{"global_limit":1}`}, v.hash(v.p("limits")))

	require.NoError(t, v.rdb.HSet(ctx(t), v.p("limits"), "junk", "[1,2]").Err())
	published, err := jq.PublishedLimits(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, map[string]LimitsRecord{"bad": {GlobalLimit: 1}, "junk": {}}, published, "an unreadable record reads as none")
	assert.Equal(t, Limits{}, published["junk"].Limits())
}

func TestQueueUsesCountsLiveLeasesOnly(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	now := v.serverNow()
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("leases:q"), redis.Z{Score: now + 3600, Member: "a:1"}, redis.Z{Score: now - 3600, Member: "a:2"}).Err())
	v.pushed("q", "x")
	uses, err := jq.QueueUses(ctx(t), []string{"q"}, map[string]LimitsRecord{"q": {GlobalLimit: 5}})
	require.NoError(t, err)
	assert.Equal(t, QueueUse{Size: 1, InUse: 1}, uses["q"])
	v.garbage(v.p("queue:bad"))
	uses, err = jq.QueueUses(ctx(t), []string{"bad", "q"}, map[string]LimitsRecord{"q": {GlobalLimit: 5}})
	require.NoError(t, err, "a queue key of another type spoils its own row")
	assert.Equal(t, QueueUse{}, uses["bad"])
	assert.Equal(t, QueueUse{Size: 1, InUse: 1}, uses["q"])
}

// A paused key of another type (written by someone else) pauses nothing: as an error in the
// fetch scripts it stopped every fetch of every node, silently.
func TestFetchTakesJobsWhenThePausedKeyHasAnotherType(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  []FetchReq
	}{
		{"one queue", []FetchReq{{Queue: "q", N: 1}}},
		{"two queues", []FetchReq{{Queue: "q", N: 1}, {Queue: "other", N: 1}}},
		{"with limits", []FetchReq{{Queue: "q", N: 1, Limits: Limits{Global: 5}, First: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			jq := v.store("n1")
			v.pushed("q", "a")
			require.NoError(t, v.rdb.Set(ctx(t), v.keys.Paused(), "x", 0).Err())
			res, err := jq.Fetch(ctx(t), tc.req, time.Minute, time.Second)
			require.NoError(t, err)
			assert.Len(t, res.Jobs[0], 1, "the job is taken")
		})
	}
}
