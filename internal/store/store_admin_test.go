package store

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Per-method tests of the admin API's part of the store: queue reads and removal, pause,
// set reads by kind, and the moves and removals of jobs (requeue, kill, remove).

func TestEverySetMethodRefusesAnUnknownSetKindAndWritesNothing(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	batch := []any{job("q", "a")}
	for _, tc := range []struct {
		name string
		call func(set string) error
	}{
		{"SetRange", func(s string) error { _, err := jq.SetRange(ctx(t), s, 0, -1, false); return err }},
		{"SetSize", func(s string) error { _, err := jq.SetSize(ctx(t), s); return err }},
		{"ClearSet", func(s string) error { return jq.ClearSet(ctx(t), s) }},
		{"MembersAt", func(s string) error { _, err := jq.MembersAt(ctx(t), s, []string{"1"}); return err }},
		{"RemoveFromSet", func(s string) error { _, err := jq.RemoveFromSet(ctx(t), s, true, batch); return err }},
		{"RequeueSet", func(s string) error { _, err := jq.RequeueSet(ctx(t), s, batch); return err }},
		{"KillSet", func(s string) error { _, err := jq.KillSet(ctx(t), s, time.Now(), time.Hour, 10, batch); return err }},
		{"ScanSet", func(s string) error { return jq.ScanSet(ctx(t), s, "+inf", func([]Member) error { return nil }) }},
		{"MoveDue", func(s string) error { _, err := jq.MoveDue(ctx(t), s, time.Now(), 10); return err }},
	} {
		for _, set := range []string{"", "queue", "exq:dead", "Dead"} {
			err := tc.call(set)
			assert.ErrorIs(t, err, ErrUnknownSet, "%s(%q)", tc.name, set)
			assert.ErrorContains(t, err, strconv.Quote(set), "%s names the kind", tc.name)
		}
	}
	assert.Empty(t, v.layout())
}

func TestQueueReadsAndRemoval(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, err := jq.Enqueue(ctx(t), "a", job("a", "1"), nil)
	require.NoError(t, err)
	_, err = jq.Enqueue(ctx(t), "a", job("a", "2"), nil)
	require.NoError(t, err)
	_, err = jq.Enqueue(ctx(t), "b", job("b", "3"), nil)
	require.NoError(t, err)

	n, err := jq.QueueSize(ctx(t), "a")
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	sizes, err := jq.QueueSizes(ctx(t), []string{"a", "b", "none"})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"a": 2, "b": 1, "none": 0}, sizes)
	page, err := jq.QueueRange(ctx(t), "a", 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{job("a", "2")}, page, "the newest first")
	oldest, err := jq.OldestJobs(ctx(t), []string{"a", "none", "b"})
	require.NoError(t, err)
	assert.Equal(t, []string{job("a", "1"), "", job("b", "3")}, oldest)

	require.NoError(t, jq.RemoveQueue(ctx(t), "a"))
	assert.Equal(t, map[string]string{"queues": "set", "queue:b": "list"}, v.layout())
	assert.Equal(t, []string{"b"}, v.members(v.p("queues")))

	v.garbage(v.p("queue:bad"))
	_, err = jq.QueueSize(ctx(t), "bad")
	assert.ErrorContains(t, err, "WRONGTYPE")
	// Reads of many queues read one of another type as empty: it spoils its own row.
	sizes, err = jq.QueueSizes(ctx(t), []string{"bad", "b"})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"bad": 0, "b": 1}, sizes)
	oldest, err = jq.OldestJobs(ctx(t), []string{"bad", "b"})
	require.NoError(t, err)
	assert.Equal(t, "", oldest[0])
	assert.NotEmpty(t, oldest[1])
}

func TestPauseAndResumeWriteThePausedSetAndResumeWakesTheNodes(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	sub := v.rdb.Subscribe(ctx(t), v.p("wake"))
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx(t))
	require.NoError(t, err)

	require.NoError(t, jq.Pause(ctx(t), "a"))
	require.NoError(t, jq.Pause(ctx(t), "a"), "pausing twice is harmless")
	require.NoError(t, jq.Pause(ctx(t), "b"))
	assert.Equal(t, map[string]string{"paused": "set"}, v.layout())
	paused, err := jq.Paused(ctx(t))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b"}, paused)

	wakeErr, err := jq.Resume(ctx(t), "a")
	require.NoError(t, err)
	require.NoError(t, wakeErr)
	msg, err := sub.ReceiveMessage(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, "a", msg.Payload)
	assert.Equal(t, []string{"b"}, v.members(v.p("paused")))
}

