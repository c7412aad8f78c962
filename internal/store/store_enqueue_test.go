package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// Per-method tests of the enqueue side: Enqueue, EnqueueAt, EnqueueAll, EnqueueGroup,
// WriteOne and group commit, read back by the key names of docs/wire.md.

func TestEnqueueWritesExactlyTheQueueAndTheQueuesSet(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, err := jq.Enqueue(ctx(t), "mail", job("mail", "j1"), nil)
	require.NoError(t, err)
	_, err = jq.Enqueue(ctx(t), "mail", job("mail", "j2"), nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"queues": "set", "queue:mail": "list"}, v.layout())
	assert.Equal(t, []string{job("mail", "j2"), job("mail", "j1")}, v.list(v.p("queue:mail")), "LPUSH: the newest on the left")
}

func TestEnqueueLockTakesTheDocumentedKeyWithItsTTL(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, err := jq.Enqueue(ctx(t), "q", job("q", "j1"), &Lock{Token: "tok", JID: "j1", TTL: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"queues": "set", "queue:q": "list", "unique:tok": "string"}, v.layout())
	ttl := v.rdb.PTTL(ctx(t), v.p("unique:tok")).Val()
	assert.Greater(t, ttl, 59*time.Minute)
	assert.LessOrEqual(t, ttl, time.Hour)

	// A lock already due (TTL 0) still checks for a holder, and is written for 1 ms (PX 0 is
	// an error in Redis).
	_, err = jq.Enqueue(ctx(t), "q", job("q", "j2"), &Lock{Token: "due", JID: "j2", TTL: 0})
	require.NoError(t, err)
	assert.Len(t, v.list(v.p("queue:q")), 2)
}

func TestEnqueueOntoAKeyOfAnotherTypeFails(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	v.garbage(v.p("queue:q"))
	_, err := jq.Enqueue(ctx(t), "q", job("q", "j1"), nil)
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, "garbage", v.rdb.Get(ctx(t), v.p("queue:q")).Val())
	assert.Equal(t, map[string]string{"queue:q": "string"}, v.layout(), "nothing else written: no queue name, no lock")
	_, err = jq.Enqueue(ctx(t), "q", job("q", "j1"), &Lock{Token: "tok", JID: "j1", TTL: time.Hour})
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, map[string]string{"queue:q": "string"}, v.layout(), "the lock this call took is given back")
	require.NoError(t, v.rdb.SAdd(ctx(t), v.p("queues"), "q").Err())
	_, err = jq.Enqueue(ctx(t), "q", job("q", "j1"), nil)
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, []string{"q"}, v.rdb.SMembers(ctx(t), v.p("queues")).Val(), "a name that was there stays")

	v.garbage(v.p("schedule"))
	_, err = jq.EnqueueAt(ctx(t), time.Now(), job("q", "j1"), nil)
	assert.ErrorContains(t, err, "WRONGTYPE")
}

