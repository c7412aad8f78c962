package main

import (
	"context"
	"fmt"
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
	// RepeatedParents is how many parent names the stored graph repeats: each job's
	// depends_on names each parent once.
	RepeatedParents int `json:"repeated_parents,omitempty"`
}

type workflowJobJSON struct {
	Name      string   `json:"name"`
	JID       string   `json:"jid"`
	Queue     string   `json:"queue"`
	State     string   `json:"state"`
	DependsOn []string `json:"depends_on,omitempty"` // distinct, at most maxParentsListed
	// DependsOnTotal is how many distinct parents the job has, when depends_on lists fewer.
	DependsOnTotal   int    `json:"depends_on_total,omitempty"`
	Waiting          int    `json:"waiting"`
	RunOnParentDeath bool   `json:"run_on_parent_death"`
	Reason           string `json:"reason,omitempty"`
	resultJSON
}

// resultJSON is the result a job stored, as --json prints it: the start of its JSON text (a
// string: a cut document is no JSON), its whole size, and whether it was cut.
type resultJSON struct {
	Result          string `json:"result,omitempty"`
	ResultBytes     int    `json:"result_bytes,omitempty"`
	ResultTruncated bool   `json:"result_truncated,omitempty"`
}

func toResultJSON(r exq.StoredResult) resultJSON {
	return resultJSON{Result: r.JSON, ResultBytes: r.Size, ResultTruncated: r.Truncated()}
}

// resultText is a stored result for a table: its first n runes on one line, "…" when cut, or
// "-" when there is none.
func resultText(r exq.StoredResult, n int) string {
	if r.Size == 0 {
		return "-"
	}
	s := cut(r.JSON, n)
	if r.Truncated() && !strings.HasSuffix(s, "…") {
		s += "…"
	}
	return s
}

// What workflow show reads of each job's result: for --json, and for a table cell of
// maxCellResult runes.
const (
	maxJSONResult  = 4 << 10
	maxCellResult  = 40
	maxCellResultB = 4 * maxCellResult // bytes read for a cell: enough for its runes
)

func (a *app) batchCmd() *cobra.Command {
	var limit int
	list := func(cmd *cobra.Command, _ []string) error { return a.batchList(cmd.Context(), limit) }
	c := &cobra.Command{
		Use:   "batch",
		Short: "Batches: list, show",
		Long: `Batches of jobs with callbacks (docs/workflows.md). Without a subcommand, lists the batches
whose data is kept, newest first, as "batch list" does: counts and the times each callback fired.`,
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
	var limit int
	list := func(cmd *cobra.Command, _ []string) error { return a.workflowList(cmd.Context(), limit) }
	c := &cobra.Command{
		Use:   "workflow",
		Short: "Workflows: list, show",
		Long: `Workflows of jobs that wait for other jobs (docs/workflows.md). Without a subcommand, lists
the workflows whose data is kept, newest first, as "workflow list" does: their counts and times.`,
		Args: nArgs(0, 0, "a subcommand: list or show"),
		RunE: list,
	}
	c.Flags().IntVar(&limit, "limit", 20, "how many workflows to list")
	lc := &cobra.Command{Use: "list", Short: "List the workflows, newest first", Args: nArgs(0, 0, "no argument"), RunE: list}
	lc.Flags().IntVar(&limit, "limit", 20, "how many workflows to list")
	c.AddCommand(lc, &cobra.Command{Use: "show ID", Short: "One workflow: each job's state, what it waits for and its result",
		Args: nArgs(1, 1, "workflow show ID"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.workflowShow(cmd.Context(), args[0]) }})
	return c
}

// workflowListJSON is one workflow as workflow list --json prints it: without its jobs.
type workflowListJSON struct {
	ID          string         `json:"id"`
	Description string         `json:"description,omitempty"`
	Total       int            `json:"total"`
	Succeeded   int            `json:"succeeded"`
	Dead        int            `json:"dead"`
	Canceled    int            `json:"canceled"`
	CreatedAt   *textsafe.Time `json:"created_at,omitempty"`
	FinishedAt  *textsafe.Time `json:"finished_at,omitempty"`
}

func (a *app) workflowList(ctx context.Context, limit int) error {
	if limit <= 0 {
		return usagef("--limit must be positive, got %d", limit)
	}
	if err := a.flowOpen(ctx, "workflow"); err != nil {
		return err
	}
	list, err := a.api.Workflows(ctx, exq.ListOptions{Size: limit})
	if err != nil {
		return err
	}
	if a.json {
		out := make([]workflowListJSON, len(list))
		for i, w := range list {
			out[i] = workflowListJSON{ID: w.ID, Description: w.Description, Total: w.Total, Succeeded: w.Succeeded,
				Dead: w.Dead, Canceled: w.Canceled, CreatedAt: ts(w.CreatedAt), FinishedAt: ts(w.FinishedAt)}
		}
		return a.printJSON(out)
	}
	rows := make([][]any, len(list))
	for i, w := range list {
		rows[i] = []any{w.ID, cut(w.Description, 40), w.Total, w.Succeeded, w.Dead, w.Canceled, when(w.CreatedAt), when(w.FinishedAt)}
	}
	return a.table([]string{"ID", "DESCRIPTION", "TOTAL", "SUCCEEDED", "DEAD", "CANCELED", "CREATED", "FINISHED"}, rows)
}

func (a *app) workflowShow(ctx context.Context, id string) error {
	if err := a.flowOpen(ctx, "workflow"); err != nil {
		return err
	}
	w, err := a.api.Workflow(ctx, id)
	if err != nil {
		return err
	}
	jids := make([]string, len(w.Jobs))
	for i, j := range w.Jobs {
		jids[i] = j.JID
	}
	limit := maxCellResultB
	if a.json {
		limit = maxJSONResult
	}
	results, err := a.api.Results(ctx, jids, limit)
	if err != nil {
		return err
	}
	// Each job's parents named once and at most maxParentsListed of them: a stored graph whose
	// parent fields repeat one name 3 000 times made an 11.7 MB --json of a 1.9 MB graph.
	repeats, cutJobs := 0, 0
	parents := make([][]string, len(w.Jobs))
	totals := make([]int, len(w.Jobs))
	for i, j := range w.Jobs {
		var r int
		parents[i], totals[i], r = textsafe.Distinct(j.DependsOn, maxParentsListed)
		repeats += r
		if totals[i] > len(parents[i]) {
			cutJobs++
		}
	}
	if a.json {
		out := workflowJSON{ID: w.ID, Description: w.Description, Total: w.Total, Succeeded: w.Succeeded, Dead: w.Dead,
			Canceled: w.Canceled, CreatedAt: ts(w.CreatedAt), FinishedAt: ts(w.FinishedAt), Jobs: []workflowJobJSON{},
			RepeatedParents: repeats}
		for i, j := range w.Jobs {
			jj := workflowJobJSON{Name: j.Name, JID: j.JID, Queue: j.Queue, State: j.State,
				DependsOn: parents[i], Waiting: j.Waiting, RunOnParentDeath: j.RunOnParentDeath, Reason: j.Reason,
				resultJSON: toResultJSON(results[j.JID])}
			if totals[i] > len(parents[i]) {
				jj.DependsOnTotal = totals[i]
			}
			out.Jobs = append(out.Jobs, jj)
		}
		return a.printJSON(out)
	}
	rows := make([][]any, len(w.Jobs))
	for i, j := range w.Jobs {
		waits := "-"
		if len(parents[i]) > 0 {
			waits = cut(strings.Join(parents[i], ","), 60)
		}
		state := j.State
		if j.Reason != "" {
			state += " (" + j.Reason + ")"
		}
		rows[i] = []any{j.Name, state, j.Queue, waits, j.JID, resultText(results[j.JID], maxCellResult)}
	}
	// The heading is one line: a description's line breaks and escapes are shown escaped (a
	// description could otherwise forge a row of the table).
	// Then its counts and times, as workflow list and the dashboard show them.
	heading := textsafe.Terminal(clip(w.ID, maxCell))
	if w.Description != "" {
		heading += "  " + textsafe.Terminal(clip(w.Description, maxCell))
	}
	summary := fmt.Sprintf("%d jobs: %d succeeded, %d dead, %d canceled; created %s", w.Total, w.Succeeded, w.Dead, w.Canceled, when(w.CreatedAt))
	if !w.FinishedAt.IsZero() {
		summary += ", finished " + when(w.FinishedAt)
	}
	if _, err := fmt.Fprintf(a.stdout, "%s\n%s\n", heading, summary); err != nil {
		return err
	}
	if err := a.table([]string{"JOB", "STATE", "QUEUE", "WAITS FOR", "JID", "RESULT"}, rows); err != nil {
		return err
	}
	if repeats > 0 {
		fmt.Fprintf(a.stdout, "(the stored graph names a parent more than once: %d repeats, each listed once)\n", repeats)
	}
	if cutJobs > 0 {
		fmt.Fprintf(a.stdout, "(%d jobs wait for more than %d parents: --json lists the first %d and how many there are)\n", cutJobs, maxParentsListed, maxParentsListed)
	}
	return nil
}

// maxParentsListed bounds the parents workflow show lists per job (--json says how many
// there are when it lists fewer).
const maxParentsListed = 100
