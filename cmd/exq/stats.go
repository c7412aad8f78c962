package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) statsCmd() *cobra.Command {
	var watch bool
	var every time.Duration
	c := &cobra.Command{
		Use:   "stats",
		Short: "Counters, processes and job counts at a glance",
		Long: `Processed and failed counters, live processes, busy jobs, and how many jobs wait in queues,
retry, schedule and dead (summed over every namespace given).
--watch refreshes every --interval until interrupted (Ctrl-C): in place on a terminal, like
watch(1); elsewhere one table (or one JSON object per line with --json) per refresh.`,
		Args: nArgs(0, 0, "no argument"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every <= 0 {
				return usagef("--interval must be positive, got %s", every)
			}
			if !watch {
				if err := a.connect(cmd.Context(), true); err != nil {
					return err
				}
				return a.showStats(cmd.Context(), 0)
			}
			return a.watchStats(cmd.Context(), every)
		},
	}
	c.Flags().BoolVarP(&watch, "watch", "w", false, "refresh until interrupted")
	c.Flags().DurationVar(&every, "interval", 2*time.Second, "time between refreshes with --watch")
	return c
}

// watchStats shows the stats every interval until ctx ends (Ctrl-C), which is a normal end.
func (a *app) watchStats(ctx context.Context, every time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	err := a.connect(cctx, true)
	cancel()
	if err != nil {
		return err
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, a.timeout)
		if a.stdoutTTY && !a.json {
			fmt.Fprint(a.rawStdout, "\x1b[H\x1b[2J") // home and clear, as watch(1) redraws
		}
		err := a.showStats(rctx, every)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// showStats prints the overview once; every is the --watch interval (0 without --watch).
func (a *app) showStats(ctx context.Context, every time.Duration) error {
	o, err := a.view().Overview(ctx)
	if err != nil {
		return err
	}
	s := statsJSON{Processed: o.Processed, Failed: o.Failed, Busy: o.Busy, Processes: o.Processes,
		Enqueued: o.Enqueued, Retries: o.Retries, Scheduled: o.Scheduled, Dead: o.Dead}
	if a.json {
		if every > 0 { // one object per line: a stream a script can read line by line
			b, _ := json.Marshal(struct {
				At time.Time `json:"at"`
				statsJSON
			}{time.Now().UTC(), s})
			_, err := fmt.Fprintf(a.stdout, "%s\n", b)
			return err
		}
		return a.printJSON(s)
	}
	if every > 0 {
		fmt.Fprintf(a.stdout, "%s  every %s, Ctrl-C to stop\n", time.Now().UTC().Format(time.RFC3339), every)
	}
	return a.table([]string{"PROCESSED", "FAILED", "BUSY", "PROCESSES", "ENQUEUED", "RETRIES", "SCHEDULED", "DEAD"},
		[][]any{{s.Processed, s.Failed, s.Busy, s.Processes, s.Enqueued, s.Retries, s.Scheduled, s.Dead}})
}