func TestEnqueueAtScoresTheDueTimeAndHonoursTheLock(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	at := time.Unix(1896010415, 123456000)
	holder, err := jq.EnqueueAt(ctx(t), at, job("q", "j1"), &Lock{Token: "tok", JID: "j1", TTL: time.Hour})
	require.NoError(t, err)
	assert.Empty(t, holder)
	assert.Equal(t, map[string]string{"schedule": "zset", "unique:tok": "string"}, v.layout(), "no queue, no queues set yet")
	z := v.zset(v.p("schedule"))
	require.Len(t, z, 1)
	assert.InDelta(t, 1896010415.123456, z[0].Score, 1e-6, "Unix seconds with microseconds")

	holder, err = jq.EnqueueAt(ctx(t), at, job("q", "j2"), &Lock{Token: "tok", JID: "j2", TTL: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, "j1", holder)
	holder, err = jq.EnqueueAt(ctx(t), at, job("q", "j1"), &Lock{Token: "tok", JID: "j1", TTL: time.Hour})
	require.NoError(t, err)
	assert.Empty(t, holder, "a repeat by the holder")
	assert.Len(t, v.zset(v.p("schedule")), 1, "neither wrote")
}

func TestEnqueueAllWritesQueuesAndScheduleAndReportsHolders(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	require.NoError(t, v.rdb.Set(ctx(t), v.p("unique:held"), "owner", time.Hour).Err())
	at := time.Unix(1896010415, 0)
	items := []BatchItem{
		{Queue: "a", Job: job("a", "1")},
		{Queue: "b", Job: job("b", "2")},
		{Queue: "a", At: at, Job: job("a", "3")},
		{Queue: "a", Job: job("a", "4"), Lock: &Lock{Token: "held", JID: "4", TTL: time.Hour}},
		{Queue: "b", Job: job("b", "5"), Lock: &Lock{Token: "free", JID: "5", TTL: time.Hour}},
		{Queue: "a", Job: job("a", "6")},
	}
	holders, err := jq.EnqueueAll(ctx(t), items)
	require.NoError(t, err)
	assert.Equal(t, []string{"", "", "", "owner", "", ""}, holders)
	assert.Equal(t, []string{job("a", "6"), job("a", "1")}, v.list(v.p("queue:a")), "batch order kept")
	assert.Equal(t, []string{job("b", "5"), job("b", "2")}, v.list(v.p("queue:b")))
	assert.ElementsMatch(t, []string{"a", "b"}, v.members(v.p("queues")))
	z := v.zset(v.p("schedule"))
	require.Len(t, z, 1)
	assert.Equal(t, job("a", "3"), z[0].Member)
	assert.Equal(t, "5", v.rdb.Get(ctx(t), v.p("unique:free")).Val())
	assert.Equal(t, map[string]string{"queues": "set", "queue:a": "list", "queue:b": "list", "schedule": "zset",
		"unique:held": "string", "unique:free": "string"}, v.layout())

	holders, err = jq.EnqueueAll(ctx(t), items)
	require.NoError(t, err)
	assert.Equal(t, []string{"", "", "", "", "", ""}, holders, "a repeat (a lock held by its own jid) writes nothing")
	assert.Len(t, v.list(v.p("queue:a")), 2)
}

func TestEnqueueAllToOneQueueKeepsOrder(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	var items []BatchItem
	for _, jid := range []string{"1", "2", "3"} {
		items = append(items, BatchItem{Queue: "q", Job: job("q", jid)})
	}
	holders, err := jq.EnqueueAll(ctx(t), items)
	require.NoError(t, err)
	assert.Equal(t, []string{"", "", ""}, holders)
	assert.Equal(t, []string{job("q", "3"), job("q", "2"), job("q", "1")}, v.list(v.p("queue:q")))
}

func TestEnqueueAllChecksEveryKeyBeforeWritingAny(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	v.garbage(v.p("queue:b"))
	_, err := jq.EnqueueAll(ctx(t), []BatchItem{{Queue: "a", Job: job("a", "1")}, {Queue: "b", Job: job("b", "2")}})
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, map[string]string{"queue:b": "string"}, v.layout(), "nothing was written")
}

func TestEnqueueGroupGivesEachJobItsOwnOutcome(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	require.NoError(t, v.rdb.Set(ctx(t), v.p("unique:held"), "owner", time.Hour).Err())
	v.garbage(v.p("queue:bad"))
	at := time.Unix(1896010415, 0)
	out, replErr, err := jq.EnqueueGroup(ctx(t), []BatchItem{
		{Queue: "a", Job: job("a", "1")},
		{Queue: "bad", Job: job("bad", "2")},
		{Queue: "a", Job: job("a", "3"), Lock: &Lock{Token: "held", JID: "3", TTL: time.Hour}},
		{Queue: "a", At: at, Job: job("a", "4"), Lock: &Lock{Token: "new", JID: "4", TTL: time.Hour}},
		{Queue: "a", Job: job("a", "5"), Lock: &Lock{Token: "new", JID: "5", TTL: time.Hour}},
		{Queue: "a", Job: job("a", "6"), Lock: &Lock{Token: "held", JID: "owner", TTL: time.Hour}},
	})
	require.NoError(t, err)
	require.NoError(t, replErr)
	require.Len(t, out, 6)
	assert.Equal(t, GroupOutcome{}, out[0])
	assert.ErrorContains(t, out[1].Err, "WRONGTYPE", "a job's own error fails that job only")
	assert.Equal(t, GroupOutcome{Holder: "owner"}, out[2])
	assert.Equal(t, GroupOutcome{}, out[3])
	assert.Equal(t, GroupOutcome{Holder: "4"}, out[4], "the first of two jobs with one token wins")
	assert.Equal(t, GroupOutcome{}, out[5], "the holder's own repeat is no conflict, and writes nothing")
	assert.Equal(t, []string{job("a", "1")}, v.list(v.p("queue:a")))
	z := v.zset(v.p("schedule"))
	require.Len(t, z, 1)
	assert.Equal(t, job("a", "4"), z[0].Member)
	assert.Equal(t, "garbage", v.rdb.Get(ctx(t), v.p("queue:bad")).Val())
}

