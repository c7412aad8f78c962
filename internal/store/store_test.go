package store

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// Per-method tests of the store against a real Redis: each call's effect on the keys, in the
// layout Sidekiq and Exq read (docs/wire.md).

func TestEnqueuePushesTheJobAndNamesTheQueue(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	holder, err := jq.Enqueue(ctx(t), "mail", job("mail", "j1"), nil)
	require.NoError(t, err)
	assert.Empty(t, holder)
	assert.Equal(t, []string{job("mail", "j1")}, v.list(v.keys.Queue("mail")))
	qs, err := jq.KnownQueues(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"mail"}, qs)
}

func TestEnqueueWithAHeldLockWritesNothingAndNamesTheHolder(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	for _, tc := range []struct {
		name, jid, wantHolder string
		wantLen               int
	}{
		{"the first takes the lock", "j1", "", 1},
		{"another job meets the holder", "j2", "j1", 1},
		{"the holder's own repeat writes nothing more", "j1", "", 1},
	} {
		holder, err := jq.Enqueue(ctx(t), "q", job("q", tc.jid), &Lock{Token: "tok", JID: tc.jid, TTL: time.Hour})
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.wantHolder, holder, tc.name)
		assert.Len(t, v.list(v.keys.Queue("q")), tc.wantLen, tc.name)
	}
	assert.Equal(t, "j1", v.rdb.Get(ctx(t), v.keys.Unique("tok")).Val())
	require.NoError(t, jq.Unlock(ctx(t), "tok", "j2"), "another jid's unlock leaves the lock")
	assert.Equal(t, "j1", v.rdb.Get(ctx(t), v.keys.Unique("tok")).Val())
	require.NoError(t, jq.Unlock(ctx(t), "tok", "j1"))
	assert.Zero(t, v.rdb.Exists(ctx(t), v.keys.Unique("tok")).Val())
}

func TestEnqueueAtSchedulesAndMoveDueMovesOnlyDueJobs(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	now := time.Unix(1796010415, 500000000)
	_, err := jq.EnqueueAt(ctx(t), now.Add(-time.Second), job("q", "due"), nil)
	require.NoError(t, err)
	_, err = jq.EnqueueAt(ctx(t), now.Add(time.Hour), job("q", "later"), nil)
	require.NoError(t, err)
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.keys.Retry(), redis.Z{Score: float64(now.Unix() - 5), Member: job("r", "retried")}).Err())

	earliest, err := jq.EarliestDue(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, now.Unix()-5, earliest.Unix(), "the earliest of both sets")

	for _, set := range []string{ScheduleSet, RetrySet} {
		_, err := jq.MoveDue(ctx(t), set, now, 100)
		require.NoError(t, err, set)
	}
	assert.Equal(t, []string{job("q", "due")}, v.list(v.keys.Queue("q")))
	assert.Equal(t, []string{job("r", "retried")}, v.list(v.keys.Queue("r")))
	left := v.zset(v.keys.Schedule())
	require.Len(t, left, 1)
	assert.Equal(t, job("q", "later"), left[0].Member)
	assert.Empty(t, v.zset(v.keys.Retry()))

	_, err = jq.MoveDue(ctx(t), "queue", now, 100)
	assert.ErrorIs(t, err, ErrUnknownSet, "a set kind, never a key")
}

func TestFetchTakesTheOldestJobsIntoTheNodesBackupList(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	for i := range 5 {
		require.NoError(t, v.rdb.LPush(ctx(t), v.keys.Queue("q"), job("q", string(rune('a'+i)))).Err())
	}
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 3}, {Queue: "empty", N: 2}}, time.Minute, time.Second)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{job("q", "a"), job("q", "b"), job("q", "c")}, nil}, res.Jobs)
	assert.Equal(t, []int{0, 0}, res.BackupLen, "the backup lists were empty before")
	assert.Equal(t, time.Duration(-1), res.HeldBack(0), "no limit")
	assert.False(t, res.Strays([]FetchReq{{Queue: "q", N: 3}, {Queue: "empty", N: 2}}))
	assert.Len(t, v.list(v.keys.Queue("q")), 2)
	assert.ElementsMatch(t, []string{job("q", "a"), job("q", "b"), job("q", "c")}, v.list(v.keys.Backup("n1", "q")))
	backup, err := jq.BackupList(ctx(t), "q")
	require.NoError(t, err)
	assert.Len(t, backup, 3)

	require.NoError(t, jq.Pause(ctx(t), "q"))
	res, err = jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 3, Held: 3}}, time.Minute, time.Second)
	require.NoError(t, err)
	assert.Empty(t, res.Jobs[0], "a paused queue gives nothing")
	assert.Equal(t, []int{3}, res.BackupLen)
}

// A fetch moves the oldest jobs of a queue as one block, oldest first in its reply, onto the
// backup list in the order one pop and push per job would leave them (the oldest nearest the
// tail, where an acknowledgement's LREM starts), behind the entries already there; more than a
// thousand at once are pushed in several LPUSHes.
func TestFetchMovesTheOldestJobsInOrder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		queued, ask int
	}{
		{"fewer than queued", 5, 3},
		{"more than queued", 2, 5},
		{"none asked for", 3, 0},
		{"thousands", 2500, 2100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			jq := v.store("n1")
			jobs := make([]string, tc.queued) // oldest first
			for i := range jobs {
				jobs[i] = job("q", strconv.Itoa(i))
				require.NoError(t, v.rdb.LPush(ctx(t), v.keys.Queue("q"), jobs[i]).Err())
			}
			require.NoError(t, v.rdb.LPush(ctx(t), v.keys.Backup("n1", "q"), "earlier").Err())
			res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: tc.ask}}, time.Minute, time.Second)
			require.NoError(t, err)
			took := min(tc.ask, tc.queued)
			if took == 0 {
				assert.Empty(t, res.Jobs[0])
			} else {
				assert.Equal(t, jobs[:took], res.Jobs[0])
			}
			assert.Equal(t, []int{1}, res.BackupLen)
			backup := []string{}
			for i := took - 1; i >= 0; i-- {
				backup = append(backup, jobs[i])
			}
			assert.Equal(t, append(backup, "earlier"), v.list(v.keys.Backup("n1", "q")), "newest at the head, then the earlier entry")
			queue := []string{}
			for i := tc.queued - 1; i >= took; i-- {
				queue = append(queue, jobs[i])
			}
			assert.Equal(t, queue, v.list(v.keys.Queue("q")), "the newer jobs stay, in order")
		})
	}
}

func TestAckRemovesOneJobFromTheBackupListAndReleasesItsLock(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	raw := job("q", "j1")
	require.NoError(t, v.rdb.LPush(ctx(t), v.keys.Backup("n1", "q"), raw, raw, job("q", "j2")).Err())
	require.NoError(t, v.rdb.Set(ctx(t), v.keys.Unique("tok"), "j1", 0).Err())

	require.NoError(t, jq.Ack(ctx(t), "q", raw, "tok", "j1", ""))
	assert.ElementsMatch(t, []string{raw, job("q", "j2")}, v.list(v.keys.Backup("n1", "q")), "one copy, not every")
	assert.Zero(t, v.rdb.Exists(ctx(t), v.keys.Unique("tok")).Val())

	failed, err := jq.AckMany(ctx(t), []AckReq{{Queue: "q", Raw: raw}, {Queue: "q", Raw: job("q", "j2")}})
	require.NoError(t, err)
	assert.Nil(t, failed)
	assert.Empty(t, v.list(v.keys.Backup("n1", "q")))
	require.NoError(t, jq.Ack(ctx(t), "q", raw, "", "", ""), "a repeat is harmless")
}

