package store

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Per-method tests of a job's way through a node: fetch, ack, retry, dead, hand-back, put
// back, recovery, the scheduler's moves, and the heartbeat side (beat, stale, rescue, bury).

// pushed fills queue q with jobs named by jids, the first the oldest (it is taken first).
func (v *env) pushed(q string, jids ...string) {
	v.t.Helper()
	for _, jid := range jids {
		require.NoError(v.t, v.rdb.LPush(ctx(v.t), v.p("queue:"+q), job(q, jid)).Err())
	}
}

func TestFetchWritesTheBackupListAndTheSetOfBackupQueues(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	v.pushed("q", "a", "b")
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 5}, {Queue: "none", N: 1}, {Queue: "zero", N: 0}}, time.Minute, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{job("q", "a"), job("q", "b")}, res.Jobs[0], "fewer than asked: all there is")
	assert.Empty(t, res.Jobs[1])
	assert.Empty(t, res.Jobs[2])
	assert.Equal(t, map[string]string{"queue:backup::n1::q": "list", "backup_queues:n1": "set"}, v.layout(),
		"the queue list went with its last job; only a queue that gave jobs is recorded")
	assert.Equal(t, []string{"q"}, v.members(v.p("backup_queues:n1")))
	assert.Equal(t, "", res.Epoch, "a node without heartbeats checks no incarnation")
}

func TestFetchReportsStraysInTheBackupList(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), job("q", "lost")).Err())
	v.pushed("q", "a")
	reqs := []FetchReq{{Queue: "q", N: 1, Held: 0}}
	res, err := jq.Fetch(ctx(t), reqs, time.Minute, 0)
	require.NoError(t, err)
	assert.Equal(t, []int{1}, res.BackupLen)
	assert.True(t, res.Strays(reqs), "an entry this node does not hold")
	assert.False(t, res.Strays([]FetchReq{{Queue: "q", N: 1, Held: 1}}))
}

func TestFetchFromAKeyOfAnotherTypeFails(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	v.garbage(v.p("queue:backup::n1::q"))
	v.pushed("q", "a")
	_, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 1}}, time.Minute, 0)
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Len(t, v.list(v.p("queue:q")), 1, "the job stays in its queue")
}

func TestFetchAsAnIncarnationThatWasBuriedTakesNothing(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	_, err := jq.Join(ctx(t), time.Minute, nil, "e1")
	require.NoError(t, err)
	v.pushed("q", "a")
	for _, tc := range []struct {
		name, epoch string
		buried      bool
	}{
		{"the current incarnation", "e1", false},
		{"an older one", "e0", true},
	} {
		jq.SetEpoch(tc.epoch)
		assert.Equal(t, tc.epoch, jq.Epoch())
		res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 0}}, time.Minute, 0)
		if tc.buried {
			assert.ErrorIs(t, err, ErrBuried, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.epoch, res.Epoch, tc.name)
	}
	assert.Len(t, v.list(v.p("queue:q")), 1)
}

func TestAckKeepsALockAnotherJobHoldsAndSkipsABuriedRun(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	_, err := jq.Join(ctx(t), time.Minute, nil, "e1")
	require.NoError(t, err)
	raw := job("q", "j1")
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), raw, raw).Err())
	require.NoError(t, v.rdb.Set(ctx(t), v.p("unique:tok"), "other", 0).Err())

	require.NoError(t, jq.Ack(ctx(t), "q", raw, "tok", "j1", "e0"), "a run of a buried incarnation")
	assert.Len(t, v.list(v.p("queue:backup::n1::q")), 2, "removes nothing")
	require.NoError(t, jq.Ack(ctx(t), "q", raw, "", "", "e0"))
	assert.Len(t, v.list(v.p("queue:backup::n1::q")), 2, "nor without a token")

	require.NoError(t, jq.Ack(ctx(t), "q", raw, "tok", "j1", "e1"))
	assert.Len(t, v.list(v.p("queue:backup::n1::q")), 1)
	assert.Equal(t, "other", v.rdb.Get(ctx(t), v.p("unique:tok")).Val(), "the lock of another job stays")
}

