package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/textsafe"
)

// batchJSON is one batch as --json prints it.
type batchJSON struct {
	ID          string            `json:"id"`
	Description string            `json:"description,omitempty"`
	Total       int               `json:"total"`
	Pending     int               `json:"pending"`
	Failed      int               `json:"failed"`
	Dead        int               `json:"dead"`
	CreatedAt   *textsafe.Time    `json:"created_at,omitempty"`
	CompletedAt *textsafe.Time    `json:"completed_at,omitempty"`
	SucceededAt *textsafe.Time    `json:"succeeded_at,omitempty"`
	DiedAt      *textsafe.Time    `json:"died_at,omitempty"`
	Callbacks   map[string]string `json:"callbacks,omitempty"`
	Open        bool              `json:"open,omitempty"`
	PendingJIDs []string          `json:"pending_jids,omitempty"`
	// With --audit: pending jobs running (or seen running) on a Sidekiq or Exq node, and
	// pending jobs found nowhere (run by such a node, or lost).
	ForeignJIDs     []string `json:"foreign_jids,omitempty"`
	UnaccountedJIDs []string `json:"unaccounted_jids,omitempty"`
}

func toBatchJSON(s exq.BatchStatus) batchJSON {
	return batchJSON{ID: s.ID, Description: s.Description, Total: s.Total, Pending: s.Pending, Failed: s.Failed,
		Dead: s.Dead, CreatedAt: ts(s.CreatedAt), CompletedAt: ts(s.CompletedAt), SucceededAt: ts(s.SucceededAt),
		DiedAt: ts(s.DiedAt), Callbacks: s.Callbacks, Open: s.Open}
}

// workflowJSON is one workflow as --json prints it.
type workflowJSON struct {
	ID          string            `json:"id"`
	Description string            `json:"description,omitempty"`
	Total       int               `json:"total"`
	Succeeded   int               `json:"succeeded"`
	Dead        int               `json:"dead"`
	Canceled    int               `json:"canceled"`
	CreatedAt   *textsafe.Time    `json:"created_at,omitempty"`
	FinishedAt  *textsafe.Time    `json:"finished_at,omitempty"`
	Jobs        []workflowJobJSON `json:"jobs"`
}

type workflowJobJSON struct {
	Name             string   `json:"name"`
	JID              string   `json:"jid"`
	Queue            string   `json:"queue"`
	State            string   `json:"state"`
	DependsOn        []string `json:"depends_on,omitempty"`
	Waiting          int      `json:"waiting"`
	RunOnParentDeath bool     `json:"run_on_parent_death"`
	Reason           string   `json:"reason,omitempty"`
}

func (a *app) batchCmd() *cobra.Command {
	var limit int
	list := func(cmd *cobra.Command, _ []string) error { return a.batchList(cmd.Context(), limit) }
	c := &cobra.Command{
		Use:   "batch",
		Short: "Batches: list, show",
		Long: `Batches of jobs with callbacks (docs/workflows.md). Without a subcommand, lists the batches
whose data is kept, newest first: counts and the times each callback fired.`,
		Args: nArgs(0, 0, "a subcommand: list or show"),
		RunE: list,
	}
	c.Flags().IntVar(&limit, "limit", 20, "how many batches to list")
	lc := &cobra.Command{Use: "list", Short: "List the batches, newest first", Args: nArgs(0, 0, "no argument"), RunE: list}
	lc.Flags().IntVar(&limit, "limit", 20, "how many batches to list")
	var audit bool
	sc := &cobra.Command{Use: "show BID", Short: "One batch: its counts, times, callbacks and pending jobs",
		Long: `One batch: its counts, times, callbacks and pending jobs. With --audit, also the pending jobs
that Sidekiq or Exq nodes run or ran (they record nothing in a batch, so it counts them pending
for ever), and those found in no queue, backup or busy list, schedule, retry or dead set
("unaccounted": run by such a node, or lost). The audit reads every queue and set in pages.`,
		Args: nArgs(1, 1, "batch show BID"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.batchShow(cmd.Context(), args[0], audit) }}
	sc.Flags().BoolVar(&audit, "audit", false, "look for pending jobs run by Sidekiq or Exq nodes, or lost (reads every queue and set)")
	c.AddCommand(lc, sc)
	return c
}

func (a *app) flowOpen(ctx context.Context, what string) error {
	if err := a.oneNamespace(what); err != nil {
		return err
	}
	return a.connect(ctx, true)
}

