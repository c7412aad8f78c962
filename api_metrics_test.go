package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// metricsOf is the row of class in m, failing the test when there is none.
func metricsOf(t *testing.T, m Metrics, class string) ClassMetrics {
	t.Helper()
	for _, c := range m.Classes {
		if c.Class == class {
			return c
		}
	}
	t.Fatalf("no metrics for %q in %+v", class, m.Classes)
	return ClassMetrics{}
}

// snapshot is every key of the env's namespace with its serialized value and TTL: what a read
// must leave as it was (with no node running, which writes all the time).
func (v *env) snapshot() map[string]string {
	v.t.Helper()
	ctx := context.Background()
	keys, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(v.t, err)
	out := map[string]string{}
	for _, k := range keys {
		d, err := v.rdb.Dump(ctx, k).Result()
		require.NoError(v.t, err)
		ttl, err := v.rdb.PTTL(ctx, k).Result()
		require.NoError(v.t, err)
		out[k] = fmt.Sprintf("%x %v", d, ttl.Round(time.Hour))
	}
	return out
}

// Jobs run through a node show in API.Metrics with the counts the node ran: runs, failures,
// the time of the successful ones and their histogram.
func TestAPIMetricsCountTheRunsOfANode(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	ok := &recorder{}
	slow := &recorder{fn: func(ctx context.Context, _ *Job) error {
		time.Sleep(25 * time.Millisecond) // the run's own work: its time is what is measured
		return nil
	}}
	failing := &recorder{fn: func(context.Context, *Job) error { return errors.New("boom") }}
	v.start(Options{Workers: map[string]Worker{"App.Fast": ok, "App.Slow": slow, "App.Fail": failing}},
		testHooks{statsInterval: 20 * time.Millisecond})
	for i := range 5 {
		v.push("default", fmt.Sprintf(`{"class":"App.Fast","args":[%d],"queue":"default","jid":"fast-%d"}`, i, i))
	}
	for i := range 2 {
		v.push("default", fmt.Sprintf(`{"class":"App.Slow","args":[%d],"queue":"default","jid":"slow-%d"}`, i, i))
	}
	for i := range 3 {
		v.push("default", fmt.Sprintf(`{"class":"App.Fail","args":[%d],"queue":"default","jid":"fail-%d","retry":false}`, i, i))
	}
	a, _ := v.api()
	testutil.WaitFor(t, "all ten runs counted", func() bool {
		st, _ := a.Stats(ctx)
		return st.Processed == 7 && st.Failed == 3
	})
	m, err := a.Metrics(ctx, MetricsOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, m.Total)
	assert.Zero(t, m.Invalid)
	assert.False(t, m.Truncated)
	assert.Equal(t, time.Hour, m.To.Sub(m.From))
	fast, sl, fail := metricsOf(t, m, "App.Fast"), metricsOf(t, m, "App.Slow"), metricsOf(t, m, "App.Fail")
	assert.Equal(t, [3]int64{5, 0, 5}, [3]int64{fast.Runs, fast.Failed, fast.Succeeded})
	assert.Equal(t, [3]int64{2, 0, 2}, [3]int64{sl.Runs, sl.Failed, sl.Succeeded})
	assert.Equal(t, [4]int64{3, 3, 0, 0}, [4]int64{fail.Runs, fail.Failed, fail.Succeeded, fail.TotalMS})
	assert.Zero(t, fail.MeanMS)
	assert.GreaterOrEqual(t, sl.TotalMS, int64(50))
	assert.InDelta(t, float64(sl.TotalMS)/2, sl.MeanMS, 1e-9)
	assert.Equal(t, "App.Slow", m.Classes[0].Class, "the most time first")
	assert.Nil(t, fast.Histogram, "histograms only for one class")

	one, err := a.Metrics(ctx, MetricsOptions{Class: "App.Slow", Window: 10 * time.Minute})
	require.NoError(t, err)
	require.Len(t, one.Classes, 1)
	h := one.Classes[0].Histogram
	require.Len(t, h, wire.MetricBuckets)
	var runs int64
	for i, b := range h {
		runs += b.Runs
		if b.Runs > 0 {
			assert.GreaterOrEqual(t, b.UpToMS, int64(30), "a run of at least 25 ms counts in a bucket above 20-30 ms or in it")
		}
		if i < len(h)-1 {
			assert.Equal(t, wire.MetricBucketLimits[i], b.UpToMS)
		}
	}
	assert.Equal(t, int64(2), runs)
	assert.Zero(t, h[len(h)-1].UpToMS, "the last bucket is open")
}

// Stored values are untrusted: what is not a count is left out and counted in Invalid, a
// huge one saturates, a key of another type reads as empty, the minutes that both layouts
// hold count once, and the result stays valid JSON; the read writes nothing.
func TestAPIMetricsSurviveHostileStoredValues(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	at := v.serverTime().Add(-5 * time.Minute)
	prev := at.Add(-time.Minute)
	huge := "99999999999999999999999"
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Metrics7(at),
		"Evil|p", "NaN", "Evil|f", "-5", "Evil|ms", "abc", // three values that are not counts
		"Huge|p", huge, "Huge|ms", "1e300",
		"Both|p", "3", "Both|ms", "30",
		"Odd|p", "1", "Odd|f", "5", "Odd|ms", "-Inf", // more failures than runs
		"<script>alert(1)</script>|p", "2", "<script>alert(1)</script>|ms", "7.9",
		"NoBar", "7", "Other|x", "1").Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Metrics8(at), "Both|p", "3", "Both|ms", "30", "Only8|p", "2", "Only8|ms", "4").Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Metrics7(prev), "Huge|p", huge, "Huge|ms", huge).Err())
	require.NoError(t, v.rdb.RPush(ctx, v.keys.Metrics8(prev), "not a hash").Err())
	// Histograms: one full bucket, one under a key of another type, one for the other layout.
	require.NoError(t, v.rdb.BitField(ctx, v.keys.Histogram7("Huge", at), "SET", "u16", "#0", 65535, "SET", "u16", "#25", 9).Err())
	require.NoError(t, v.rdb.BitField(ctx, v.keys.Histogram8("Huge", prev), "SET", "u16", "#3", 4).Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Histogram7("Huge", prev), "x", "y").Err())

	a, _ := v.api()
	before := v.snapshot()
	m, err := a.Metrics(ctx, MetricsOptions{})
	require.NoError(t, err)
	assert.Equal(t, 4, m.Invalid, "NaN, -5, abc, -Inf")
	assert.Equal(t, 5, m.Total, "Huge, Both, Odd, Only8, <script>: %+v", m.Classes)
	hg := metricsOf(t, m, "Huge")
	assert.Equal(t, int64(math.MaxInt64), hg.Runs)
	assert.Equal(t, int64(math.MaxInt64), hg.TotalMS)
	assert.False(t, math.IsNaN(hg.MeanMS) || math.IsInf(hg.MeanMS, 0))
	both := metricsOf(t, m, "Both")
	assert.Equal(t, [2]int64{3, 30}, [2]int64{both.Runs, both.TotalMS}, "written under both names, counted once")
	assert.Equal(t, int64(2), metricsOf(t, m, "Only8").Runs)
	odd := metricsOf(t, m, "Odd")
	assert.Equal(t, [3]int64{1, 5, 0}, [3]int64{odd.Runs, odd.Failed, odd.Succeeded})
	assert.Zero(t, odd.MeanMS)
	assert.Equal(t, int64(7), metricsOf(t, m, "<script>alert(1)</script>").TotalMS, "a float is cut to a count")
	_, err = json.Marshal(m)
	require.NoError(t, err)

	one, err := a.Metrics(ctx, MetricsOptions{Class: "Huge"})
	require.NoError(t, err)
	require.Len(t, one.Classes, 1)
	assert.Equal(t, 1, one.Total)
	h := one.Classes[0].Histogram
	assert.Equal(t, [3]int64{65535, 4, 9}, [3]int64{h[0].Runs, h[3].Runs, h[25].Runs})
	// A class that never ran: its row, empty.
	none, err := a.Metrics(ctx, MetricsOptions{Class: "Never"})
	require.NoError(t, err)
	require.Len(t, none.Classes, 1)
	assert.Zero(t, none.Total)
	assert.Zero(t, none.Classes[0].Runs)
	assert.Equal(t, before, v.snapshot(), "a read changed Redis")
}

// A minute's hash grown huge is read in part, and says so; Top cuts the classes returned but
// not Total.
func TestAPIMetricsBoundTheRead(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	at := v.serverTime()
	fields := make([]any, 0, 2*5000)
	for i := range 5000 {
		fields = append(fields, fmt.Sprintf("C%04d|p", i), i+1)
	}
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Metrics7(at), fields...).Err())
	a, _ := v.api()
	m, err := a.Metrics(ctx, MetricsOptions{Top: 3, Window: time.Minute})
	require.NoError(t, err)
	assert.True(t, m.Truncated)
	assert.Less(t, m.Total, 5000)
	assert.Greater(t, m.Total, 500)
	assert.Len(t, m.Classes, 3)
}

// More classes than a read keeps in memory: the first ones are kept, and Truncated says so.
func TestAPIMetricsKeepABoundedNumberOfClasses(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	at := v.serverTime()
	for m := range 24 { // 24 minutes of 500 classes each: 12 000 in all
		fields := make([]any, 0, 2*500)
		for i := range 500 {
			fields = append(fields, fmt.Sprintf("M%02dC%03d|p", m, i), 1)
		}
		require.NoError(t, v.rdb.HSet(ctx, v.keys.Metrics7(at.Add(-time.Duration(m)*time.Minute)), fields...).Err())
	}
	a, _ := v.api()
	m, err := a.Metrics(ctx, MetricsOptions{Window: time.Hour, Top: MetricsMaxTop})
	require.NoError(t, err)
	assert.True(t, m.Truncated)
	assert.Equal(t, metricsMaxClasses, m.Total)
	assert.Len(t, m.Classes, MetricsMaxTop)
}

// Options out of range are refused with ErrInvalidMetricsOptions naming the field, before any
// read.
func TestAPIMetricsRefuseBadOptions(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	a, _ := v.api()
	for _, c := range []struct {
		name string
		o    MetricsOptions
		want string
	}{
		{"negative window", MetricsOptions{Window: -time.Minute}, "Window"},
		{"window under a minute", MetricsOptions{Window: 30 * time.Second}, "Window"},
		{"window past the keys' life", MetricsOptions{Window: 9 * time.Hour}, "Window"},
		{"negative top", MetricsOptions{Top: -1}, "Top"},
		{"top too large", MetricsOptions{Top: MetricsMaxTop + 1}, "Top"},
		{"class too long", MetricsOptions{Class: strings.Repeat("x", MetricsMaxClassBytes+1)}, "Class"},
		{"class with a line break", MetricsOptions{Class: "A\nB"}, "Class"},
		{"class not UTF-8", MetricsOptions{Class: "A\xff"}, "Class"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := a.Metrics(context.Background(), c.o)
			require.ErrorIs(t, err, ErrInvalidMetricsOptions)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), "exq: "), err.Error())
		})
	}
}
