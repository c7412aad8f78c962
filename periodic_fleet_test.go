package exq

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func testFleetPeriodicEnqueuesEachTickOnceWhileANodeIsKilledAndRestarted(t *testing.T) {
	// Timed (timed_test.go): child processes must claim every per-second tick; a starved one misses a tick.
	v := newEnv(t)
	seconds := 8
	if testutil.Long() {
		seconds = 60
	}
	cfg := fleetConfig{Queue: Queue{Name: "idle", Concurrency: 1}, Heartbeat: time.Second,
		Periodic: []PeriodicJob{{Name: "tick", Spec: "* * * * * *", Class: "Tick", Queue: "cron"}}}
	queued := func() int { return len(v.list(v.keys.Queue("cron"))) }
	nodes := v.startFleet(3, cfg)
	waitLong(t, time.Duration(seconds)*time.Second+time.Minute, "half the run", func() bool { return queued() >= seconds/2 })
	nodes[0].kill()
	killedAt := queued()
	nodes = append(nodes[1:], v.startFleet(1, cfg)...)
	waitLong(t, time.Duration(seconds)*time.Second+time.Minute, "the whole run", func() bool { return queued() >= seconds })
	stopFleet(nodes)

	// The queue and the claimed ticks, read at one instant.
	ctx := context.Background()
	var jobs *redis.StringSliceCmd
	var ticks *redis.ZSliceCmd
	_, err := v.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		jobs = p.LRange(ctx, v.keys.Queue("cron"), 0, -1)
		ticks = p.ZRangeWithScores(ctx, v.keys.CronEnqueued("tick"), 0, -1)
		return nil
	})
	require.NoError(t, err)
	perJID := map[string]int{}
	for _, raw := range jobs.Val() {
		perJID[decode(t, raw)["jid"].(string)]++
	}
	var enqueued []time.Time
	for i, z := range ticks.Val() {
		tick, err := time.Parse("2006-01-02T15:04:05Z", z.Member.(string))
		require.NoError(t, err)
		n := perJID[tickJID("tick", tick)]
		if i < 2 && n == 0 {
			continue // the ticks before the schedule was created: counted as done, never enqueued
		}
		assert.Equal(t, 1, n, "tick %s: one job", z.Member)
		enqueued = append(enqueued, tick)
	}
	assert.Len(t, jobs.Val(), len(enqueued), "no job besides the ticks'")
	missing := 0
	for i := 1; i < len(enqueued); i++ {
		missing += int(enqueued[i].Sub(enqueued[i-1])/time.Second) - 1
	}
	assert.Zero(t, missing, "no tick missing while nodes lived")
	t.Logf("per-second schedule on 3 processes, one SIGKILLed after %d ticks and another started: %d ticks from %s to %s, %d jobs, each tick once, %d missing",
		killedAt, len(enqueued), enqueued[0].Format(time.TimeOnly), enqueued[len(enqueued)-1].Format(time.TimeOnly), len(jobs.Val()), missing)
}