func (a *app) batchList(ctx context.Context, limit int) error {
	if limit <= 0 {
		return usagef("--limit must be positive, got %d", limit)
	}
	if err := a.flowOpen(ctx, "batch"); err != nil {
		return err
	}
	list, err := a.api.Batches(ctx, exq.ListOptions{Size: limit})
	if err != nil {
		return err
	}
	if a.json {
		out := make([]batchJSON, len(list))
		for i, s := range list {
			out[i] = toBatchJSON(s)
		}
		return a.printJSON(out)
	}
	rows := make([][]any, len(list))
	for i, s := range list {
		rows[i] = []any{s.ID, cut(s.Description, 40), s.Total, s.Pending, s.Failed, s.Dead, when(s.CreatedAt),
			when(s.CompletedAt), when(s.SucceededAt)}
	}
	return a.table([]string{"BID", "DESCRIPTION", "TOTAL", "PENDING", "FAILED", "DEAD", "CREATED", "COMPLETED", "SUCCEEDED"}, rows)
}

// maxShownJIDs bounds the pending jids batch show lists.
const maxShownJIDs = 20

func (a *app) batchShow(ctx context.Context, bid string, audit bool) error {
	if err := a.flowOpen(ctx, "batch"); err != nil {
		return err
	}
	s, err := a.api.Batch(ctx, bid)
	if err != nil {
		return err
	}
	pending, err := a.api.BatchJobs(ctx, bid, "pending", maxShownJIDs)
	if err != nil {
		return err
	}
	var foreign, unaccounted []string
	if audit {
		if foreign, err = a.api.BatchJobs(ctx, bid, "foreign", maxShownJIDs); err != nil {
			return err
		}
		if unaccounted, err = a.api.BatchJobs(ctx, bid, "unaccounted", maxShownJIDs); err != nil {
			return err
		}
	}
	if a.json {
		out := toBatchJSON(s)
		out.PendingJIDs, out.ForeignJIDs, out.UnaccountedJIDs = pending, foreign, unaccounted
		return a.printJSON(out)
	}
	rows := [][]any{{"description", s.Description}, {"total", s.Total}, {"pending", s.Pending}, {"failed", s.Failed},
		{"dead", s.Dead}, {"created", when(s.CreatedAt)}, {"completed", when(s.CompletedAt)},
		{"succeeded", when(s.SucceededAt)}, {"first death", when(s.DiedAt)}}
	for _, ev := range []string{"success", "complete", "death"} {
		if jid, ok := s.Callbacks[ev]; ok {
			rows = append(rows, []any{"on " + ev, jid})
		}
	}
	if s.Open {
		rows = append(rows, []any{"open", "yes: its success and complete callbacks wait for its close"})
	}
	if len(pending) > 0 {
		rows = append(rows, []any{"pending jobs", strings.Join(pending, " ")})
	}
	if audit {
		rows = append(rows, []any{"run by Sidekiq or Exq", orNone(foreign)}, []any{"unaccounted (run by Sidekiq or Exq, or lost)", orNone(unaccounted)})
	}
	return a.table([]string{"BATCH", s.ID}, rows)
}

func orNone(jids []string) string {
	if len(jids) == 0 {
		return "none"
	}
	return strings.Join(jids, " ")
}

func (a *app) workflowCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "workflow",
		Short: "Workflows: show",
		Long:  `Workflows of jobs that wait for other jobs (docs/workflows.md).`,
		Args:  nArgs(0, 0, "a subcommand: show"),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(&cobra.Command{Use: "show ID", Short: "One workflow: each job's state and what it waits for",
		Args: nArgs(1, 1, "workflow show ID"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.workflowShow(cmd.Context(), args[0]) }})
	return c
}

func (a *app) workflowShow(ctx context.Context, id string) error {
	if err := a.flowOpen(ctx, "workflow"); err != nil {
		return err
	}
	w, err := a.api.Workflow(ctx, id)
	if err != nil {
		return err
	}
	if a.json {
		out := workflowJSON{ID: w.ID, Description: w.Description, Total: w.Total, Succeeded: w.Succeeded, Dead: w.Dead,
			Canceled: w.Canceled, CreatedAt: ts(w.CreatedAt), FinishedAt: ts(w.FinishedAt), Jobs: []workflowJobJSON{}}
		for _, j := range w.Jobs {
			out.Jobs = append(out.Jobs, workflowJobJSON{Name: j.Name, JID: j.JID, Queue: j.Queue, State: j.State,
				DependsOn: j.DependsOn, Waiting: j.Waiting, RunOnParentDeath: j.RunOnParentDeath, Reason: j.Reason})
		}
		return a.printJSON(out)
	}
	rows := make([][]any, len(w.Jobs))
	for i, j := range w.Jobs {
		waits := "-"
		if len(j.DependsOn) > 0 {
			waits = cut(strings.Join(j.DependsOn, ","), 60)
		}
		state := j.State
		if j.Reason != "" {
			state += " (" + j.Reason + ")"
		}
		rows[i] = []any{j.Name, state, j.Queue, waits, j.JID}
	}
	if _, err := a.stdout.Write([]byte(w.ID + "  " + w.Description + "\n")); err != nil {
		return err
	}
	return a.table([]string{"JOB", "STATE", "QUEUE", "WAITS FOR", "JID"}, rows)
}