func TestRetryAndDeadMoveTheJobOutOfTheBackupListOnce(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	now := time.Unix(1796010415, 0)
	for _, tc := range []struct {
		name  string
		write func(raw, rewritten string) (bool, error)
		set   string
	}{
		{"retry", func(raw, rewritten string) (bool, error) {
			return jq.Retry(ctx(t), "q", raw, rewritten, now.Add(time.Minute), "")
		}, v.keys.Retry()},
		{"dead", func(raw, rewritten string) (bool, error) {
			return jq.Dead(ctx(t), "q", raw, rewritten, now, time.Hour, 10, "", "", "")
		}, v.keys.Dead()},
	} {
		raw, rewritten := job("q", tc.name), `{"jid":"`+tc.name+`","retry_count":1}`
		require.NoError(t, v.rdb.LPush(ctx(t), v.keys.Backup("n1", "q"), raw).Err())
		moved, err := tc.write(raw, rewritten)
		require.NoError(t, err, tc.name)
		assert.True(t, moved, tc.name)
		moved, err = tc.write(raw, rewritten)
		require.NoError(t, err, tc.name)
		assert.False(t, moved, "%s: a job no longer in the backup list is not written again", tc.name)
		members := v.zset(tc.set)
		require.Len(t, members, 1, tc.name)
		assert.Equal(t, rewritten, members[0].Member, tc.name)
	}
	assert.Empty(t, v.list(v.keys.Backup("n1", "q")))
}

func TestRequeueAndRecoverHandBackupJobsBackToTheirQueue(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	require.NoError(t, v.rdb.LPush(ctx(t), v.keys.Backup("n1", "q"), job("q", "a"), job("q", "b"), job("q", "c")).Err())
	n, err := jq.Requeue(ctx(t), "q", []string{job("q", "a")})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = jq.RecoverBackup(ctx(t), "q")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.ElementsMatch(t, []string{job("q", "a"), job("q", "b"), job("q", "c")}, v.list(v.keys.Queue("q")))
	assert.Empty(t, v.list(v.keys.Backup("n1", "q")))
}

func TestAStaleNodeIsRescuedThenBuried(t *testing.T) {
	v := newEnv(t)
	dead, live := v.store("dead"), v.store("live")
	_, err := dead.Join(ctx(t), 50*time.Millisecond, nil, "e1")
	require.NoError(t, err)
	_, err = live.Join(ctx(t), time.Minute, nil, "e2")
	require.NoError(t, err)
	require.NoError(t, v.rdb.LPush(ctx(t), v.keys.Backup("dead", "q"), job("q", "a"), job("q", "b")).Err())
	require.NoError(t, v.rdb.SAdd(ctx(t), v.keys.BackupQueues("dead"), "q").Err())

	var stale []StaleNode
	testutil.WaitFor(t, "the node past its window is stale", func() bool {
		var err error
		stale, _, err = live.StaleNodes(ctx(t), time.Hour, time.Hour, 0)
		require.NoError(t, err)
		return len(stale) == 1
	})
	assert.Equal(t, "dead", stale[0].Node)

	res, err := live.Bury(ctx(t), stale[0], []string{"q"})
	require.NoError(t, err)
	assert.Equal(t, BuryJobsLeft, res, "a backup list still holds jobs")
	n, err := live.RescueBackup(ctx(t), stale[0], "q", time.Second)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.ElementsMatch(t, []string{job("q", "a"), job("q", "b")}, v.list(v.keys.Queue("q")))
	res, err = live.Bury(ctx(t), stale[0], []string{"q"})
	require.NoError(t, err)
	assert.Equal(t, BuryDone, res)

	alive, _, err := dead.Beat(ctx(t), time.Minute, nil, "e1", 0)
	require.NoError(t, err)
	assert.False(t, alive, "a buried node's beat tells it so")
	var fetchErr error
	dead.SetEpoch("e1")
	_, fetchErr = dead.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 1}}, time.Minute, 0)
	assert.ErrorIs(t, fetchErr, ErrBuried, "nor may it fetch as that incarnation")
	stale, _, err = live.StaleNodes(ctx(t), time.Hour, time.Hour, 0)
	require.NoError(t, err)
	assert.Empty(t, stale)
}

