package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/exqgo/exq"
)

// The Metrics page: per job class, the runs, failures and time of the last hours, and one
// class's histogram of run times (Sidekiq 7 and 8's Metrics tab), from exq.API.Metrics.

// metricsHours are the windows offered, in hours; the first is the default (Sidekiq's).
var metricsHours = []int{1, 2, 4, 8}

// metricsShown bounds the classes the page lists.
const metricsShown = 50

type metricsData struct {
	M     exq.Metrics
	Rows  []metricsRow
	Hours int
	Class string      // the class whose histogram is shown; "" for none
	One   *metricsRow // its row, with the histogram; nil for none
	Chart *histChart
}

// metricsRow is a class's row, its times written for people.
type metricsRow struct {
	exq.ClassMetrics
	Total, Mean string
}

func rowOf(c exq.ClassMetrics) metricsRow {
	r := metricsRow{ClassMetrics: c, Total: msText(float64(c.TotalMS)), Mean: "–"}
	if c.Succeeded > 0 {
		r.Mean = msText(c.MeanMS)
	}
	return r
}

// hoursLink is a window offered and the page's link to it.
type hoursLink struct {
	Hours int
	Link  string
}

// HoursLinks are the page's links for each window, keeping the class.
func (d metricsData) HoursLinks() []hoursLink {
	out := make([]hoursLink, len(metricsHours))
	for i, hours := range metricsHours {
		q := url.Values{"hours": {strconv.Itoa(hours)}}
		if d.Class != "" {
			q.Set("class", d.Class)
		}
		out[i] = hoursLink{hours, "?" + q.Encode()}
	}
	return out
}

// ClassLink is the page's link for class's histogram, keeping the window.
func (d metricsData) ClassLink(class string) string {
	return "?" + url.Values{"hours": {strconv.Itoa(d.Hours)}, "class": {class}}.Encode()
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	hours := metricsHours[0]
	if n, err := strconv.Atoi(q.Get("hours")); err == nil {
		for _, ok := range metricsHours {
			if n == ok {
				hours = n
			}
		}
	}
	d := metricsData{Hours: hours, Class: q.Get("class")}
	o := exq.MetricsOptions{Window: time.Duration(hours) * time.Hour, Top: metricsShown}
	m, err := h.api.Metrics(r.Context(), o)
	if err == nil && d.Class != "" {
		o.Class = d.Class
		var one exq.Metrics
		if one, err = h.api.Metrics(r.Context(), o); err == nil && len(one.Classes) > 0 {
			row := rowOf(one.Classes[0])
			d.One = &row
			d.Chart = drawHistogram(row.Histogram)
			m.Invalid += one.Invalid
			m.Truncated = m.Truncated || one.Truncated
		}
	}
	if errors.Is(err, exq.ErrInvalidMetricsOptions) {
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.M = m
	for _, c := range m.Classes {
		d.Rows = append(d.Rows, rowOf(c))
	}
	title := "Metrics"
	if d.Class != "" {
		title = "Metrics of " + d.Class
	}
	h.render(w, r, http.StatusOK, "metrics.html", "metrics", title, d)
}

// Sizes of the histogram, in SVG units.
const (
	histBarW, histGap = 28, 4
	histPlotH         = 160
	histLeft, histTop = 8, 22
	histBottom        = 44
)

// histChart is a run-time histogram drawn as bars, one per bucket.
type histChart struct {
	W, H, Base int // the drawing's size, and the y of the bars' base
	Bars       []histBar
}

type histBar struct {
	X, Y, W, H int    // the bar (H 0: none)
	Mid        int    // the x of the bar's middle, for its labels
	Runs       int64  // its count, written above it when not 0
	Label      string // the bucket's upper bound, written below every other bar
	Title      string // the whole bucket, as the bar's tooltip
}

// drawHistogram lays out buckets (fastest first) as bars scaled to the fullest; nil without
// buckets.
func drawHistogram(buckets []exq.MetricsBucket) *histChart {
	if len(buckets) == 0 {
		return nil
	}
	var most int64
	for _, b := range buckets {
		most = max(most, b.Runs)
	}
	c := &histChart{W: histLeft*2 + len(buckets)*(histBarW+histGap), H: histTop + histPlotH + histBottom, Base: histTop + histPlotH}
	var lower int64
	for i, b := range buckets {
		x := histLeft + i*(histBarW+histGap)
		bar := histBar{X: x, W: histBarW, Mid: x + histBarW/2, Runs: max(b.Runs, 0)}
		if most > 0 && b.Runs > 0 {
			bar.H = max(int(float64(b.Runs)/float64(most)*histPlotH), 1) // a run is never drawn as nothing
		}
		bar.Y = c.Base - bar.H
		if b.UpToMS > 0 {
			bar.Title = fmt.Sprintf("%s to %s: %s run(s)", msText(float64(lower)), msText(float64(b.UpToMS)), formatNum(bar.Runs))
			if i%2 == 0 && i != len(buckets)-2 { // every other bound, and room for "slow"
				bar.Label = shortMS(b.UpToMS)
			}
			lower = b.UpToMS
		} else {
			bar.Title = fmt.Sprintf("%s or more: %s run(s)", msText(float64(lower)), formatNum(bar.Runs))
			bar.Label = "slow"
		}
		c.Bars = append(c.Bars, bar)
	}
	return c
}

// msText is a time in milliseconds for people: "850 ms", "2.5 s", "3.2 min", "4.1 h" (any
// size: a stored count may be huge).
func msText(ms float64) string {
	switch {
	case ms < 1000:
		if ms == float64(int64(ms)) {
			return strconv.FormatInt(int64(ms), 10) + " ms"
		}
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	case ms < 60e3:
		return oneDecimal(ms/1e3) + " s"
	case ms < 3600e3:
		return oneDecimal(ms/60e3) + " min"
	}
	return oneDecimal(ms/3600e3) + " h"
}

// shortMS is a bucket's bound as an axis label: "20ms", "1.1s", "5m".
func shortMS(ms int64) string {
	switch {
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + "ms"
	case ms < 60e3:
		return strconv.FormatFloat(float64(ms)/1e3, 'f', -1, 64) + "s"
	}
	return strconv.FormatFloat(float64(ms)/60e3, 'f', 1, 64) + "m"
}

// oneDecimal is f rounded to one decimal, without a trailing ".0" ("13", "2.5").
func oneDecimal(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }
