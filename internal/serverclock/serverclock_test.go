package serverclock

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// A process whose clock is an hour behind still reads the Redis server's time.
func TestNowIsTheServersTimeWhateverTheLocalClockSays(t *testing.T) {
	t.Parallel()
	rdb, _ := testutil.Redis(t)
	behind := func() time.Time { return time.Now().Add(-time.Hour) }
	logs := &testutil.LogBuffer{}
	read := func(c context.Context) (time.Time, error) { return rdb.Time(c).Result() }
	c := New(read, behind, slog.New(slog.NewTextHandler(logs, nil)))
	assert.WithinDuration(t, behind(), c.Now(), time.Minute, "before the first sample: the local clock")

	require.NoError(t, c.Sync(ctx(t)))
	server, err := rdb.Time(ctx(t)).Result()
	require.NoError(t, err)
	assert.WithinDuration(t, server, c.Now(), 5*time.Second)
	assert.Contains(t, logs.String(), "differs from the Redis server's", "a skew of an hour is logged")
	// The skew is measured against the middle of the round trip, so it reads about an hour:
	// 59m59.999s as well as 1h0m0.001s.
	m := regexp.MustCompile(`server_minus_local=(\S+)`).FindStringSubmatch(logs.String())
	require.Len(t, m, 2, logs.String())
	skew, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	assert.InDelta(t, time.Hour.Seconds(), skew.Seconds(), 1, "the skew logged: %s", m[1])

	young, sampled := c.Young(time.Minute)
	assert.True(t, young)
	assert.True(t, sampled)
}

func TestSyncKeepsTheSampleInHandAfterAStalledRoundTrip(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var local atomic.Int64 // nanoseconds after base
	now := func() time.Time { return base.Add(time.Duration(local.Load())) }
	server := base.Add(10 * time.Second)
	stall := time.Duration(0)
	read := func(context.Context) (time.Time, error) {
		local.Add(int64(stall))
		return server, nil
	}
	c := New(read, now, nil)
	require.NoError(t, c.Sync(ctx(t)))
	assert.Equal(t, server, c.Now())

	stall, server = 2*time.Second, base.Add(time.Hour)
	require.NoError(t, c.Sync(ctx(t)))
	assert.Equal(t, base.Add(10*time.Second+2*time.Second), c.Now(), "a round trip over a second: the old sample, moved on by local time")

	stall = 10 * time.Millisecond
	require.NoError(t, c.Sync(ctx(t)))
	assert.Equal(t, base.Add(time.Hour+5*time.Millisecond), c.Now(), "sampled halfway through the round trip")
}

func TestFreshSamplesOnlyWhenTheSampleIsOldOrMissing(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var local atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(local.Load())) }
	var reads atomic.Int32
	fail := errors.New("down")
	var failing atomic.Bool
	read := func(context.Context) (time.Time, error) {
		reads.Add(1)
		if failing.Load() {
			return time.Time{}, fail
		}
		return now(), nil
	}
	c := New(read, now, nil)

	failing.Store(true)
	assert.ErrorIs(t, c.FreshForClient(ctx(t)), fail, "no sample and no TIME: an error")
	failing.Store(false)
	require.NoError(t, c.FreshForClient(ctx(t)))
	require.NoError(t, c.FreshForClient(ctx(t)))
	assert.EqualValues(t, 2, reads.Load(), "a young sample is used as it is")

	local.Add(int64(2 * time.Minute))
	failing.Store(true)
	assert.NoError(t, c.FreshForClient(ctx(t)), "an old sample still reads the server's clock well")
	assert.EqualValues(t, 3, reads.Load())

	done, cancel := context.WithCancel(context.Background())
	cancel()
	c.syncing <- struct{}{} // another call is taking a sample
	assert.ErrorIs(t, c.Fresh(done, time.Second), context.Canceled)
	<-c.syncing
}

func TestRunSamplesUntilItsContextEndsAndWarnsOnceWhileFailing(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	read := func(context.Context) (time.Time, error) {
		reads.Add(1)
		if failing.Load() {
			return time.Time{}, errors.New("down")
		}
		return time.Now(), nil
	}
	logs := &testutil.LogBuffer{}
	c := New(read, nil, slog.New(slog.NewTextHandler(logs, nil)))
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(runCtx, time.Millisecond, time.Second)
	}()
	testutil.WaitFor(t, "several failed samples", func() bool { return reads.Load() >= 5 })
	failing.Store(false)
	testutil.WaitFor(t, "a sample", func() bool { _, sampled := c.Young(time.Hour); return sampled })
	stop()
	<-done
	assert.Equal(t, 1, bytes.Count([]byte(logs.String()), []byte("reading the Redis server's clock failed")), "one warning per failing spell")
}