func TestAckManyRemovesJobsAndLeasesAcrossQueues(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::a"), job("a", "1"), job("a", "2")).Err())
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::b"), job("b", "3")).Err())
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("leases:a"), redis.Z{Score: 1e10, Member: "n1:1"}, redis.Z{Score: 1e10, Member: "n1:2"}).Err())
	failed, err := jq.AckMany(ctx(t), []AckReq{
		{Queue: "a", Raw: job("a", "1")},
		{Queue: "a", Lease: "n1:1"},
		{Queue: "b", Raw: job("b", "3")},
		{Queue: "a", Raw: job("a", "2")},
		{Queue: "a", Raw: job("a", "gone")},
	})
	require.NoError(t, err)
	assert.Nil(t, failed)
	assert.Equal(t, map[string]string{"leases:a": "zset"}, v.layout())
	assert.Equal(t, []redis.Z{{Score: 1e10, Member: "n1:2"}}, v.zset(v.p("leases:a")))

	v.garbage(v.p("queue:backup::n1::c"))
	failed, err = jq.AckMany(ctx(t), []AckReq{{Queue: "c", Raw: "x"}, {Queue: "a", Lease: "n1:2"}})
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, []bool{true, true}, failed, "the batch is one call: all of it failed")
}

// A batch mixes runs of the node's current incarnation, of a buried one and without a token,
// in any order: the script gets them as groups and takes off exactly the current and the
// unchecked ones.
func TestAckManyTakesOffOnlyTheRunsOfTheCurrentIncarnationWhateverTheirOrder(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"), redis.Z{Score: 1, Member: "n1"}).Err())
	require.NoError(t, v.rdb.HSet(ctx(t), v.p("heartbeat_epochs"), "n1", "e2").Err())
	for i := 1; i <= 6; i++ {
		require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::a"), job("a", strconv.Itoa(i))).Err())
	}
	failed, err := jq.AckMany(ctx(t), []AckReq{
		{Queue: "a", Raw: job("a", "1"), Epoch: "e1"},
		{Queue: "a", Raw: job("a", "2"), Epoch: "e2"},
		{Queue: "a", Raw: job("a", "3"), Epoch: "e2"},
		{Queue: "a", Raw: job("a", "4"), Epoch: "e1"},
		{Queue: "a", Raw: job("a", "5")},
		{Queue: "a", Raw: job("a", "6"), Epoch: "e2"},
	})
	require.NoError(t, err)
	assert.Nil(t, failed)
	assert.Equal(t, []string{job("a", "4"), job("a", "1")}, v.list(v.p("queue:backup::n1::a")),
		"the runs of the buried incarnation e1 stay; e2's and the unchecked one are gone")
}

func TestRetryAnnouncesAJobDueBeforeEveryOther(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	sub := v.rdb.Subscribe(ctx(t), v.p("wake"))
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx(t))
	require.NoError(t, err)

	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("retry"), redis.Z{Score: 2000, Member: "later"}).Err())
	for _, jid := range []string{"early", "late"} {
		require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), job("q", jid)).Err())
	}
	ok, err := jq.Retry(ctx(t), "q", job("q", "late"), "late2", time.Unix(3000, 0), "")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = jq.Retry(ctx(t), "q", job("q", "early"), "early2", time.Unix(1000, 0), "")
	require.NoError(t, err)
	assert.True(t, ok)
	msg, err := sub.ReceiveMessage(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, ":due:1000.000000", msg.Payload, "only the job due before the set's head is announced")
	assert.Equal(t, []redis.Z{{Score: 1000, Member: "early2"}, {Score: 2000, Member: "later"}, {Score: 3000, Member: "late2"}},
		v.zset(v.p("retry")))
}

func TestRetryAndDeadOfABuriedRunWriteNothing(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	_, err := jq.Join(ctx(t), time.Minute, nil, "e1")
	require.NoError(t, err)
	raw := job("q", "j1")
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), raw).Err())
	ok, err := jq.Retry(ctx(t), "q", raw, "rewritten", time.Unix(1000, 0), "e0")
	require.NoError(t, err)
	assert.False(t, ok)
	ok, err = jq.Dead(ctx(t), "q", raw, "rewritten", time.Unix(1000, 0), time.Hour, 10, "", "", "e0")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, []string{raw}, v.list(v.p("queue:backup::n1::q")))
	assert.Zero(t, v.rdb.Exists(ctx(t), v.p("retry"), v.p("dead")).Val())
}

func TestDeadTrimsTheSetByAgeAndCountAndReleasesTheLock(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	now := time.Unix(1_000_000, 0)
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("dead"),
		redis.Z{Score: float64(now.Unix() - 7200), Member: "too old"},
		redis.Z{Score: float64(now.Unix() - 60), Member: "d1"},
		redis.Z{Score: float64(now.Unix() - 30), Member: "d2"},
		redis.Z{Score: float64(now.Unix() - 10), Member: "d3"}).Err())
	require.NoError(t, v.rdb.Set(ctx(t), v.p("unique:tok"), "j1", 0).Err())
	raw := job("q", "j1")
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), raw).Err())

	ok, err := jq.Dead(ctx(t), "q", raw, "dead j1", now, time.Hour, 3, "tok", "j1", "")
	require.NoError(t, err)
	assert.True(t, ok)
	var members []string
	for _, z := range v.zset(v.p("dead")) {
		members = append(members, z.Member.(string))
	}
	assert.Equal(t, []string{"d2", "d3", "dead j1"}, members, "older than keepFor and beyond keepMax go, oldest first")
	assert.Zero(t, v.rdb.Exists(ctx(t), v.p("unique:tok")).Val())

	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), raw).Err())
	ok, err = jq.Dead(ctx(t), "q", raw, "dead again", now, time.Hour, 0, "", "", "")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, v.zset(v.p("dead")), "keepMax 0 keeps nothing")
}

func TestRequeueHandsJobsBackToTheConsumptionEnd(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	v.pushed("q", "waiting")
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), job("q", "old"), job("q", "new")).Err())
	n, err := jq.Requeue(ctx(t), "q", []string{job("q", "new"), job("q", "old"), job("q", "gone")})
	require.NoError(t, err)
	assert.Equal(t, 2, n, "a job no longer in the backup list is skipped")
	got, err := v.rdb.RPop(ctx(t), v.p("queue:q")).Result()
	require.NoError(t, err)
	assert.Equal(t, job("q", "old"), got, "the oldest in-flight job runs next")
	n, err = jq.Requeue(ctx(t), "q", nil)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestPutBackReturnsAJobToTheEnqueueEnd(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	v.pushed("q", "waiting")
	raw := job("q", "nowork")
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), raw).Err())
	ok, err := jq.PutBack(ctx(t), "q", raw)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []string{raw, job("q", "waiting")}, v.list(v.p("queue:q")), "behind the jobs that wait")
	ok, err = jq.PutBack(ctx(t), "q", raw)
	require.NoError(t, err)
	assert.False(t, ok, "no longer in the backup list")
	assert.Len(t, v.list(v.p("queue:q")), 2)
}

func TestRecoverBackupMovesMoreThanAPageOldestNext(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	const n = 2*pageSize + 7
	for i := range n {
		require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), job("q", strconv.Itoa(i))).Err())
	}
	moved, err := jq.RecoverBackup(ctx(t), "q")
	require.NoError(t, err)
	assert.Equal(t, n, moved)
	assert.Zero(t, v.rdb.Exists(ctx(t), v.p("queue:backup::n1::q")).Val())
	first, err := v.rdb.RPop(ctx(t), v.p("queue:q")).Result()
	require.NoError(t, err)
	assert.Equal(t, job("q", "0"), first, "the oldest fetched runs next")

	moved, err = jq.RecoverBackup(ctx(t), "empty")
	require.NoError(t, err)
	assert.Zero(t, moved)
	v.garbage(v.p("queue:backup::n1::bad"))
	_, err = jq.RecoverBackup(ctx(t), "bad")
	assert.ErrorContains(t, err, "WRONGTYPE")
}

