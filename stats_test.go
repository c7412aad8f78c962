package exq

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func (v *env) get(key string) string {
	v.t.Helper()
	s, _ := v.rdb.Get(context.Background(), key).Result()
	return s
}

func TestStatsCountRunsInTotalDayAndSecondKeys(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	clock := &fixedClock{t: time.Date(2026, 11, 30, 23, 59, 58, 0, time.UTC)}
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		if job.Class == "Fail" {
			return errors.New("boom")
		}
		return nil
	})
	v.start(Options{DisableScheduler: true,
		Workers: map[string]Worker{"Ok": w, "Fail": w}}, testHooks{serverNow: clock.now, statsInterval: 10 * time.Millisecond})
	for i := 0; i < 3; i++ {
		v.push("default", fmt.Sprintf(`{"class":"Ok","args":[],"queue":"default","jid":"ok%d"}`, i))
	}
	for i := 0; i < 2; i++ {
		v.push("default", fmt.Sprintf(`{"class":"Fail","args":[],"queue":"default","jid":"f%d","retry":%d}`, i, i))
	}
	testutil.WaitFor(t, "3 processed and 2 failed", func() bool {
		return v.get(v.keys.Stat("processed")) == "3" && v.get(v.keys.Stat("failed")) == "2"
	})
	for _, tc := range []struct {
		key, want string
		ttlMin    time.Duration
		ttlMax    time.Duration
	}{
		{v.ns + ":stat:processed:2026-11-30", "3", 5*365*24*time.Hour - time.Minute, 5 * 365 * 24 * time.Hour},
		{v.ns + ":stat:failed:2026-11-30", "2", 5*365*24*time.Hour - time.Minute, 5 * 365 * 24 * time.Hour},
		{v.ns + ":stat:processed_rt:2026-11-30 23:59:58Z", "3", time.Second, 120 * time.Second},
		{v.ns + ":stat:failed_rt:2026-11-30 23:59:58Z", "2", time.Second, 120 * time.Second},
	} {
		assert.Equal(t, tc.want, v.get(tc.key), tc.key)
		ttl := v.rdb.TTL(ctx, tc.key).Val()
		assert.GreaterOrEqual(t, ttl, tc.ttlMin, tc.key)
		assert.LessOrEqual(t, ttl, tc.ttlMax, tc.key)
	}
	assert.Equal(t, -1*time.Nanosecond, v.rdb.TTL(ctx, v.keys.Stat("processed")).Val(), "totals never expire")
}

func TestStatsAreWrittenInBatchesNotPerJob(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	client, counter := v.countingClient()
	rec := &recorder{}
	const n = 300
	en := v.enqueuer(time.Now)
	for i := 0; i < n; i++ {
		_, err := en.enqueue(context.Background(), "default", "W", nil, nil)
		require.NoError(t, err)
	}
	v.start(Options{Redis: client, Workers: map[string]Worker{"W": rec}}, testHooks{statsInterval: 50 * time.Millisecond})
	testutil.WaitFor(t, "all counted", func() bool { return v.get(v.keys.Stat("processed")) == fmt.Sprint(n) })
	assert.Less(t, counter.Count("incrby"), n/10, "INCRBY commands for %d jobs", n)
	assert.Zero(t, counter.Count("incr"))
	assert.Less(t, counter.Count("hset")+counter.Count("hdel"), n/10, "busy-list writes for %d jobs", n)
}

func TestStatsCountedDuringARedisOutageAreWrittenAfterIt(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	proxy := testutil.NewProxy(t, v.rdb.Options().Addr)
	e := v.start(Options{Redis: v.clientVia(proxy.Addr()), RedisTimeout: 5 * time.Second,
		DisableHeartbeat: true, DisableScheduler: true}, testHooks{statsInterval: 10 * time.Millisecond})
	proxy.Down()
	// Counting is in memory only, so a worker finishing now is never held up by Redis.
	for i := 0; i < 5; i++ {
		e.stats.Record(true, time.Now())
	}
	e.stats.Record(false, time.Now())
	// Let at least one flush fail.
	require.Error(t, e.stats.Flush(context.Background()))
	proxy.Up()
	testutil.WaitFor(t, "the counts are written", func() bool {
		return v.get(v.keys.Stat("processed")) == "5" && v.get(v.keys.Stat("failed")) == "1"
	})
}

func TestStopWritesTheLastCounts(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	e, err := start(context.Background(), Options{Redis: v.rdb, Namespace: v.ns, Logger: testLogger(),
		Workers: map[string]Worker{"W": rec}}, testHooks{statsInterval: time.Hour})
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		_, err := e.Enqueue(context.Background(), "default", "W", nil)
		require.NoError(t, err)
	}
	testutil.WaitFor(t, "4 jobs ran", func() bool { return rec.count() == 4 })
	assert.Empty(t, v.get(v.keys.Stat("processed")), "nothing flushed yet")
	require.NoError(t, e.Stop(context.Background()))
	assert.Equal(t, "4", v.get(v.keys.Stat("processed")))
}

func TestDisableStatsWritesNoCounters(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	e := v.start(Options{DisableStats: true, Workers: map[string]Worker{"W": rec}}, testHooks{statsInterval: 10 * time.Millisecond})
	_, err := e.Enqueue(context.Background(), "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job ran", func() bool { return rec.count() == 1 })
	require.NoError(t, e.Stop(context.Background()))
	keys, err := v.rdb.Keys(context.Background(), v.ns+":stat:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys)
}

// A node's runs reach the metrics by themselves, once a second, per class; DisableMetrics
// writes none (and no other key changes).
func TestNodeRunsShowInTheMetrics(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		v := newEnv(t)
		ctx := context.Background()
		rec := &recorder{}
		v.start(Options{DisableMetrics: off, Workers: map[string]Worker{"HardJob": rec, "Other": rec}}, testHooks{statsInterval: 20 * time.Millisecond})
		now := time.Now().UTC()
		v.push("default", `{"class":"HardJob","args":[],"queue":"default","jid":"m1"}`)
		v.push("default", `{"class":"Other","args":[],"queue":"default","jid":"m2"}`)
		testutil.WaitFor(t, "both ran and were counted", func() bool {
			n, _ := v.rdb.Get(ctx, v.keys.Stat("processed")).Int()
			return n == 2
		})
		keys, err := v.rdb.Keys(ctx, v.ns+":j|*").Result()
		require.NoError(t, err)
		if off {
			assert.Empty(t, keys)
			continue
		}
		// Sidekiq 7's minute, 8's minute and 8's ten minutes (twice that if a minute turned)
		assert.True(t, len(keys) >= 3 && len(keys) <= 6, "%v", keys)
		h := v.hash(v.keys.Metrics7(now))
		if len(h) == 0 { // the minute turned between the runs and now
			h = v.hash(v.keys.Metrics7(now.Add(-time.Minute)))
		}
		assert.Equal(t, "1", h["HardJob|p"])
		assert.Equal(t, "1", h["Other|p"])
	}
}
