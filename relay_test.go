package exq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (v *env) relayClient() *Client {
	v.t.Helper()
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(v.t, err)
	v.t.Cleanup(func() { _ = c.Close() })
	return c
}

func prepared(t *testing.T, spec JobSpec) RelayedJob {
	t.Helper()
	j, err := PrepareJob(time.Now(), spec)
	require.NoError(t, err)
	r := RelayedJob{Job: j.Raw()}
	if !spec.At.IsZero() {
		r.At = spec.At
	}
	return r
}

func TestPushRelayedWritesWhatEnqueueWritesAndARepeatIsANoOp(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := v.relayClient()
	ctx := context.Background()
	at := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	jobs := []RelayedJob{
		prepared(t, JobSpec{Queue: "mail", Class: "W", Args: []any{1}, Options: []EnqueueOption{JID("a")}}),
		prepared(t, JobSpec{Queue: "mail", Class: "W", Args: []any{2}, Options: []EnqueueOption{JID("b")}}),
		prepared(t, JobSpec{Queue: "sms", Class: "W", At: at, Options: []EnqueueOption{JID("c")}}),
	}
	res, err := c.PushRelayed(ctx, 0, jobs)
	require.NoError(t, err)
	assert.Equal(t, []RelayResult{{JID: "a"}, {JID: "b"}, {JID: "c"}}, res)
	assert.Equal(t, []string{jobs[1].Job, jobs[0].Job}, v.list(v.keys.Queue("mail")), "LPUSH in batch order")
	sched := v.zset(v.keys.Schedule())
	require.Len(t, sched, 1)
	assert.Equal(t, jobs[2].Job, sched[0].Member)
	assert.InDelta(t, float64(at.UnixMicro())/1e6, sched[0].Score, 1e-6, "the due time is kept")
	qs, err := v.rdb.SMembers(ctx, v.keys.Queues()).Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"mail"}, qs)
	ttl, err := v.rdb.PTTL(ctx, v.keys.Relayed("a")).Result()
	require.NoError(t, err)
	assert.InDelta(t, DefaultRelayMarkTTL.Seconds(), ttl.Seconds(), 60)

	res, err = c.PushRelayed(ctx, 0, jobs)
	require.NoError(t, err)
	assert.Equal(t, []RelayResult{{JID: "a", Duplicate: true}, {JID: "b", Duplicate: true}, {JID: "c", Duplicate: true}}, res)
	assert.Len(t, v.list(v.keys.Queue("mail")), 2)
	assert.Equal(t, 1, v.zcard(v.keys.Schedule()))
}

func TestPushRelayedDueTimeInThePastGoesToTheQueueNow(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := v.relayClient()
	j := prepared(t, JobSpec{Queue: "q", Class: "W", Options: []EnqueueOption{JID("late")}})
	j.At = time.Now().Add(-time.Minute)
	_, err := c.PushRelayed(context.Background(), 0, []RelayedJob{j})
	require.NoError(t, err)
	assert.Equal(t, []string{j.Job}, v.list(v.keys.Queue("q")))
	assert.Equal(t, 0, v.zcard(v.keys.Schedule()))
}

func TestPushRelayedSameJIDTwiceInOneBatchIsWrittenOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := v.relayClient()
	j := prepared(t, JobSpec{Queue: "q", Class: "W", Options: []EnqueueOption{JID("x")}})
	res, err := c.PushRelayed(context.Background(), time.Minute, []RelayedJob{j, j})
	require.NoError(t, err)
	assert.Equal(t, []RelayResult{{JID: "x"}, {JID: "x", Duplicate: true}}, res)
	assert.Len(t, v.list(v.keys.Queue("q")), 1)
	ttl, err := v.rdb.PTTL(context.Background(), v.keys.Relayed("x")).Result()
	require.NoError(t, err)
	assert.InDelta(t, 60, ttl.Seconds(), 5, "the mark keeps the TTL given")
}

func TestPushRelayedUniqueJobsConflictAsADirectEnqueue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := v.relayClient()
	ctx := context.Background()
	u := Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour, Token: "tok"})
	holder, err := c.Enqueue(ctx, "q", "W", nil, u)
	require.NoError(t, err)
	j := prepared(t, JobSpec{Queue: "q", Class: "W", Options: []EnqueueOption{u, JID("second")}})
	res, err := c.PushRelayed(ctx, 0, []RelayedJob{j})
	require.NoError(t, err)
	require.Len(t, res, 1)
	var conflict *UniqueConflictError
	require.ErrorAs(t, res[0].Err, &conflict)
	assert.Equal(t, holder, conflict.JID)
	assert.True(t, errors.Is(res[0].Err, ErrUniqueConflict))
	assert.Len(t, v.list(v.keys.Queue("q")), 1, "nothing written on a conflict")

	// Once the lock is gone, another jid takes it with the TTL to its unlocks_at.
	require.NoError(t, v.rdb.Del(ctx, v.keys.Unique("tok")).Err())
	k := prepared(t, JobSpec{Queue: "q", Class: "W", Options: []EnqueueOption{u, JID("third")}})
	res, err = c.PushRelayed(ctx, 0, []RelayedJob{k})
	require.NoError(t, err)
	assert.Equal(t, []RelayResult{{JID: "third"}}, res)
	got, err := v.rdb.Get(ctx, v.keys.Unique("tok")).Result()
	require.NoError(t, err)
	assert.Equal(t, "third", got)
	ttl, err := v.rdb.PTTL(ctx, v.keys.Unique("tok")).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Hour.Seconds(), ttl.Seconds(), 60)
}

func TestPushRelayedRefusesBadDocumentsOneByOne(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := v.relayClient()
	good := prepared(t, JobSpec{Queue: "q", Class: "W", Options: []EnqueueOption{JID("good")}})
	cases := []struct {
		name, doc, want string
	}{
		{"not JSON", `{"class":`, "not a job"},
		{"no jid", `{"class":"W","args":[],"queue":"q"}`, "no jid"},
		{"bad queue", `{"class":"W","args":[],"queue":":q","jid":"j"}`, "queue"},
		{"unique without unlocks_at", `{"class":"W","args":[],"queue":"q","jid":"j","unique_token":"t"}`, "unlocks_at"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.PushRelayed(context.Background(), 0, []RelayedJob{{Job: tc.doc}, good})
			require.NoError(t, err)
			require.Len(t, res, 2)
			require.ErrorIs(t, res[0].Err, ErrInvalidJob)
			assert.Contains(t, res[0].Err.Error(), tc.want)
			assert.Equal(t, "good", res[1].JID)
			assert.NoError(t, res[1].Err)
		})
	}
	assert.Len(t, v.list(v.keys.Queue("q")), 1, "the good job once, the bad ones never")
}

func TestPushRelayedJobsRunOnANode(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 2}}, Workers: map[string]Worker{"W": rec}})
	j := prepared(t, JobSpec{Queue: "q", Class: "W", Options: []EnqueueOption{JID("run-me")}})
	_, err := e.PushRelayed(context.Background(), 0, []RelayedJob{j})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rec.count() == 1 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, []string{"run-me"}, rec.jids())
}