func TestWriteOneGoesToTheQueueOrTheSchedule(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, err := jq.WriteOne(ctx(t), BatchItem{Queue: "q", Job: job("q", "now")})
	require.NoError(t, err)
	_, err = jq.WriteOne(ctx(t), BatchItem{Queue: "q", At: time.Unix(1896010415, 0), Job: job("q", "later")})
	require.NoError(t, err)
	assert.Equal(t, []string{job("q", "now")}, v.list(v.p("queue:q")))
	assert.Len(t, v.zset(v.p("schedule")), 1)
}

func TestGroupCommitWritesEveryConcurrentJobOnce(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	var g GroupCommit
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = g.Write(ctx(t), jq, BatchItem{Queue: "q", Job: job("q", wire.NewJID())})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, v.list(v.p("queue:q")), n)
	queued, busy := g.Waiting()
	assert.Zero(t, queued)
	assert.False(t, busy, "no write in flight once every caller returned")
}

func TestGroupCommitWritesTheQueuedCallsInOneGroup(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	g := &GroupCommit{busy: true} // a write in flight: callers queue
	type res struct {
		holder string
		err    error
	}
	results := make(chan res, 3)
	require.NoError(t, v.rdb.Set(ctx(t), v.p("unique:tok"), "other", time.Hour).Err())
	items := []BatchItem{
		{Queue: "q", Job: job("q", "1")},
		{Queue: "q", Job: job("q", "2"), Lock: &Lock{Token: "tok", JID: "2", TTL: time.Hour}},
		{Queue: "q", At: time.Unix(1896010415, 0), Job: job("q", "3")},
	}
	for i, it := range items {
		go func() {
			h, err := g.Write(context.Background(), jq, it)
			results <- res{h, err}
		}()
		waitQueued(t, g, i+1)
	}
	g.handOn() // the write in flight ends: the first queued call writes the group
	var got []res
	for range items {
		got = append(got, <-results)
	}
	assert.ElementsMatch(t, []res{{"", nil}, {"other", nil}, {"", nil}}, got)
	assert.Equal(t, []string{job("q", "1")}, v.list(v.p("queue:q")))
	assert.Len(t, v.zset(v.p("schedule")), 1)
	queued, busy := g.Waiting()
	assert.Zero(t, queued)
	assert.False(t, busy)
}

func TestGroupCommitDropsAQueuedCallWhoseContextEnds(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	g := &GroupCommit{busy: true}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := g.Write(c, jq, BatchItem{Queue: "q", Job: job("q", "1")})
		done <- err
	}()
	waitQueued(t, g, 1)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	queued, busy := g.Waiting()
	assert.Zero(t, queued, "the call left the queue")
	assert.True(t, busy, "the write in flight is still the other one")
	g.handOn()
	_, busy = g.Waiting()
	assert.False(t, busy)
	assert.Empty(t, v.list(v.p("queue:q")), "its job was never written")
}

func TestGroupCommitAnswersACallThatEndedWhileQueuedWithItsError(t *testing.T) {
	v := newEnv(t)
	g := &GroupCommit{busy: true}
	// The call is queued with a context that has already ended: handOn answers it.
	c, cancel := context.WithCancel(context.Background())
	cancel()
	g.queued = append(g.queued, &groupCall{ctx: c, item: BatchItem{Queue: "q", Job: job("q", "1")}, ready: make(chan struct{})})
	gone := g.queued[0]
	g.handOn()
	<-gone.ready
	assert.ErrorIs(t, gone.err, context.Canceled)
	_, busy := g.Waiting()
	assert.False(t, busy)
	assert.Empty(t, v.list(v.p("queue:q")))
}

func waitQueued(t *testing.T, g *GroupCommit, n int) {
	t.Helper()
	testutil.WaitFor(t, "calls queued", func() bool {
		q, _ := g.Waiting()
		return q >= n
	})
}
