package exq

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Fixtures of Sidekiq 7.3.10's iteration state (lib/sidekiq/job/iterable.rb at the tag), byte for
// byte as Sidekiq writes it; interop/iteration_test.go runs the same against the real Sidekiq.

// A state Sidekiq's flush_state wrote (iterable.rb:257-271: HSET ex <Integer>, c dump_json(cursor),
// rt <Float>; EXPIRE STATE_TTL) is resumed at its cursor: OnResume, the next save ex+1, rt added
// to; and exq's saves keep the same types and units.
func TestIterationResumesAStateSidekiqWroteAndSavesItAsSidekiqDoes(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jid := "5c1a2e3f4b5d6a7b8c9d0e1f"
	key := v.keys.Iteration(jid)
	require.NoError(t, v.rdb.HSet(ctx, key, "ex", "3", "c", "41", "rt", "12.503").Err())
	require.NoError(t, v.rdb.Expire(ctx, key, 30*24*time.Hour).Err())
	c := newIterCount()
	gate := make(chan struct{})
	v.start(Options{Queues: []Queue{{Name: "it", Concurrency: 1}},
		Workers: map[string]Worker{"Walk": countingIteration(c, -1, 45, gate)}})
	v.push("it", `{"class":"Walk","queue":"it","args":[50],"jid":"`+jid+`","retry":true,"created_at":1796010415.667948,"enqueued_at":1796010415.668102}`)
	v.waitFor("item 44", func() bool { items, _ := c.snapshot(); return items[44] == 1 })
	f := v.rdb.HGetAll(ctx, key).Val()
	require.Equal(t, "4", f["ex"], "ex: an Integer, one more per run")
	require.Equal(t, "45", f["c"], "c: the JSON of the cursor of the next item")
	require.Regexp(t, regexp.MustCompile(`^12\.5\d*$|^1[2-9]\.\d+$`), f["rt"], "rt: a Float's to_s, Sidekiq's runtime added to")
	ttl := v.rdb.TTL(ctx, key).Val()
	require.InDelta(t, (30 * 24 * time.Hour).Seconds(), ttl.Seconds(), 60, "STATE_TTL (iterable.rb:183), refreshed at every save")
	close(gate)
	v.waitFor("complete", func() bool { _, h := c.snapshot(); return len(h) == 2 })
	items, hooks := c.snapshot()
	require.Equal(t, []string{"resume", "complete"}, hooks, "ex 3 saved: not the first run (iterable.rb:143)")
	require.Len(t, items, 9, "items 41..49 only")
	require.Equal(t, 1, items[41])
}

// Sidekiq's cancel! (iterable.rb:49-66, client.rb:63-74: HSETNX cancelled Time.now.to_i, EXPIRE)
// before the job's first run leaves a hash with nothing but the flag: the exq job ends cancelled
// without one item, as Sidekiq's is_cancelled? check at the start (iterable.rb:186-189) does.
func TestIterationCancelledBeforeItsFirstRunProcessesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jid := "6d2b3f4a5c6e7f8091a2b3c4"
	require.NoError(t, v.rdb.HSetNX(ctx, v.keys.Iteration(jid), "cancelled", "1796010415").Err())
	c := newIterCount()
	v.start(Options{Queues: []Queue{{Name: "it", Concurrency: 1}},
		Workers: map[string]Worker{"Walk": countingIteration(c, -1, -1, nil)}})
	v.push("it", `{"class":"Walk","queue":"it","args":[50],"jid":"`+jid+`","retry":true,"created_at":1796010415.667948,"enqueued_at":1796010415.668102}`)
	v.waitFor("the dead job", func() bool { return v.zcard(v.keys.Dead()) == 1 })
	items, hooks := c.snapshot()
	require.Empty(t, items)
	require.Equal(t, []string{"cancel"}, hooks)
}

// API.CancelJob's flag is Sidekiq's: HSETNX cancelled <Unix seconds>, the TTL STATE_TTL, and a
// flag already there is kept (cancel! returns the first one).
func TestCancelJobWritesSidekiqsFlag(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jid := "7e3c4a5b6d7f8091a2b3c4d5"
	key := v.keys.Iteration(jid)
	require.NoError(t, v.rdb.HSet(ctx, key, "ex", "1", "c", "7", "rt", "0.25").Err()) // between two runs
	api := NewAPIForTest(t, v)
	node, err := api.CancelJob(ctx, jid)
	require.NoError(t, err)
	require.Empty(t, node)
	at := v.rdb.HGet(ctx, key, "cancelled").Val()
	require.Regexp(t, `^\d{10}$`, at)
	require.InDelta(t, (30 * 24 * time.Hour).Seconds(), v.rdb.TTL(ctx, key).Val().Seconds(), 60)
	_, err = api.CancelJob(ctx, jid)
	require.NoError(t, err)
	require.Equal(t, at, v.rdb.HGet(ctx, key, "cancelled").Val(), "the first cancellation is kept")
	p, ok, err := api.IterationProgress(ctx, jid)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, IterationProgress{Executions: 1, Cursor: []byte("7"), Runtime: 250 * time.Millisecond, Cancelled: p.Cancelled}, p)
	require.False(t, p.Cancelled.IsZero())
}
