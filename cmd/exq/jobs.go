package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

// page is the --limit and --offset of a listing.
type page struct{ limit, offset int }

func (p *page) flags(c *cobra.Command) {
	c.Flags().IntVar(&p.limit, "limit", 20, "how many jobs to show (1 or more)")
	c.Flags().IntVar(&p.offset, "offset", 0, "how many jobs to skip")
}

func (p *page) check() error {
	if p.limit < 1 {
		return usagef("--limit must be 1 or more, got %d", p.limit)
	}
	if p.offset < 0 {
		return usagef("--offset must not be negative, got %d", p.offset)
	}
	return nil
}

func (a *app) jobsCmd() *cobra.Command {
	var p page
	var oldest bool
	c := &cobra.Command{
		Use:   "jobs QUEUE",
		Short: "Jobs waiting in QUEUE, newest first (--oldest: next to run first)",
		Long: `Jobs waiting in QUEUE, newest first, or next to run first with --oldest. A page of --limit
jobs from --offset; the last line says how many there are when the page does not show them all.
A queue nothing knows (no job, no node subscribed) is warned about on stderr: most likely a typo.`,
		Args:              nArgs(1, 1, "jobs QUEUE"),
		ValidArgsFunction: a.complete(queueNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, q := cmd.Context(), args[0]
			if err := p.check(); err != nil {
				return err
			}
			if err := a.oneNamespace("jobs"); err != nil {
				return err
			}
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			recs, err := a.api.Jobs(ctx, q, exq.ListOptions{Offset: p.offset, Size: p.limit, Reverse: oldest})
			if err != nil {
				return err
			}
			total, err := a.api.QueueSize(ctx, q)
			if err != nil {
				return err
			}
			if total == 0 {
				if err := a.warnUnknownQueue(ctx, q); err != nil {
					return err
				}
			}
			if err := a.records(recs, false); err != nil {
				return err
			}
			a.shown(p.offset, len(recs), total)
			return nil
		},
	}
	p.flags(c)
	c.Flags().BoolVar(&oldest, "oldest", false, "list the next job to run first")
	return c
}

// Filtered set listings (--class, --queue) read the set in chunks of filterChunk members, in
// the listing's order, and stop after filterScanLimit members, as the dashboard's filters do:
// a listing reads a bounded number of jobs whatever the set holds.
const (
	filterChunk     = 500
	filterScanLimit = 10_000
)

// filterSet lists the page (o.Offset, o.Size) of the jobs of set s whose class and queue are
// the ones given ("" matches any), reading at most filterScanLimit members from the start of
// the set; scanned is how many it read.
func filterSet(ctx context.Context, api *exq.API, s exq.Set, class, queue string, o exq.ListOptions) (recs []exq.JobRecord, scanned int, err error) {
	skip := o.Offset
	for scanned < filterScanLimit {
		chunk, _, err := listSet(ctx, api, s, exq.ListOptions{Offset: scanned, Size: min(filterChunk, filterScanLimit-scanned)})
		if err != nil {
			return nil, scanned, err
		}
		for _, r := range chunk {
			scanned++
			j, err := r.Job()
			if err != nil || (class != "" && j.Class != class) || (queue != "" && j.Queue != queue) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if recs = append(recs, r); len(recs) == o.Size {
				return recs, scanned, nil
			}
		}
		if len(chunk) < filterChunk {
			break
		}
	}
	return recs, scanned, nil
}

func (a *app) setCmd(s exq.Set) *cobra.Command {
	var p page
	var class, queue string
	names := map[exq.Set][2]string{
		exq.RetrySet:     {"retries", "Jobs waiting to be retried, soonest first"},
		exq.ScheduledSet: {"scheduled", "Jobs scheduled for later, soonest first"},
		exq.DeadSet:      {"dead", "Dead jobs, most recent first"},
	}
	use, short := names[s][0], names[s][1]
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `, with their error. A page of --limit jobs from --offset; the last line says how
many there are when the page does not show them all. See one job in full with exq job JID.
--class and --queue list only the jobs of that class or queue: they read the set from its start,
at most 10 000 jobs, as the dashboard's filters do, and the last line says how many they read.`,
		Args: nArgs(0, 0, "no argument"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := p.check(); err != nil {
				return err
			}
			if err := a.oneNamespace(use); err != nil {
				return err
			}
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			if class != "" || queue != "" {
				recs, scanned, err := filterSet(ctx, a.api, s, class, queue, exq.ListOptions{Offset: p.offset, Size: p.limit})
				if err != nil {
					return err
				}
				total, err := a.api.Size(ctx, s)
				if err != nil {
					return err
				}
				if err := a.records(recs, true); err != nil {
					return err
				}
				if !a.json {
					fmt.Fprintf(a.stdout, "%d matching from match %d on; read %d of the %d jobs", len(recs), p.offset+1, scanned, total)
					if int64(scanned) < total && len(recs) < p.limit {
						fmt.Fprintf(a.stdout, " (a filter reads at most %d)", filterScanLimit)
					}
					fmt.Fprintln(a.stdout)
				}
				return nil
			}
			recs, total, err := listSet(ctx, a.api, s, exq.ListOptions{Offset: p.offset, Size: p.limit})
			if err != nil {
				return err
			}
			if err := a.records(recs, true); err != nil {
				return err
			}
			a.shown(p.offset, len(recs), total)
			return nil
		},
	}
	p.flags(c)
	c.Flags().StringVar(&class, "class", "", "only the jobs of this class (reads at most 10 000 jobs)")
	c.Flags().StringVar(&queue, "queue", "", "only the jobs of this queue (reads at most 10 000 jobs)")
	return c
}

func listSet(ctx context.Context, api *exq.API, s exq.Set, o exq.ListOptions) ([]exq.JobRecord, int64, error) {
	var recs []exq.JobRecord
	var err error
	switch s {
	case exq.RetrySet:
		recs, err = api.Retries(ctx, o)
	case exq.ScheduledSet:
		recs, err = api.Scheduled(ctx, o)
	default:
		recs, err = api.Dead(ctx, o)
	}
	if err != nil {
		return nil, 0, err
	}
	total, err := api.Size(ctx, s)
	return recs, total, err
}

// records prints job records; withAt adds the set's time column.
func (a *app) records(recs []exq.JobRecord, withAt bool) error {
	if a.json {
		out := make([]jobJSON, len(recs))
		for i, r := range recs {
			out[i] = toListedJobJSON(r)
		}
		return a.printJSON(out)
	}
	header := []string{"JID", "CLASS", "QUEUE", "ARGS", "RETRIES", "ERROR"}
	if withAt {
		header = append([]string{"AT"}, header...)
	}
	rows := make([][]any, len(recs))
	for i, r := range recs {
		// No jid to name it by: its Ref, which exq job, retry and delete take in place of one.
		row := []any{r.Ref(), "<undecodable>", "", cut(r.Raw, 50), "", ""}
		if j, err := r.Job(); err == nil {
			row = []any{j.JID, j.Class, j.Queue, cut(string(j.Args), 50), j.RetryCount, cut(errorText(j), 60)}
		}
		if withAt {
			row = append([]any{when(r.At)}, row...)
		}
		rows[i] = row
	}
	return a.table(header, rows)
}

// errorText is a job's last error as "Class: message", or "".
func errorText(j *exq.Job) string {
	switch {
	case j.ErrorClass != "" && j.ErrorMessage != "":
		return fmt.Sprintf("%s: %s", j.ErrorClass, j.ErrorMessage)
	case j.ErrorClass != "":
		return j.ErrorClass
	}
	return j.ErrorMessage
}
