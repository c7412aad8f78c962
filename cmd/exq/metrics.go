package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

// metricsJSON is what `exq metrics --json` prints.
type metricsJSON struct {
	From      time.Time          `json:"from"`
	To        time.Time          `json:"to"`
	Total     int                `json:"total"`
	Invalid   int                `json:"invalid"`
	Truncated bool               `json:"truncated"`
	Classes   []classMetricsJSON `json:"classes"`
}

type classMetricsJSON struct {
	Class     string              `json:"class"`
	Runs      int64               `json:"runs"`
	Failed    int64               `json:"failed"`
	Succeeded int64               `json:"succeeded"`
	TotalMS   int64               `json:"total_ms"`
	MeanMS    float64             `json:"mean_ms"`
	Histogram []metricsBucketJSON `json:"histogram,omitempty"`
}

type metricsBucketJSON struct {
	UpToMS int64 `json:"up_to_ms"` // 0: the last, open bucket
	Runs   int64 `json:"runs"`
}

func (a *app) metricsCmd() *cobra.Command {
	var (
		class          string
		minutes, hours int
		limit          int
	)
	c := &cobra.Command{
		Use:   "metrics",
		Short: "Per job class: runs, failures and time of the last minutes or hours",
		Long: `Per job class, the runs, the failed runs, and the total and mean time of the successful runs in
the last --minutes or --hours (at most 8 hours, as long as the keys live), the classes that took
the most time first: what Sidekiq 7 and 8's Metrics tab shows. exq nodes write these (unless
DisableMetrics), as do Sidekiq 7 and 8 nodes; Exq (Elixir) nodes do not.
With --class, that class alone, with its histogram of run times.`,
		Example: `  exq metrics
  exq metrics --hours 8 --limit 5
  exq metrics --class App.SendEmail --minutes 30 --json`,
		Args: nArgs(0, 0, "no argument"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := exq.MetricsOptions{Class: class, Top: limit, Window: time.Hour}
			switch {
			case cmd.Flags().Changed("minutes") && cmd.Flags().Changed("hours"):
				return usagef("give --minutes or --hours, not both")
			case cmd.Flags().Changed("minutes"):
				if minutes < 1 || minutes > int(exq.MetricsMaxWindow/time.Minute) {
					return usagef("--minutes must be 1 to %d, got %d", int(exq.MetricsMaxWindow/time.Minute), minutes)
				}
				o.Window = time.Duration(minutes) * time.Minute
			case cmd.Flags().Changed("hours"):
				if hours < 1 || hours > int(exq.MetricsMaxWindow/time.Hour) {
					return usagef("--hours must be 1 to %d, got %d", int(exq.MetricsMaxWindow/time.Hour), hours)
				}
				o.Window = time.Duration(hours) * time.Hour
			}
			if limit < 1 || limit > exq.MetricsMaxTop {
				return usagef("--limit must be 1 to %d, got %d", exq.MetricsMaxTop, limit)
			}
			if cmd.Flags().Changed("class") && class == "" {
				return usagef("--class must name a class")
			}
			if err := o.Validate(); err != nil {
				return usagef("--class: %s", strings.TrimPrefix(err.Error(), "exq: invalid metrics options: "))
			}
			if err := a.oneNamespace("metrics"); err != nil {
				return err
			}
			if err := a.connect(cmd.Context(), true); err != nil {
				return err
			}
			return a.showMetrics(cmd.Context(), o)
		},
	}
	c.Flags().StringVar(&class, "class", "", "this class alone, with its histogram of run times")
	c.Flags().IntVar(&minutes, "minutes", 0, "the last this many minutes, 1 to 480 (default: the last hour)")
	c.Flags().IntVar(&hours, "hours", 0, "the last this many hours, 1 to 8, instead of --minutes")
	c.Flags().IntVar(&limit, "limit", exq.MetricsDefaultTop, "show at most this many classes")
	return c
}