func TestLimitsArePublishedAndTheirUseRead(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	limited := QueueLimits{Name: "limited", Limits: Limits{Global: 2, RateN: 10, RatePer: time.Second}}
	differ, err := jq.PublishLimits(ctx(t), []QueueLimits{limited, {Name: "free"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]LimitsRecord{"limited": {}}, differ, "new limits differ from none")
	differ, err = jq.PublishLimits(ctx(t), []QueueLimits{limited})
	require.NoError(t, err)
	assert.Empty(t, differ, "as recorded: nothing to write")

	published, err := jq.PublishedLimits(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, limited.Limits, published["limited"].Limits())
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(v.rdb.HGet(ctx(t), v.keys.Limits(), "limited").Val()), &rec))
	assert.Equal(t, map[string]any{"global_limit": 2.0, "rate": 10.0, "rate_per_ms": 1000.0}, rec)

	for i := range 3 {
		require.NoError(t, v.rdb.LPush(ctx(t), v.keys.Queue("limited"), job("limited", string(rune('a'+i)))).Err())
	}
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "limited", N: 3, Limits: limited.Limits, First: 1}}, time.Minute, time.Second)
	require.NoError(t, err)
	assert.Len(t, res.Jobs[0], 2, "the global limit holds the third back")
	assert.True(t, res.LimitHeld())
	uses, err := jq.QueueUses(ctx(t), []string{"limited"}, published)
	require.NoError(t, err)
	assert.Equal(t, QueueUse{Size: 1, InUse: 2, Started: 2}, uses["limited"])
}

func TestSetsAreReadByKindAsMembersWithScores(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	for i, raw := range []string{job("q", "a"), job("q", "b"), job("q", "c")} {
		require.NoError(t, v.rdb.ZAdd(ctx(t), v.keys.Dead(), redis.Z{Score: float64(100 + i), Member: raw}).Err())
	}
	page, err := jq.SetRange(ctx(t), DeadSet, 0, 1, true)
	require.NoError(t, err)
	assert.Equal(t, []Member{{Score: 102, Raw: job("q", "c")}, {Score: 101, Raw: job("q", "b")}}, page)
	n, err := jq.SetSize(ctx(t), DeadSet)
	require.NoError(t, err)
	assert.EqualValues(t, 3, n)
	at, err := jq.MembersAt(ctx(t), DeadSet, []string{FormatScore(101)})
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"101": {job("q", "b")}}, at)
	var seen []string
	require.NoError(t, jq.ScanSet(ctx(t), DeadSet, "+inf", func(page []Member) error {
		for _, m := range page {
			seen = append(seen, m.Raw)
		}
		return nil
	}))
	assert.Len(t, seen, 3)
	_, err = jq.SetSize(ctx(t), "dead:x")
	assert.True(t, errors.Is(err, ErrUnknownSet))
}

func TestStatsAreReadByDay(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, jq.FlushStats(ctx(t), "b1", time.Minute, []StatCount{
		{Name: "processed", Span: 't', N: 3}, {Name: "failed", Span: 't', N: 1},
		{Name: "processed", Span: 'd', At: day, N: 3, TTL: time.Hour},
	}, nil, day))
	require.NoError(t, jq.FlushStats(ctx(t), "b1", time.Minute, []StatCount{{Name: "processed", Span: 't', N: 3}}, nil, day),
		"the same batch again counts nothing")
	c, err := jq.Stats(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, Counts{Processed: 3, Failed: 1}, c)
	days, err := jq.DayStats(ctx(t), []time.Time{day, day.AddDate(0, 0, 1)})
	require.NoError(t, err)
	assert.Equal(t, []Counts{{Processed: 3}, {}}, days)
	assert.Equal(t, "3", v.rdb.Get(ctx(t), v.keys.StatDay("processed", day)).Val())
}
