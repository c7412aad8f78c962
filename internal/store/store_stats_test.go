package store

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/wire"
)

// Per-method tests of the counters' flush: Exq's counters and Sidekiq 7 and 8's per-class
// metrics, once per batch id, in the layout their UIs read.

func TestFlushStatsWritesCountersWithTheirTTLsAndTheMarker(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	at := time.Date(2026, 12, 1, 10, 11, 12, 0, time.UTC)
	require.NoError(t, jq.FlushStats(ctx(t), "b1", time.Hour, []StatCount{
		{Name: "processed", Span: 't', N: 2},
		{Name: "processed", Span: 'd', At: at, N: 2, TTL: 5 * 365 * 24 * time.Hour},
		{Name: "failed", Span: 's', At: at, N: 1, TTL: 120 * time.Second},
	}, nil, at))
	assert.Equal(t, map[string]string{"stat:processed": "string", "stat:processed:2026-12-01": "string",
		"stat:failed_rt:2026-12-01 10:11:12Z": "string", "stat_flush:n1": "string"}, v.layout())
	assert.Equal(t, "b1", v.rdb.Get(ctx(t), v.p("stat_flush:n1")).Val())
	for key, max := range map[string]time.Duration{
		"stat:processed": -1, "stat:processed:2026-12-01": 5 * 365 * 24 * time.Hour,
		"stat:failed_rt:2026-12-01 10:11:12Z": 120 * time.Second, "stat_flush:n1": time.Hour,
	} {
		ttl := v.rdb.TTL(ctx(t), v.p(key)).Val()
		if max < 0 {
			assert.Equal(t, time.Duration(-1), ttl, "%s has no TTL", key)
			continue
		}
		assert.Greater(t, ttl, time.Duration(0), key)
		assert.LessOrEqual(t, ttl, max, key)
	}

	require.NoError(t, jq.FlushStats(ctx(t), "b2", time.Hour, []StatCount{{Name: "processed", Span: 't', N: 1}}, nil, at))
	assert.Equal(t, "3", v.rdb.Get(ctx(t), v.p("stat:processed")).Val(), "another batch counts")
	require.NoError(t, jq.FlushStats(ctx(t), "b2", time.Hour, []StatCount{{Name: "processed", Span: 't', N: 1}}, nil, at))
	assert.Equal(t, "3", v.rdb.Get(ctx(t), v.p("stat:processed")).Val(), "the same batch again does not")

	require.NoError(t, v.rdb.Set(ctx(t), v.p("stat:failed"), "not a number", 0).Err())
	err := jq.FlushStats(ctx(t), "b3", time.Hour, []StatCount{{Name: "failed", Span: 't', N: 1}}, nil, at)
	assert.Error(t, err, "INCRBY of a key that holds no number")
}

func TestFlushStatsWritesSidekiqMetricsHashesAndHistograms(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	now := time.Date(2026, 12, 1, 9, 5, 30, 0, time.UTC)
	minute := now.Unix() / 60
	var hist [wire.MetricBuckets]int64
	hist[0], hist[3] = 2, 1
	runs := map[MetricKey]*MinuteRuns{
		{Minute: minute, Class: "Hard"}:              {Runs: 4, Failed: 1, MS: 120, Hist: hist},
		{Minute: minute, Class: "Broken"}:            {Runs: 2, Failed: 2},
		{Minute: minute - 9*60, Class: "Hard"}:       {Runs: 1, MS: 5, Hist: hist}, // 9 h ago: the rollup only
		{Minute: minute - 4*24*60, Class: "Ancient"}: {Runs: 1},                    // past every TTL: left out
	}
	require.NoError(t, jq.FlushStats(ctx(t), "b1", time.Hour, nil, runs, now))

	layout := v.layout()
	for _, key := range []string{"j|20261201|9:5", "j|261201|9:05", "j|261201|9:0", "j|261201|0:0"} {
		assert.Equal(t, "hash", layout[key], key)
	}
	for _, key := range []string{"Hard-01-09:5", "h|Hard-1-9:5"} {
		assert.Equal(t, "string", layout[key], key)
	}
	assert.NotContains(t, layout, "Broken-01-09:5", "no successful run: no histogram")
	assert.Len(t, layout, 7, "%v", layout)

	want := map[string]string{"Hard|p": "4", "Hard|f": "1", "Hard|ms": "120", "Broken|p": "2", "Broken|f": "2"}
	assert.Equal(t, want, v.hash(v.p("j|20261201|9:5")))
	assert.Equal(t, want, v.hash(v.p("j|261201|9:05")))
	assert.Equal(t, map[string]string{"Hard|p": "1", "Hard|ms": "5"}, v.hash(v.p("j|261201|0:0")))
	raw, err := v.rdb.Get(ctx(t), v.p("h|Hard-1-9:5")).Bytes()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(raw), 8)
	assert.Equal(t, uint16(2), binary.BigEndian.Uint16(raw[0:2]), "bucket 0: u16 at bit 0")
	assert.Equal(t, uint16(1), binary.BigEndian.Uint16(raw[6:8]), "bucket 3: u16 at bit 48")
	ttl := v.rdb.TTL(ctx(t), v.p("j|20261201|9:5")).Val()
	assert.LessOrEqual(t, ttl, wire.MetricsTTL)
	assert.Greater(t, ttl, wire.MetricsTTL-time.Minute)
}