func TestSetReadsByKind(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	for kind, key := range map[string]string{RetrySet: "retry", ScheduleSet: "schedule", DeadSet: "dead"} {
		require.NoError(t, v.rdb.ZAdd(ctx(t), v.p(key), redis.Z{Score: 2, Member: kind + "2"}, redis.Z{Score: 1, Member: kind + "1"}).Err())
		page, err := jq.SetRange(ctx(t), kind, 0, -1, false)
		require.NoError(t, err, kind)
		assert.Equal(t, []Member{{Score: 1, Raw: kind + "1"}, {Score: 2, Raw: kind + "2"}}, page, kind)
		n, err := jq.SetSize(ctx(t), kind)
		require.NoError(t, err)
		assert.EqualValues(t, 2, n)
		require.NoError(t, jq.ClearSet(ctx(t), kind))
		assert.NotContains(t, v.layout(), key, kind)
	}
	page, err := jq.SetRange(ctx(t), DeadSet, 0, -1, true)
	require.NoError(t, err)
	assert.Empty(t, page, "an empty set")
	v.garbage(v.p("dead"))
	_, err = jq.SetRange(ctx(t), DeadSet, 0, -1, true)
	assert.ErrorContains(t, err, "WRONGTYPE")
	_, err = jq.MembersAt(ctx(t), DeadSet, []string{"1"})
	assert.ErrorContains(t, err, "WRONGTYPE")
}

func TestFormatScoreIsReadBackExactlyByRedis(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	scores := []float64{1796010415.667948, 0.1, -3, 1e21, math.Inf(1), math.Inf(-1)}
	var formatted []string
	for i, f := range scores {
		require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("retry"), redis.Z{Score: f, Member: strconv.Itoa(i)}).Err())
		formatted = append(formatted, FormatScore(f))
	}
	assert.Equal(t, []string{"1.796010415667948e+09", "0.1", "-3", "1e+21", "+inf", "-inf"}, formatted)
	at, err := jq.MembersAt(ctx(t), RetrySet, formatted)
	require.NoError(t, err)
	for i, s := range formatted {
		assert.Equal(t, []string{strconv.Itoa(i)}, at[s], "score %s", s)
	}
}

func TestScanSetVisitsEveryMemberOnceAcrossPagesWhileVisitRemovesThem(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	// More than two pages, with a run of equal scores across a page boundary.
	const n = 2*MoveBatch + 50
	zs := make([]redis.Z, n)
	for i := range n {
		score := float64(i)
		if i >= MoveBatch-10 && i < MoveBatch+10 {
			score = MoveBatch - 10
		}
		zs[i] = redis.Z{Score: score, Member: "m" + strconv.Itoa(i)}
	}
	zs = append(zs, redis.Z{Score: 1e12, Member: "beyond max"})
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("schedule"), zs...).Err())
	seen := map[string]int{}
	removeOdd := true
	require.NoError(t, jq.ScanSet(ctx(t), ScheduleSet, "1e11", func(page []Member) error {
		var gone []any
		for _, m := range page {
			seen[m.Raw]++
			if removeOdd && len(m.Raw)%2 == 1 {
				gone = append(gone, m.Raw)
			}
		}
		if len(gone) > 0 {
			return v.rdb.ZRem(ctx(t), v.p("schedule"), gone...).Err()
		}
		return nil
	}))
	assert.Len(t, seen, n, "every member up to max")
	for m, c := range seen {
		require.Equal(t, 1, c, "member %s visited once", m)
	}
	assert.NotContains(t, seen, "beyond max")

	stop := assert.AnError
	err := jq.ScanSet(ctx(t), ScheduleSet, "+inf", func([]Member) error { return stop })
	assert.ErrorIs(t, err, stop, "visit's error ends the scan")
}

func TestRemoveFromQueueAndSetReleaseTheLocksTheJobsHold(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	locked := `{"class":"W","queue":"q","jid":"j1","unique_token":"tok"}`
	stolen := `{"class":"W","queue":"q","jid":"j2","unique_token":"tok2"}`
	require.NoError(t, v.rdb.Set(ctx(t), v.p("unique:tok"), "j1", 0).Err())
	require.NoError(t, v.rdb.Set(ctx(t), v.p("unique:tok2"), "other", 0).Err())
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("queue:q"), locked, stolen, "plain", "plain").Err())

	n, err := jq.RemoveFromQueue(ctx(t), "q", true, []any{locked, stolen, "plain", "absent"})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, []string{"plain"}, v.list(v.p("queue:q")), "one copy per raw string given")
	assert.Zero(t, v.rdb.Exists(ctx(t), v.p("unique:tok")).Val(), "released")
	assert.Equal(t, "other", v.rdb.Get(ctx(t), v.p("unique:tok2")).Val(), "another job's lock stays")

	require.NoError(t, v.rdb.Set(ctx(t), v.p("unique:tok"), "j1", 0).Err())
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("dead"), redis.Z{Score: 1, Member: locked}).Err())
	n, err = jq.RemoveFromSet(ctx(t), DeadSet, false, []any{locked})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, "j1", v.rdb.Get(ctx(t), v.p("unique:tok")).Val(), "without clear, locks stay")
	assert.Empty(t, v.zset(v.p("dead")))
}

func TestJobLockReadsOnlyStringTokenAndJID(t *testing.T) {
	for _, tc := range []struct {
		raw        string
		token, jid string
		ok         bool
	}{
		{`{"jid":"j","unique_token":"t"}`, "t", "j", true},
		{`{"jid":"j"}`, "", "", false},
		{`{"jid":1,"unique_token":"t"}`, "", "", false},
		{`{"jid":"j","unique_token":null}`, "", "", false},
		{`not json`, "", "", false},
		{`[]`, "", "", false},
	} {
		token, jid, ok := jobLock(tc.raw)
		assert.Equal(t, tc.ok, ok, tc.raw)
		assert.Equal(t, tc.token, token, tc.raw)
		assert.Equal(t, tc.jid, jid, tc.raw)
	}
}

func TestRequeueSetMovesRoutableJobsToTheirQueuesOnce(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	a, b := job("a", "1"), job("b", "2")
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("dead"), redis.Z{Score: 1, Member: a}, redis.Z{Score: 2, Member: b},
		redis.Z{Score: 3, Member: "no queue"}).Err())
	n, err := jq.RequeueSet(ctx(t), DeadSet, []any{a, b, "no queue", job("c", "absent")})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{a}, v.list(v.p("queue:a")))
	assert.Equal(t, []string{b}, v.list(v.p("queue:b")))
	assert.ElementsMatch(t, []string{"a", "b"}, v.members(v.p("queues")))
	assert.Equal(t, []redis.Z{{Score: 3, Member: "no queue"}}, v.zset(v.p("dead")), "a job without a queue stays")

	n, err = jq.RequeueSet(ctx(t), DeadSet, []any{a, b})
	require.NoError(t, err)
	assert.Zero(t, n, "a repeat moves nothing twice")
	n, err = jq.RequeueSet(ctx(t), DeadSet, []any{"no queue"})
	require.NoError(t, err)
	assert.Zero(t, n, "nothing routable: no call")
}

func TestKillSetMovesJobsToDeadAndTrims(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	now := time.Unix(1_000_000, 0)
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("retry"), redis.Z{Score: 5, Member: "r1"}, redis.Z{Score: 6, Member: "r2"}).Err())
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("dead"), redis.Z{Score: float64(now.Unix() - 7200), Member: "old"},
		redis.Z{Score: float64(now.Unix() - 1), Member: "recent"}).Err())
	n, err := jq.KillSet(ctx(t), RetrySet, now, time.Hour, 2, []any{"r1", "r2", "absent"})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Empty(t, v.zset(v.p("retry")))
	assert.Equal(t, []redis.Z{{Score: float64(now.Unix()), Member: "r1"}, {Score: float64(now.Unix()), Member: "r2"}},
		v.zset(v.p("dead")), "scored now; the old one and the one beyond keepMax trimmed")

	n, err = jq.KillSet(ctx(t), ScheduleSet, now, time.Hour, 2, []any{"absent"})
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Len(t, v.zset(v.p("dead")), 2, "no move: no trim")
}

func TestStatsReadMissingCountersAsZero(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	c, err := jq.Stats(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, Counts{}, c)

	sec := time.Date(2026, 12, 1, 10, 11, 12, 0, time.UTC)
	require.NoError(t, v.rdb.Set(ctx(t), v.p("stat:processed_rt:2026-12-01 10:11:12Z"), "4", 0).Err())
	require.NoError(t, v.rdb.Set(ctx(t), v.p("stat:failed_rt:2026-12-01 10:11:13Z"), "1", 0).Err())
	require.NoError(t, v.rdb.Set(ctx(t), v.p("stat:failed"), "not a number", 0).Err())
	counts, present, err := jq.SecondStats(ctx(t), []time.Time{sec, sec.Add(time.Second), sec.Add(2 * time.Second)})
	require.NoError(t, err)
	assert.Equal(t, []Counts{{Processed: 4}, {Failed: 1}, {}}, counts)
	assert.Equal(t, []bool{true, true, false}, present)
	c, err = jq.Stats(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, Counts{}, c, "a counter that is not a number reads as 0")
}

func TestSendSignalPushesOntoTheNodesListWithATTL(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	require.NoError(t, jq.SendSignal(ctx(t), "n1", "TSTP"))
	require.NoError(t, jq.SendSignal(ctx(t), "n1", `CANCEL:{"jid":"j"}`))
	assert.Equal(t, map[string]string{"n1-signals": "list"}, v.layout())
	assert.Equal(t, []string{`CANCEL:{"jid":"j"}`, "TSTP"}, v.list(v.p("n1-signals")))
	ttl := v.rdb.TTL(ctx(t), v.p("n1-signals")).Val()
	assert.Greater(t, ttl, time.Duration(0))
	assert.LessOrEqual(t, ttl, NodeTTL)

	node := v.store("n1")
	sigs, err := node.Signals(ctx(t), 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"TSTP"}, sigs, "the oldest")
}

func TestServerInfoReadsINFO(t *testing.T) {
	v := newEnv(t)
	info, err := v.store("").ServerInfo(ctx(t))
	require.NoError(t, err)
	assert.Contains(t, info, "redis_version:")
}
