package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

var (
	// metricsRow is a class's row on the Metrics tab (7.3 web/views/metrics.erb): its link, then
	// successes and failures.
	metricsRow = func(class string) *regexp.Regexp {
		return regexp.MustCompile(`<code><a href="[^"]*metrics/` + regexp.QuoteMeta(class) + `[^"]*">` + regexp.QuoteMeta(class) +
			`</a></code>\s*</div>\s*</td>\s*<td class="num">(?:<span[^>]*>)?(\d+)(?:</span>)?</td>\s*<td class="num">(?:<span[^>]*>)?(\d+)(?:</span>)?</td>`)
	}
	histTotals = regexp.MustCompile(`(?s)<canvas id="hist-totals-chart">(.*?)</canvas>`)
)

// Sidekiq 7's Metrics tab (Sidekiq 6 has none) lists exq's job classes with their successes
// and failures, read from the j|… hashes exq writes with its counters, and a class's page shows
// the run-time histogram exq writes (BITFIELD u16 buckets).
func TestSidekiqWebUIMetricsShowExqClasses(t *testing.T) {
	p := newPeer(t)
	p.needSidekiq(7)
	ctx := context.Background()
	e := p.startExq(exq.Options{
		Queues: []exq.Queue{{Name: "default", Concurrency: 5}},
		Workers: map[string]exq.Worker{
			// Time spent: the class page draws its histogram only for a class with some.
			"GoMetricsOK":   exq.WorkerFunc(func(context.Context, *exq.Job) error { time.Sleep(25 * time.Millisecond); return nil }),
			"GoMetricsFail": exq.WorkerFunc(func(context.Context, *exq.Job) error { return &flakyError{"GoMetricsFail failed on purpose"} }),
		},
	})
	web := p.startWebUI()
	for i := 0; i < 5; i++ {
		_, err := e.Enqueue(ctx, "default", "GoMetricsOK", []any{i})
		require.NoError(t, err)
	}
	for i := 0; i < 2; i++ {
		_, err := e.Enqueue(ctx, "default", "GoMetricsFail", []any{i}, exq.MaxRetries(0))
		require.NoError(t, err)
	}
	var page string
	waitFor(t, "the Metrics tab to list both exq classes with their counts", func() (bool, string) {
		var err error
		page, err = web.get("/metrics")
		if err != nil {
			return false, err.Error()
		}
		ok, fail := metricsRow("GoMetricsOK").FindStringSubmatch(page), metricsRow("GoMetricsFail").FindStringSubmatch(page)
		return ok != nil && fail != nil && ok[1] == "5" && ok[2] == "0" && fail[1] == "0" && fail[2] == "2",
			fmt.Sprintf("GoMetricsOK %v, GoMetricsFail %v", ok, fail)
	})
	for _, class := range []string{"GoMetricsOK", "GoMetricsFail"} {
		t.Logf("Sidekiq %s /metrics row: %s", sidekiqVersion, strings.Join(strings.Fields(metricsRow(class).FindString(page)), " "))
	}

	job := web.mustGet("/metrics/GoMetricsOK")
	m := histTotals.FindStringSubmatch(job)
	require.NotNil(t, m, "the class page has its histogram")
	var chart struct {
		Series []int `json:"series"`
	}
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &chart), m[1])
	sum := 0
	for _, n := range chart.Series {
		sum += n
	}
	assert.Equal(t, 5, sum, "the histogram counts the five successful runs: %v", chart.Series)
	t.Logf("/metrics/GoMetricsOK hist-totals-chart: %s", strings.Join(strings.Fields(m[1]), " "))
}