func TestEarliestDueSkipsNeverDueMembers(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	at, err := jq.EarliestDue(ctx(t))
	require.NoError(t, err)
	assert.True(t, at.IsZero(), "both sets empty")

	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("schedule"), redis.Z{Score: math.Inf(1), Member: "never"}).Err())
	at, err = jq.EarliestDue(ctx(t))
	require.NoError(t, err)
	assert.True(t, at.IsZero(), "+inf is never due")

	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("retry"), redis.Z{Score: math.Inf(-1), Member: "long due"}).Err())
	at, err = jq.EarliestDue(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, time.Unix(0, 0), at, "-inf is long due")

	v.garbage(v.p("retry"))
	_, err = jq.EarliestDue(ctx(t))
	assert.ErrorContains(t, err, "WRONGTYPE")
}

func TestMoveDueBuriesMembersItCannotRouteAsPoison(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	for i, m := range []string{"not json", `{"class":"W","queue":""}`, `{"class":"W","queue":7}`, job("q", "ok")} {
		require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("schedule"), redis.Z{Score: float64(100 + i), Member: m}).Err())
	}
	n, err := jq.MoveDue(ctx(t), ScheduleSet, time.Unix(1000, 0), 2)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "a full page: there may be more")
	n, err = jq.MoveDue(ctx(t), ScheduleSet, time.Unix(1000, 0), 2)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = jq.MoveDue(ctx(t), ScheduleSet, time.Unix(1000, 0), 2)
	require.NoError(t, err)
	assert.Zero(t, n)

	assert.Equal(t, []string{job("q", "ok")}, v.list(v.p("queue:q")))
	assert.Equal(t, []string{"q"}, v.members(v.p("queues")))
	dead := v.zset(v.p("dead"))
	require.Len(t, dead, 3)
	for _, z := range dead {
		assert.Equal(t, 1000.0, z.Score)
		assert.Contains(t, z.Member, `"error_class":"exq.DecodeError"`)
		assert.Contains(t, z.Member, `"raw":`)
	}
	assert.Equal(t, map[string]string{"queues": "set", "queue:q": "list", "dead": "zset"}, v.layout())
}

func TestBeatRecordsTheNodeByTheServersClockAndRenewsItsLeases(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	before := v.serverNow()
	at, err := jq.Join(ctx(t), 30*time.Second, nil, "e1")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, at, before)
	assert.Equal(t, map[string]string{"heartbeats": "zset", "heartbeat_deadlines": "zset", "heartbeat_epochs": "hash"}, v.layout())
	assert.Equal(t, map[string]string{"n1": "e1"}, v.hash(v.p("heartbeat_epochs")))
	assert.Equal(t, at, v.rdb.ZScore(ctx(t), v.p("heartbeats"), "n1").Val())
	assert.InDelta(t, at+30, v.rdb.ZScore(ctx(t), v.p("heartbeat_deadlines"), "n1").Val(), 1e-3)

	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("leases:q"), redis.Z{Score: 1, Member: "n1:1"}).Err())
	alive, at2, err := jq.Beat(ctx(t), 30*time.Second, map[string][]string{"q": {"n1:1", "n1:released"}}, "e1", at)
	require.NoError(t, err)
	assert.True(t, alive)
	assert.GreaterOrEqual(t, at2, at)
	assert.Equal(t, []redis.Z{{Score: v.rdb.ZScore(ctx(t), v.p("heartbeat_deadlines"), "n1").Val(), Member: "n1:1"}},
		v.zset(v.p("leases:q")), "renewed to the deadline; a released lease is not brought back")
	assert.Zero(t, v.rdb.Exists(ctx(t), v.p("heartbeat_resumed")).Val(), "no stall")

	alive, _, err = jq.Beat(ctx(t), 30*time.Second, nil, "e1", at2-3600)
	require.NoError(t, err)
	assert.True(t, alive)
	assert.Equal(t, "string", v.layout()["heartbeat_resumed"], "a beat long after the previous call records a stall")

	alive, _, err = jq.Beat(ctx(t), 30*time.Second, nil, "e0", 0)
	require.NoError(t, err)
	assert.False(t, alive, "another incarnation's beat")
	assert.Equal(t, map[string]string{"n1": "e1"}, v.hash(v.p("heartbeat_epochs")), "writes nothing")
}

