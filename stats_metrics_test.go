package exq

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// histogram reads a histogram as Sidekiq's Histogram#fetch does (metrics/shared.rb FETCH:
// BITFIELD_RO key GET u16 #0 … GET u16 #25).
func (v *env) histogram(key string) []int64 {
	v.t.Helper()
	args := []any{"BITFIELD_RO", key}
	for i := range wire.MetricBuckets {
		args = append(args, "GET", "u16", "#"+strconv.Itoa(i))
	}
	got, err := v.rdb.Do(context.Background(), args...).Int64Slice()
	require.NoError(v.t, err)
	return got
}

// The run metrics land under exactly the keys, fields, encodings and TTLs Sidekiq 7.3 and 8.1
// write (and their metrics/query.rb reads) for the same runs:
//   - Sidekiq 7.3.10 tracking.rb:66 "j|%Y%m%d|%-H:%-M", HINCRBY "<class>|p", "|f", "|ms"
//     (tracking.rb:90), TTL SHORT_TERM 8 h (tracking.rb:55); p counts every run, f the failed
//     ones, ms only the successful ones (track and track_time, tracking.rb:21-48, 103-108);
//   - Sidekiq 8.1.7 tracking.rb:68 "j|%y%m%d|%-H:%M" (8 h) and tracking.rb:66 the ten-minute
//     key, the same without its last digit (MID_TERM 3 days, tracking.rb:54);
//   - histograms: 7.3.10 shared.rb:92-93 "<class>-%d-%H:%-M", 8.1.7 shared.rb:95-96
//     "h|<class>-%-d-%-H:%-M"; BITFIELD key OVERFLOW SAT INCRBY u16 #<bucket> <n>
//     (Histogram#persist), the bucket the first BUCKET_INTERVALS bound above the run's ms
//     (Histogram#record_time), TTL HISTOGRAM_TTL 8 h.
func TestRunMetricsAreWrittenAsSidekiq7And8WriteThem(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 9, 5, 30, 0, time.UTC)
	later := time.Date(2026, 12, 1, 9, 6, 10, 0, time.UTC)
	jq := store.New(v.rdb, store.Config{Namespace: v.ns, Node: "metrics-node"})
	st := newStats(jq, time.Second, func() time.Time { return later }, slog.New(slog.DiscardHandler), false, false)
	st.RecordRun(true, at, "HardJob", 25*time.Millisecond)          // bucket 1 (20 ≤ 25 < 30)
	st.RecordRun(true, at, "HardJob", 150*time.Millisecond)         // bucket 6 (150 ≤ 150 < 225)
	st.RecordRun(false, at, "HardJob", 10*time.Millisecond)         // a failure: p and f, no time
	st.RecordRun(true, at, "Slow", 400*time.Second)                 // bucket 25, "Slow"
	st.RecordRun(true, later, "HardJob", 19*time.Millisecond)       // next minute, bucket 0
	st.RecordRun(true, at.In(time.FixedZone("x", 3600)), "Zone", 0) // keys are UTC
	require.NoError(t, st.Flush(ctx))

	p := v.ns + ":"
	for key, want := range map[string]map[string]string{
		p + "j|20261201|9:5": {"HardJob|p": "3", "HardJob|f": "1", "HardJob|ms": "175", "Slow|p": "1", "Slow|ms": "400000", "Zone|p": "1", "Zone|ms": "0"},
		p + "j|20261201|9:6": {"HardJob|p": "1", "HardJob|ms": "19"},
		p + "j|261201|9:05":  {"HardJob|p": "3", "HardJob|f": "1", "HardJob|ms": "175", "Slow|p": "1", "Slow|ms": "400000", "Zone|p": "1", "Zone|ms": "0"},
		p + "j|261201|9:06":  {"HardJob|p": "1", "HardJob|ms": "19"},
		p + "j|261201|9:0":   {"HardJob|p": "4", "HardJob|f": "1", "HardJob|ms": "194", "Slow|p": "1", "Slow|ms": "400000", "Zone|p": "1", "Zone|ms": "0"},
	} {
		assert.Equal(t, want, v.hash(key), key)
		ttl := v.rdb.TTL(ctx, key).Val()
		wantTTL := 8 * time.Hour
		if strings.HasSuffix(key, ":0") {
			wantTTL = 3 * 24 * time.Hour
		}
		assert.InDelta(t, wantTTL.Seconds(), ttl.Seconds(), 60, key)
	}
	bucketsOf := func(set map[int]int64) []int64 {
		b := make([]int64, wire.MetricBuckets)
		for i, n := range set {
			b[i] = n
		}
		return b
	}
	for key, want := range map[string][]int64{
		p + "HardJob-01-09:5": bucketsOf(map[int]int64{1: 1, 6: 1}),
		p + "h|HardJob-1-9:5": bucketsOf(map[int]int64{1: 1, 6: 1}),
		p + "HardJob-01-09:6": bucketsOf(map[int]int64{0: 1}),
		p + "h|HardJob-1-9:6": bucketsOf(map[int]int64{0: 1}),
		p + "Slow-01-09:5":    bucketsOf(map[int]int64{25: 1}),
		p + "h|Slow-1-9:5":    bucketsOf(map[int]int64{25: 1}),
		p + "Zone-01-09:5":    bucketsOf(map[int]int64{0: 1}),
	} {
		assert.Equal(t, want, v.histogram(key), key)
		assert.InDelta(t, (8 * time.Hour).Seconds(), v.rdb.TTL(ctx, key).Val().Seconds(), 60, key)
	}
	// Bit layout: bucket i is the big-endian u16 at byte 2i (BITFIELD's "#i").
	raw, err := v.rdb.Get(ctx, p+"HardJob-01-09:5").Bytes()
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, raw)
}

// A batch sent again after a lost reply adds its metrics once; a u16 bucket saturates at 65535
// rather than wrapping (OVERFLOW SAT).
func TestRunMetricsOfABatchSentTwiceCountOnceAndBucketsSaturate(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 9, 5, 30, 0, time.UTC)
	jq := store.New(v.rdb, store.Config{Namespace: v.ns, Node: "metrics-node"})
	st := newStats(jq, time.Second, func() time.Time { return at }, slog.New(slog.DiscardHandler), false, false)
	st.RecordRun(true, at, "HardJob", time.Millisecond)
	b := &statBatch{id: "b1", counts: map[statKey]int64{}, runs: st.runs}
	require.NoError(t, st.send(ctx, b))
	require.NoError(t, st.send(ctx, b))
	assert.Equal(t, "1", v.hash(v.ns + ":j|20261201|9:5")["HardJob|p"])
	b.runs[store.MetricKey{Minute: at.Unix() / 60, Class: "HardJob"}].Hist[0] = 70000
	b.id = "b2"
	require.NoError(t, st.send(ctx, b))
	assert.Equal(t, int64(65535), v.histogram(v.ns + ":HardJob-01-09:5")[0])
}
