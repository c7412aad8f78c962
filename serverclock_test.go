package exq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/serverclock"
)

func TestServerClockReadsTheServersTimeWhateverThisProcesssClockSays(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	for _, skew := range []time.Duration{0, 30 * time.Second, -10 * time.Minute, 365 * 24 * time.Hour} {
		c := serverclock.New(timeOf(v.rdb), skewedClock(skew), testLogger())
		assert.InDelta(t, skew.Seconds(), time.Until(c.Now()).Seconds(), 1, "before a sample: the local clock, %s off", skew)
		synced := time.Now()
		require.NoError(t, c.Sync(context.Background()))
		// A sample is off by up to half its round trip (serverclock.go): 100 ms, or more when
		// the round trip was longer (a loaded run read 100 ms behind the server).
		tol := max(100*time.Millisecond, time.Since(synced)/2+10*time.Millisecond)
		for i := 0; i < 3; i++ {
			// The server's time read on both sides of the read, so that the round trips of
			// these checks (long on a loaded run: 150-300 ms seen) are not counted as error.
			before := v.serverTime()
			got := c.Now()
			after := v.serverTime()
			assert.True(t, !got.Before(before.Add(-tol)) && !got.After(after.Add(tol)),
				"clock %s off: read %s, server between %s and %s (tolerance %s)", skew, got, before, after, tol)
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestServerClockCallsThatMeetAStaleSampleShareOneTIME(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rdb, counter := v.countingClient()
	c := serverclock.New(timeOf(rdb), time.Now, testLogger())
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, c.FreshForClient(context.Background()))
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, counter.Count("time"), "TIME calls for 50 calls at once")
	require.NoError(t, c.FreshForClient(context.Background()))
	assert.Equal(t, 1, counter.Count("time"), "a sample younger than a minute serves")
}

func TestServerClockWithoutASampleFailsTheCallThatNeedsIt(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	opts := *v.rdb.Options()
	opts.Addr = "127.0.0.1:1" // nothing listens
	opts.MaxRetries = -1
	down := redis.NewClient(&opts)
	t.Cleanup(func() { _ = down.Close() })
	c := serverclock.New(timeOf(down), time.Now, testLogger())
	en := &enqueuer{jq: testStore(down, v.keys, ""), now: c.Now, fresh: c.FreshForClient, maxRetries: DefaultMaxRetries}
	_, err := en.enqueueIn(context.Background(), "q", "W", time.Minute, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exq: enqueue in: read the Redis server's clock (TIME)")
}

// An enqueuer of a Client (which samples on its first call) on a machine whose clock is 10 min
// ahead schedules EnqueueIn(20 s) 20 s after the server's now, and EnqueueAt(t) at t.
func TestAClientOnASkewedMachineSchedulesByTheServersClock(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c := serverclock.New(timeOf(v.rdb), skewedClock(10*time.Minute), testLogger())
	en := &enqueuer{jq: testStore(v.rdb, v.keys, ""), now: c.Now, fresh: c.FreshForClient, maxRetries: DefaultMaxRetries}
	ctx := context.Background()
	before := v.serverTime()
	_, err := en.enqueueIn(ctx, "q", "W", 20*time.Second, nil, nil)
	require.NoError(t, err)
	after := v.serverTime()
	at := before.Add(time.Hour).Truncate(time.Second)
	_, err = en.enqueueAt(ctx, "enqueue at", "q", "W", at, nil, nil)
	require.NoError(t, err)
	zs := v.zset(v.keys.Schedule())
	require.Len(t, zs, 2)
	in := time.UnixMicro(int64(zs[0].Score * 1e6))
	assert.False(t, in.Before(before.Add(20*time.Second-50*time.Millisecond)) || in.After(after.Add(20*time.Second+50*time.Millisecond)),
		"EnqueueIn(20s) due at %s, called between %s and %s", in, before, after)
	assert.Equal(t, float64(at.Unix()), zs[1].Score, "EnqueueAt keeps its instant")
}
