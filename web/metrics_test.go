package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// The Metrics page lists the classes a live node ran with their counts, and a class's
// histogram of run times as an SVG of bars; the nav marks it.
func TestMetricsPageShowsTheRunsOfANode(t *testing.T) {
	f := newFixture(t, Options{Prefix: "/admin/exq"})
	ctx := context.Background()
	node, err := exq.Start(ctx, exq.Options{Redis: f.client, Namespace: f.ns, Logger: quiet, PollTimeout: 20 * time.Millisecond,
		Workers: map[string]exq.Worker{
			"App.Mail": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
			"App.Fail": exq.WorkerFunc(func(context.Context, *exq.Job) error { return errors.New("no") }),
		}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, node.Stop(context.Background())) })
	for i := range 4 {
		_, err := node.Enqueue(ctx, "default", "App.Mail", []any{i})
		require.NoError(t, err)
	}
	_, err = node.Enqueue(ctx, "default", "App.Fail", []any{1}, exq.MaxRetries(0))
	require.NoError(t, err)
	testutil.WaitFor(t, "the runs are in the metrics", func() bool {
		m, _ := f.api.Metrics(ctx, exq.MetricsOptions{})
		return m.Total == 2 && m.Classes[0].Runs+m.Classes[1].Runs == 5
	})

	body := f.page("/metrics")
	assert.Contains(t, body, `href="/admin/exq/metrics" class="on">Metrics</a>`)
	row := regexp.MustCompile(`(?s)<tr>\s*<td><a href="\?class=App.Mail&amp;hours=1"><code>App.Mail</code></a></td>\s*<td class="n">4</td><td class="n">0</td><td class="n">4</td>`)
	assert.Regexp(t, row, body)
	assert.Regexp(t, regexp.MustCompile(`(?s)<code>App.Fail</code></a></td>\s*<td class="n">1</td><td class="n">1</td><td class="n">0</td><td class="n">0 ms</td><td class="n">–</td>`), body)
	assert.NotContains(t, body, `<svg class="histogram"`, "no class chosen: no histogram")

	one := f.page("/metrics?class=App.Mail&hours=8")
	assert.Contains(t, one, `<svg class="histogram"`)
	assert.Equal(t, 1, strings.Count(one, "<rect "), "four runs under 20 ms: one bar")
	assert.Contains(t, one, "<title>0 ms to 20 ms: 4 run(s)</title>")
	assert.Contains(t, one, `<a href="?class=App.Mail&amp;hours=8" class="on">8 h</a>`)
	assert.Contains(t, one, `<tr class="on">`)
}

// Hostile stored metrics: class names are escaped everywhere, values that are not counts are
// left out (and said so), huge ones do not break the page.
func TestMetricsPageEscapesAndBoundsStoredValues(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	now, err := f.rdb.Time(ctx).Result()
	require.NoError(t, err)
	const evil = `<img src=x onerror=alert(1)>"'`
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Metrics7(now),
		evil+"|p", "3", evil+"|ms", "99999999999999999999", "Bad|p", "NaN", "Neg|p", "-4", "Neg|ms", "5").Err())
	require.NoError(t, f.rdb.BitField(ctx, f.keys.Histogram7(evil, now), "SET", "u16", "#25", 65535).Err())
	for _, path := range []string{"/metrics", "/metrics?class=" + url.QueryEscape(evil)} {
		body := f.page(path)
		assert.NotContains(t, body, "<img", path)
		assert.Contains(t, body, "&lt;img src=x onerror=alert(1)&gt;&#34;&#39;", path)
		assert.Contains(t, body, "2 stored value(s) were not counts", path)
		assert.Contains(t, body, "2562047788015.2 h", "%s: the saturated total", path)
	}
	body := f.page("/metrics?class=" + url.QueryEscape(evil))
	assert.Contains(t, body, "<title>5.6 min or more: 65,535 run(s)</title>")
}

// Out-of-range input is refused with 400, naming it; an unknown window falls back to 1 h.
func TestMetricsPageRefusesBadInput(t *testing.T) {
	f := newFixture(t, Options{})
	code, body := f.get("/metrics?class=" + strings.Repeat("x", exq.MetricsMaxClassBytes+1))
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "Class is 1025 bytes long")
	code, body = f.get("/metrics?class=" + url.QueryEscape("a\x1bb"))
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "control character")
	body = f.page("/metrics?hours=9999")
	assert.Contains(t, body, `<a href="?hours=1" class="on">1 h</a>`)
	assert.Contains(t, body, "No runs in the last 1 h.")
}

func TestHistogramBarsScaleToTheFullestBucket(t *testing.T) {
	for _, c := range []struct {
		name    string
		runs    []int64
		heights []int
	}{
		{"empty", []int64{0, 0, 0}, []int{0, 0, 0}},
		{"one full", []int64{0, 10, 0}, []int{0, histPlotH, 0}},
		{"a tiny one still shows", []int64{1, 100000, 0}, []int{1, histPlotH, 0}},
		{"half", []int64{5, 10, 0}, []int{histPlotH / 2, histPlotH, 0}},
		{"negative reads as none", []int64{-3, 10, 0}, []int{0, histPlotH, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buckets []exq.MetricsBucket
			for i, n := range c.runs {
				b := exq.MetricsBucket{Runs: n, UpToMS: int64(10 * (i + 1))}
				if i == len(c.runs)-1 {
					b.UpToMS = 0
				}
				buckets = append(buckets, b)
			}
			g := drawHistogram(buckets)
			var got []int
			for _, b := range g.Bars {
				got = append(got, b.H)
				assert.Equal(t, g.Base, b.Y+b.H, "bars stand on the base")
			}
			assert.Equal(t, c.heights, got)
		})
	}
	assert.Nil(t, drawHistogram(nil))
}

func TestMsText(t *testing.T) {
	for ms, want := range map[float64]string{0: "0 ms", 12: "12 ms", 12.34: "12.3 ms", 1500: "1.5 s", 90e3: "1.5 min", 5400e3: "1.5 h"} {
		assert.Equal(t, want, msText(ms), fmt.Sprint(ms))
	}
}