func TestForgetAndDropBackupQueuesRemoveOnlyThisNodesState(t *testing.T) {
	v := newEnv(t)
	n1, n2 := v.store("n1"), v.store("n2")
	for _, jq := range []*Store{n1, n2} {
		_, err := jq.Join(ctx(t), time.Minute, nil, "e")
		require.NoError(t, err)
		require.NoError(t, v.rdb.SAdd(ctx(t), v.p("backup_queues:"+jq.Node()), "q").Err())
	}
	require.NoError(t, n1.Forget(ctx(t)))
	assert.Equal(t, map[string]string{"heartbeats": "zset", "heartbeat_deadlines": "zset", "heartbeat_epochs": "hash",
		"backup_queues:n2": "set"}, v.layout())
	assert.Equal(t, map[string]string{"n2": "e"}, v.hash(v.p("heartbeat_epochs")))
	require.NoError(t, n2.DropBackupQueues(ctx(t)))
	assert.NotContains(t, v.layout(), "backup_queues:n2")
	assert.Equal(t, v.p("queue:backup::n2::q"), n2.BackupListName("q"))
}

func TestBackupQueuesOfFindsRecordedAndScannedListsOfThatNodeOnly(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	require.NoError(t, v.rdb.SAdd(ctx(t), v.p("backup_queues:n1"), "recorded").Err())
	for _, key := range []string{"queue:backup::n1::exq", "queue:backup::n1::x::y", "queue:backup::n10::other"} {
		require.NoError(t, v.rdb.LPush(ctx(t), v.p(key), "j").Err())
	}
	v.garbage(v.p("queue:backup::n1::notalist"))
	qs, err := jq.BackupQueuesOf(ctx(t), "n1")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"recorded", "exq"}, qs,
		"another node's, a name with '::' and a key that is no list are not n1's backup lists")
	qs, err = jq.BackupQueuesOf(ctx(t), "none")
	require.NoError(t, err)
	assert.Empty(t, qs)
}

func TestStaleNodesJudgesEachNodeByItsOwnWindowOrTheForeignOne(t *testing.T) {
	v := newEnv(t)
	jq := v.store("me")
	now := v.serverNow()
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"),
		redis.Z{Score: now - 100, Member: "exq-dead"},
		redis.Z{Score: now - 100, Member: "exq-alive"},
		redis.Z{Score: now - 100, Member: "foreign-old"},
		redis.Z{Score: now - 1, Member: "foreign-fresh"}).Err())
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeat_deadlines"),
		redis.Z{Score: now - 50, Member: "exq-dead"},
		redis.Z{Score: now + 3600, Member: "exq-alive"},
		redis.Z{Score: now - 50, Member: "stopped"}).Err())
	stale, at, err := jq.StaleNodes(ctx(t), 60*time.Second, time.Minute, 0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, at, now)
	byNode := map[string]StaleNode{}
	for _, s := range stale {
		byNode[s.Node] = s
	}
	require.Len(t, byNode, 2, "%v", stale)
	assert.InDelta(t, now-50, byNode["exq-dead"].Deadline, 1e-3, "its own deadline")
	assert.InDelta(t, now-100, byNode["exq-dead"].Beat, 1e-3)
	assert.InDelta(t, now-40, byNode["foreign-old"].Deadline, 1e-3, "its beat plus the foreign window")
	assert.NotContains(t, v.zset(v.p("heartbeat_deadlines")), redis.Z{Score: now - 50, Member: "stopped"},
		"a deadline without a heartbeat is dropped")
	assert.Len(t, v.zset(v.p("heartbeat_deadlines")), 2)

	// A stall (the caller's previous call long ago) gives every node a whole window again.
	stale, _, err = jq.StaleNodes(ctx(t), 60*time.Second, time.Minute, now-3600)
	require.NoError(t, err)
	assert.Empty(t, stale)
	assert.Equal(t, "string", v.layout()["heartbeat_resumed"])
}

func TestRescueAndBuryLeaveANodeThatBeatAgain(t *testing.T) {
	v := newEnv(t)
	jq := v.store("me")
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"), redis.Z{Score: 100, Member: "n1"}).Err())
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), job("q", "a")).Err())
	seen := StaleNode{Node: "n1", Score: "100", Beat: 100}
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"), redis.Z{Score: 200, Member: "n1"}).Err())

	left, moved, err := jq.RescuePage(ctx(t), seen, "q", 10)
	require.NoError(t, err)
	assert.Equal(t, [2]int{0, 0}, [2]int{left, moved})
	r, err := jq.Bury(ctx(t), seen, []string{"q"})
	require.NoError(t, err)
	assert.Equal(t, BuryBeatAgain, r)
	assert.Len(t, v.list(v.p("queue:backup::n1::q")), 1)
}

func TestBuryWaitsForEveryRecordedBackupQueueAndThenForgetsTheNodeEverywhere(t *testing.T) {
	v := newEnv(t)
	jq := v.store("me")
	c := ctx(t)
	require.NoError(t, v.rdb.ZAdd(c, v.p("heartbeats"), redis.Z{Score: 100, Member: "n1"}).Err())
	require.NoError(t, v.rdb.ZAdd(c, v.p("heartbeat_deadlines"), redis.Z{Score: 130, Member: "n1"}).Err())
	require.NoError(t, v.rdb.HSet(c, v.p("heartbeat_epochs"), "n1", "e1").Err())
	require.NoError(t, v.rdb.SAdd(c, v.p("backup_queues:n1"), "q", "other").Err())
	require.NoError(t, v.rdb.SAdd(c, v.p("processes"), "n1").Err())
	for _, key := range []string{"n1", "n1:workers", "n1:work"} {
		require.NoError(t, v.rdb.HSet(c, v.p(key), "f", "v").Err())
	}
	seen := StaleNode{Node: "n1", Score: "100"}

	r, err := jq.Bury(c, seen, []string{"q"})
	require.NoError(t, err)
	assert.Equal(t, BuryJobsLeft, r, "the set names a queue the rescue did not cover")
	r, err = jq.Bury(c, seen, []string{"q", "other"})
	require.NoError(t, err)
	assert.Equal(t, BuryDone, r)
	assert.Equal(t, map[string]string{}, v.layout(), "heartbeat, deadline, incarnation, busy lists, hash and membership gone")
}

func TestRescueBackupMovesEveryPageWhileTheBeatIsStale(t *testing.T) {
	v := newEnv(t)
	jq := v.store("me")
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"), redis.Z{Score: 100.5, Member: "n1"}).Err())
	const n = pageSize + 3
	for i := range n {
		require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:backup::n1::q"), job("q", strconv.Itoa(i))).Err())
	}
	moved, err := jq.RescueBackup(ctx(t), StaleNode{Node: "n1", Score: "100.5"}, "q", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, n, moved)
	first, err := v.rdb.RPop(ctx(t), v.p("queue:q")).Result()
	require.NoError(t, err)
	assert.Equal(t, job("q", "0"), first)
}

func TestUndeclaredBeatsListsOtherNodesWithoutADeadline(t *testing.T) {
	v := newEnv(t)
	jq := v.store("me")
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"),
		redis.Z{Score: 1, Member: "me"}, redis.Z{Score: 2, Member: "exq"}, redis.Z{Score: 3, Member: "elixir"}).Err())
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeat_deadlines"), redis.Z{Score: 9, Member: "exq"}).Err())
	beats, err := jq.UndeclaredBeats(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"elixir": 3}, beats)
}

func TestStoreNamesItsNamespaceNodeAndChannel(t *testing.T) {
	for _, tc := range []struct{ ns, wake string }{{"exq", "exq:wake"}, {"", "wake"}} {
		jq := New(nil, Config{Namespace: tc.ns, Node: "n1"})
		assert.Equal(t, tc.ns, jq.Namespace())
		assert.Equal(t, "n1", jq.Node())
		assert.Equal(t, tc.wake, jq.WakeChannel())
		assert.Equal(t, "", jq.Epoch(), "before it joined")
		assert.Equal(t, "n1:7", jq.LeaseMember(7))
	}
	assert.True(t, strings.HasPrefix(ErrBuried.Error(), "exq: "))
}
