package web

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The graphs are drawn here, as SVG geometry the templates write out: no chart library and no
// build step. The dashboard's script asks for the same struct as JSON (stats.json) and only
// copies its coordinates into the SVG already on the page.

// chart is one line graph: two series (processed, failed) over a shared x axis.
type chart struct {
	W, H   int
	Left   int // x of the y axis
	Bottom int // y of the x axis
	Series []series
	YTicks []tick
	XTicks []tick
	Max    int64
}

// series is one line: its points as an SVG points attribute, and one dot per value with a
// tooltip (SVG <title>), so values read without JavaScript.
type series struct {
	Name   string  `json:"name"`
	Class  string  `json:"class"`
	Points string  `json:"points"`
	Dots   []dot   `json:"dots"`
	Total  int64   `json:"total"`
	Values []int64 `json:"-"`
}

type dot struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Title string  `json:"title"`
}

type tick struct {
	Pos   float64 `json:"pos"`
	Label string  `json:"label"`
}

// chartJSON is what the script gets.
type chartJSON struct {
	Series []series `json:"series"`
	YTicks []tick   `json:"y"`
	XTicks []tick   `json:"x"`
}

func (c chart) json() chartJSON {
	return chartJSON{Series: c.Series, YTicks: c.YTicks, XTicks: c.XTicks}
}

// The graph's margins, in viewBox units, leave room for its labels at the phone CSS's font
// size (26 units): half a time label beyond the last x tick, a value label above the top line,
// and the times below the plot.
const (
	chartW, chartH          = 1000, 240
	chartLeft, chartRight   = 56, 56
	chartTop, chartBottomPx = 24, 34
)

// lineChart lays out n points per series; label(i) names point i for its tooltip and xLabel(i)
// the x ticks (every step-th point).
func lineChart(names, classes []string, values [][]int64, label func(i int) string, xLabel func(i int) string, xTicks int, dots bool) chart {
	c := chart{W: chartW, H: chartH, Left: chartLeft, Bottom: chartH - chartBottomPx}
	n := 0
	for _, v := range values {
		n = max(n, len(v))
		for _, x := range v {
			c.Max = max(c.Max, x)
		}
	}
	top := niceCeil(c.Max)
	plotW := float64(chartW - chartLeft - chartRight)
	plotH := float64(c.Bottom - chartTop)
	xAt := func(i int) float64 {
		if n <= 1 {
			return float64(chartLeft)
		}
		return round1(float64(chartLeft) + plotW*float64(i)/float64(n-1))
	}
	yAt := func(v int64) float64 { return round1(float64(c.Bottom) - plotH*float64(v)/float64(top)) }
	for s, vals := range values {
		se := series{Name: names[s], Class: classes[s], Values: vals}
		var pts strings.Builder
		for i, v := range vals {
			x, y := xAt(i), yAt(v)
			if i > 0 {
				pts.WriteByte(' ')
			}
			pts.WriteString(strconv.FormatFloat(x, 'f', -1, 64) + "," + strconv.FormatFloat(y, 'f', -1, 64))
			se.Total += v
			if dots {
				se.Dots = append(se.Dots, dot{X: x, Y: y, Title: fmt.Sprintf("%s: %s %s", label(i), formatNum(v), names[s])})
			}
		}
		se.Points = pts.String()
		c.Series = append(c.Series, se)
	}
	for k := 0; k <= 4; k++ {
		v := top / 4 * int64(k) // top is a multiple of 4; top*k could overflow
		c.YTicks = append(c.YTicks, tick{Pos: yAt(v), Label: shortNum(v)})
	}
	if n > 0 && xTicks > 0 {
		step := max(1, (n-1)/xTicks)
		for i := 0; i < n; i += step {
			c.XTicks = append(c.XTicks, tick{Pos: xAt(i), Label: xLabel(i)})
		}
	}
	return c
}

// niceCeil rounds a graph's top up to a round number that is a multiple of 4 (so that the four
// grid lines fall on whole numbers) and at most twice v: 4, 8 or 12 below 10; 20, 40, 80 or
// 100 below 100; from there 1, 2, 4, 5 or 8 times a power of ten. The counters are read from
// Redis: near the int64 limit (p*10 overflowed, to 0, and the loop never ended) the top is the
// largest multiple of 4.
func niceCeil(v int64) int64 {
	if v < 4 {
		return 4
	}
	p := int64(1)
	for p <= v/10 {
		p *= 10
	}
	for _, m := range []int64{1, 2, 4, 5, 8, 10, 12} {
		if p > math.MaxInt64/m {
			break
		}
		if m*p >= v && (m*p)%4 == 0 {
			return m * p
		}
	}
	return math.MaxInt64 - math.MaxInt64%4
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// shortNum writes a tick label: 950, 1.2k, 3.4M.
func shortNum(v int64) string {
	switch {
	case v < 1000:
		return strconv.FormatInt(v, 10)
	case v < 1_000_000:
		return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(float64(v)/1e6, 'f', -1, 64) + "M"
}

// realtimeSeconds is how far back the live graph looks: the per-second counters live 120 s.
const realtimeSeconds = 120

// realtimeChart draws the processed and failed runs of every second of the last two minutes
// (seconds without a counter are 0), ending at now.
func realtimeChart(secs map[int64][2]int64, now time.Time) chart {
	end := now.UTC().Truncate(time.Second).Add(-time.Second) // the current second is still counting
	start := end.Add(-(realtimeSeconds - 1) * time.Second)
	p, f := make([]int64, realtimeSeconds), make([]int64, realtimeSeconds)
	for i := range realtimeSeconds {
		v := secs[start.Add(time.Duration(i)*time.Second).Unix()]
		p[i], f[i] = v[0], v[1]
	}
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }
	return lineChart([]string{"processed", "failed"}, []string{"processed", "failed"}, [][]int64{p, f},
		func(i int) string { return at(i).Format("15:04:05") },
		func(i int) string { return at(i).Format("15:04:05") }, 6, false)
}

// historyChart draws processed and failed runs per UTC day.
func historyChart(days []time.Time, p, f []int64) chart {
	return lineChart([]string{"processed", "failed"}, []string{"processed", "failed"}, [][]int64{p, f},
		func(i int) string { return days[i].Format("Mon 2 Jan 2006") },
		func(i int) string { return days[i].Format("2 Jan") }, 6, true)
}
