package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// exq metrics shows the runs a node made, per class, as a table and as JSON; --class adds
// the class's histogram.
func TestMetricsShowsTheRunsOfANode(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	e, err := exq.Start(ctx, exq.Options{RedisURL: c.url, Namespace: c.ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollTimeout: 20 * time.Millisecond,
		Workers: map[string]exq.Worker{
			"CLI.Mail": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
			"CLI.Fail": exq.WorkerFunc(func(context.Context, *exq.Job) error { return errors.New("no") }),
		}})
	require.NoError(t, err)
	defer e.Stop(context.Background())
	for i := range 3 {
		_, err := e.Enqueue(ctx, "default", "CLI.Mail", []any{i})
		require.NoError(t, err)
	}
	_, err = e.Enqueue(ctx, "default", "CLI.Fail", nil, exq.MaxRetries(0))
	require.NoError(t, err)
	var m metricsJSON
	testutil.WaitFor(t, "the runs are in the metrics", func() bool {
		c.json(&m, "metrics")
		return m.Total == 2 && m.Classes[0].Runs+m.Classes[1].Runs == 4
	})
	byClass := map[string]classMetricsJSON{}
	for _, cl := range m.Classes {
		byClass[cl.Class] = cl
	}
	assert.Equal(t, [3]int64{3, 0, 3}, [3]int64{byClass["CLI.Mail"].Runs, byClass["CLI.Mail"].Failed, byClass["CLI.Mail"].Succeeded})
	assert.Equal(t, [3]int64{1, 1, 0}, [3]int64{byClass["CLI.Fail"].Runs, byClass["CLI.Fail"].Failed, byClass["CLI.Fail"].Succeeded})
	assert.Equal(t, time.Hour, m.To.Sub(m.From))
	var v any
	c.json(&v, "metrics", "--class", "CLI.Mail", "--minutes", "30")
	checkSchema(t, "metrics", v)

	code, out, errOut := c.run("metrics", "--hours", "8")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^CLASS\s+RUNS\s+FAILED\s+SUCCEEDED\s+TOTAL\s+MEAN$`, out)
	assert.Regexp(t, `(?m)^CLI\.Mail\s+3\s+0\s+3\s+\S+ms\s+\S+ms$`, out)
	assert.Regexp(t, `(?m)^CLI\.Fail\s+1\s+1\s+0\s+0ms\s+-$`, out)

	var one metricsJSON
	c.json(&one, "metrics", "--class", "CLI.Mail")
	require.Len(t, one.Classes, 1)
	require.Len(t, one.Classes[0].Histogram, wire.MetricBuckets)
	assert.Equal(t, int64(3), one.Classes[0].Histogram[0].Runs, "three quick runs, under 20 ms")
	code, out, errOut = c.run("metrics", "--class", "CLI.Mail")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^0ms-20ms\s+3\s+#{40}$`, out)
	assert.Regexp(t, `(?m)^5\.6m or more\s+0\s*$`, out)

	code, out, _ = c.run("metrics", "--limit", "1")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "1 of 2 classes")
}

// Hostile stored metrics: escapes from Redis never reach the terminal, values that are not
// counts are left out with a warning, huge ones keep --json valid.
func TestMetricsSurviveHostileStoredValues(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	now, err := c.rdb.Time(ctx).Result()
	require.NoError(t, err)
	keys := wire.NewKeys(c.ns)
	require.NoError(t, c.rdb.HSet(ctx, keys.Metrics7(now), "Red\x1b[31m|p", "2", "Red\x1b[31m|ms", "99999999999999999999999",
		"Nan|p", "NaN", "Line\nBreak|p", "1").Err())
	require.NoError(t, c.rdb.Set(ctx, keys.Metrics8(now), "a string", 0).Err())
	code, out, errOut := c.run("metrics")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "\x1b")
	assert.Contains(t, errOut, "1 stored value(s) were not counts")
	assert.Equal(t, 2+2, strings.Count(out, "\n"), "the range, the header and two rows: a line break in a name does not add one")
	var m metricsJSON
	c.json(&m, "metrics")
	require.Len(t, m.Classes, 2)
	assert.Equal(t, "Red\x1b[31m", m.Classes[0].Class, "--json keeps the name as stored, escaped by JSON")
	assert.Equal(t, int64(math.MaxInt64), m.Classes[0].TotalMS)
	assert.Equal(t, 1, m.Invalid)
	_, err = c.rdb.Get(ctx, keys.Metrics8(now)).Result()
	assert.NotEqual(t, redis.Nil, err, "the read left the key of another type alone")
}

// Bad flags are usage errors (exit 2) that name the flag, before anything is read.
func TestMetricsRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--minutes", "0"}, "--minutes must be 1 to 480"},
		{[]string{"--minutes", "481"}, "--minutes must be 1 to 480"},
		{[]string{"--hours", "9"}, "--hours must be 1 to 8"},
		{[]string{"--hours", "1", "--minutes", "5"}, "not both"},
		{[]string{"--limit", "0"}, "--limit must be 1 to 1000"},
		{[]string{"--class", ""}, "--class must name a class"},
		{[]string{"--class", strings.Repeat("x", 1025)}, "Class is 1025 bytes long"},
		{[]string{"--class", "a\tb"}, "control character"},
		{[]string{"extra"}, "no argument"},
		{[]string{"-n", "a,b"}, "one namespace"},
	} {
		r := runBin(t, exqBin, "redis://127.0.0.1:1/0", append([]string{"metrics"}, tc.args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", tc.args, r.errOut)
		assert.Contains(t, r.errOut, tc.want, "%v", tc.args)
	}
}