func (a *app) showMetrics(ctx context.Context, o exq.MetricsOptions) error {
	m, err := a.api.Metrics(ctx, o)
	if err != nil {
		return err
	}
	if a.json {
		out := metricsJSON{From: m.From.UTC(), To: m.To.UTC(), Total: m.Total, Invalid: m.Invalid, Truncated: m.Truncated,
			Classes: make([]classMetricsJSON, len(m.Classes))}
		for i, c := range m.Classes {
			j := classMetricsJSON{Class: c.Class, Runs: c.Runs, Failed: c.Failed, Succeeded: c.Succeeded, TotalMS: c.TotalMS, MeanMS: c.MeanMS}
			for _, b := range c.Histogram {
				j.Histogram = append(j.Histogram, metricsBucketJSON(b))
			}
			out.Classes[i] = j
		}
		return a.printJSON(out)
	}
	if m.Invalid > 0 {
		a.warnf("%d stored value(s) were not counts and were left out", m.Invalid)
	}
	if m.Truncated {
		a.warnf("Redis holds more than one read takes (a minute with over 1000 fields, or over 10000 classes): the numbers are of a part")
	}
	fmt.Fprintf(a.stdout, "%s to %s (UTC)\n", m.From.UTC().Format("2006-01-02 15:04"), m.To.UTC().Format("2006-01-02 15:04"))
	rows := make([][]any, len(m.Classes))
	for i, c := range m.Classes {
		mean := "-"
		if c.Succeeded > 0 {
			mean = msCell(c.MeanMS)
		}
		rows[i] = []any{cut(c.Class, 60), c.Runs, c.Failed, c.Succeeded, msCell(float64(c.TotalMS)), mean}
	}
	if err := a.table([]string{"CLASS", "RUNS", "FAILED", "SUCCEEDED", "TOTAL", "MEAN"}, rows); err != nil {
		return err
	}
	if o.Class == "" {
		if len(m.Classes) < m.Total {
			fmt.Fprintf(a.stdout, "%d of %d classes, those that took the most time (see --limit)\n", len(m.Classes), m.Total)
		}
		if m.Total == 0 {
			fmt.Fprintln(a.stdout, "no runs in this window")
		}
		return nil
	}
	return a.histogramTable(m.Classes[0].Histogram)
}

// histogramTable prints a histogram of run times, a bar of #s per bucket scaled to the fullest.
func (a *app) histogramTable(h []exq.MetricsBucket) error {
	const width = 40
	var most int64
	for _, b := range h {
		most = max(most, b.Runs)
	}
	fmt.Fprintln(a.stdout)
	rows := make([][]any, len(h))
	lower := int64(0)
	for i, b := range h {
		span := fmt.Sprintf("%s-%s", msCell(float64(lower)), msCell(float64(b.UpToMS)))
		if b.UpToMS == 0 {
			span = msCell(float64(lower)) + " or more"
		}
		lower = b.UpToMS
		bar := ""
		if most > 0 && b.Runs > 0 {
			bar = strings.Repeat("#", max(int(float64(b.Runs)/float64(most)*width), 1))
		}
		rows[i] = []any{span, b.Runs, bar}
	}
	return a.table([]string{"TOOK", "RUNS", ""}, rows)
}

// msCell is a time in milliseconds for a table: "850ms", "2.5s", "3.2m", "4.1h" (any size: a
// stored count may be huge).
func msCell(ms float64) string {
	switch {
	case ms < 1000:
		if ms == float64(int64(ms)) {
			return strconv.FormatInt(int64(ms), 10) + "ms"
		}
		return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
	case ms < 60e3:
		return oneDecimal(ms/1e3) + "s"
	case ms < 3600e3:
		return oneDecimal(ms/60e3) + "m"
	}
	return oneDecimal(ms/3600e3) + "h"
}

// oneDecimal is f rounded to one decimal, without a trailing ".0" ("13", "2.5").
func oneDecimal(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }
