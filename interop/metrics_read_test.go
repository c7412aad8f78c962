package interop_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// exq's API.Metrics (the dashboard's Metrics page, `exq metrics`) reads the runs a Sidekiq 7
// process wrote in its own layout beside exq's, which exq writes in Sidekiq 7's and 8's: a
// class run by both counts every run once, a class only Sidekiq ran counts too, and the
// histogram of a class holds both sides' runs in their buckets.
func TestAPIMetricsReadSidekiqsRunsBesideExqs(t *testing.T) {
	p := newPeer(t)
	p.needSidekiq(7)
	ctx := context.Background()
	record := filepath.Join(t.TempDir(), "performed.jsonl")
	sk := p.startSidekiq("QUEUE=ruby", "CONCURRENCY=2", "RECORD_FILE="+record)
	defer sk.stop()
	e := p.startExq(exq.Options{
		Queues: []exq.Queue{{Name: "default", Concurrency: 5}},
		Workers: map[string]exq.Worker{
			"SlowJob": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }), // under 20 ms on the Go side
			"GoMetricsFail": exq.WorkerFunc(func(context.Context, *exq.Job) error {
				return &flakyError{"GoMetricsFail failed on purpose"}
			}),
		},
	})
	for i := range 4 { // Sidekiq sleeps 50 ms: a bucket from 45 ms up
		_, err := e.Enqueue(ctx, "ruby", "SlowJob", []any{0.05, i})
		require.NoError(t, err)
	}
	for i := range 3 {
		_, err := e.Enqueue(ctx, "ruby", "RecordJob", []any{i})
		require.NoError(t, err)
	}
	for i := range 5 {
		_, err := e.Enqueue(ctx, "default", "SlowJob", []any{0, i})
		require.NoError(t, err)
	}
	for i := range 2 {
		_, err := e.Enqueue(ctx, "default", "GoMetricsFail", []any{i}, exq.MaxRetries(0))
		require.NoError(t, err)
	}
	api := e.API()
	var m exq.Metrics
	waitFor(t, "Sidekiq's and exq's runs in API.Metrics (Sidekiq flushes its metrics every 10 s)", func() (bool, string) {
		var err error
		if m, err = api.Metrics(ctx, exq.MetricsOptions{}); err != nil {
			return false, err.Error()
		}
		return m.Total == 3 && m.Classes[0].Runs+m.Classes[1].Runs+m.Classes[2].Runs == 14, fmt.Sprintf("%+v", m.Classes)
	})
	recs, err := readRecords(record)
	require.NoError(t, err)
	assert.Len(t, recs, 7, "Sidekiq ran its seven jobs")
	byClass := map[string]exq.ClassMetrics{}
	for _, c := range m.Classes {
		byClass[c.Class] = c
	}
	slow, rec, fail := byClass["SlowJob"], byClass["RecordJob"], byClass["GoMetricsFail"]
	assert.Equal(t, [3]int64{9, 0, 9}, [3]int64{slow.Runs, slow.Failed, slow.Succeeded}, "4 on Sidekiq, 5 on exq, each once")
	assert.GreaterOrEqual(t, slow.TotalMS, int64(4*50), "Sidekiq's four sleeps of 50 ms")
	assert.Equal(t, [3]int64{3, 0, 3}, [3]int64{rec.Runs, rec.Failed, rec.Succeeded}, "only Sidekiq ran it")
	assert.Equal(t, [3]int64{2, 2, 0}, [3]int64{fail.Runs, fail.Failed, fail.Succeeded})
	assert.Equal(t, "SlowJob", m.Classes[0].Class, "the most time first")

	one, err := api.Metrics(ctx, exq.MetricsOptions{Class: "SlowJob", Window: 10 * time.Minute})
	require.NoError(t, err)
	require.Len(t, one.Classes, 1)
	var quick, slower int64
	for i, b := range one.Classes[0].Histogram {
		if i < 3 { // under 45 ms
			quick += b.Runs
		} else {
			slower += b.Runs
		}
	}
	assert.Equal(t, [2]int64{5, 4}, [2]int64{quick, slower}, "exq's five quick runs and Sidekiq's four of 50 ms: %+v", one.Classes[0].Histogram)
	t.Logf("Sidekiq %s and exq: %+v; SlowJob histogram %+v", sidekiqVersion, m.Classes, one.Classes[0].Histogram)
}
