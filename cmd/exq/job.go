package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/textsafe"
)

// place is where one copy of a job is: a queue, a set, or running on a node.
type place struct {
	State     string         `json:"state"` // "enqueued", "retry", "scheduled", "dead", "running" or "finished"
	Queue     string         `json:"queue,omitempty"`
	At        *textsafe.Time `json:"at,omitempty"` // due (retry, scheduled), died (dead), started (running)
	Node      string         `json:"node,omitempty"`
	Runtime   string         `json:"runtime,omitempty"` // of the node: exq, Exq or Sidekiq
	Namespace string         `json:"namespace,omitempty"`

	rec exq.JobRecord
}

func (p place) at() string {
	if p.At == nil {
		return "-"
	}
	return when(p.At.Time)
}

func (p place) String() string {
	switch p.State {
	case "enqueued":
		return "waiting in queue " + p.Queue
	case "running":
		return fmt.Sprintf("running on node %s (%s) since %s", p.Node, p.Runtime, p.at())
	case "dead":
		return "dead since " + p.at()
	case "finished":
		return "finished: in no queue, set or node now; it stored the result below"
	case "retry":
		return "retry due at " + p.at()
	}
	return "scheduled for " + p.at()
}

func (a *app) jobCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "job JID",
		Short: "Everything about one job, wherever it is",
		Long: `Everything about one job: where it is (waiting in a queue, scheduled, in retry, dead, or
running on which node), its fields, its last error and backtrace, its raw JSON pretty-printed,
the result it stored (SetResult, TypedResult), and the durable steps it saved (Step). Looks in every queue, set and node (of every
namespace given). A job found nowhere that stored a result has finished: it is shown with its
result, for as long as the result is kept (Options.ResultTTL).`,
		Args: nArgs(1, 1, "job JID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, jid := cmd.Context(), args[0]
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			var places []place
			var result exq.StoredResult
			var steps exq.JobSteps
			var iter *exq.IterationProgress
			for i, api := range a.shards() {
				if iter == nil {
					if p, ok, err := api.IterationProgress(ctx, jid); err != nil {
						return err
					} else if ok {
						iter = &p
					}
				}
				found, err := findJob(ctx, api, jid)
				if err != nil {
					return err
				}
				res, err := api.Results(ctx, []string{jid}, maxShownRaw)
				if err != nil {
					return err
				}
				st, err := api.Steps(ctx, jid, maxShownStep)
				if err != nil {
					return err
				}
				if st.Total > 0 {
					steps = st
				}
				if r, ok := res[jid]; ok {
					result = r
					if len(found) == 0 {
						found = []place{{State: "finished"}}
					}
				}
				for j := range found {
					if a.sharded != nil {
						found[j].Namespace = a.nss[i]
					}
				}
				places = append(places, found...)
			}
			if len(places) == 0 {
				return fmt.Errorf("%w: no job %s waiting, scheduled, in retry, dead or running, and no result stored (a job that succeeded leaves nothing else)", exq.ErrJobNotFound, jid)
			}
			return a.showJob(jid, places, result, steps, iter)
		},
	}
}

// findJob looks for job jid in every queue, set and node of one namespace.
func findJob(ctx context.Context, api *exq.API, jid string) ([]place, error) {
	var out []place
	busy, err := api.BusyJobs(ctx)
	if err != nil {
		return nil, err
	}
	var runtimes map[string]string
	for _, b := range busy {
		if j, err := b.Job(); err != nil || j.JID != jid {
			continue
		}
		if runtimes == nil {
			if runtimes, err = nodeRuntimes(ctx, api); err != nil {
				return nil, err
			}
		}
		out = append(out, place{State: "running", Queue: b.Queue, At: ts(b.RunAt), Node: b.Node, Runtime: runtimes[b.Node], rec: b.JobRecord})
	}
	qs, err := api.Queues(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		rec, err := api.FindInQueue(ctx, q, jid)
		switch {
		case errors.Is(err, exq.ErrJobNotFound):
		case err != nil:
			return nil, err
		default:
			out = append(out, place{State: "enqueued", Queue: q, rec: rec})
		}
	}
	for _, s := range []struct {
		set   exq.Set
		state string
	}{{exq.ScheduledSet, "scheduled"}, {exq.RetrySet, "retry"}, {exq.DeadSet, "dead"}} {
		rec, err := api.Find(ctx, s.set, jid)
		switch {
		case errors.Is(err, exq.ErrJobNotFound):
		case err != nil:
			return nil, err
		default:
			p := place{State: s.state, At: ts(rec.At), rec: rec}
			if j, err := rec.Job(); err == nil {
				p.Queue = j.Queue
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// nodeRuntimes maps each live node to its runtime (exq, Exq, Sidekiq).
func nodeRuntimes(ctx context.Context, api *exq.API) (map[string]string, error) {
	ps, err := api.Processes(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[p.Identity] = p.Runtime
	}
	return m, nil
}

// What exq job shows of a job, at most: its args and error (runes), backtrace lines, and its
// raw document pretty-printed (bytes) and indented (levels; deeper values stay on one line).
const (
	maxShownArgs   = 4096
	maxShownTrace  = 200
	maxShownRaw    = 64 << 10
	maxPrettyDepth = 32
)

func (p place) jid() string {
	if j, err := p.rec.Job(); err == nil {
		return j.JID
	}
	return "JID"
}

func (a *app) showJob(jid string, places []place, result exq.StoredResult, steps exq.JobSteps, iter *exq.IterationProgress) error {
	if places[0].State == "finished" {
		return a.showFinished(jid, places, result, steps)
	}
	rec := places[0].rec
	bt := backtrace(rec.Raw)
	if a.json {
		j := toJobJSON(rec)
		j.Backtrace = bt
		return a.printJSON(jobShowJSON{Places: places, Job: &j, resultJSON: toResultJSON(result), stepsJSON: toStepsJSON(steps), Iteration: iter})
	}
	w := &strings.Builder{}
	// One line per field, whatever it holds: a stored line break or escape is shown escaped
	// (a class or queue could otherwise forge a line of its own).
	line := func(k string, v any) {
		fmt.Fprintf(w, "%-10s %s\n", k, textsafe.Terminal(clip(fmt.Sprint(v), maxShownArgs)))
	}
	for _, p := range places {
		in := ""
		if p.Namespace != "" {
			in = " (namespace " + p.Namespace + ")"
		}
		line("STATE", p.String()+in)
	}
	j, err := rec.Job()
	if err != nil {
		line("ERROR", err)
	} else {
		line("JID", j.JID)
		line("CLASS", j.Class)
		line("QUEUE", j.Queue)
		line("ARGS", cut(string(j.Args), maxShownArgs))
		if k := j.DebounceKey(); k != "" {
			line("DEBOUNCE", k) // exq.Debounce: the burst's key (a scheduled job replaced by later calls)
		}
		line("RETRIES", fmt.Sprintf("%s, %s allowed", count(j.RetryCount, "failed run", "failed runs"), count(j.MaxRetries, "retry", "retries")))
		for _, t := range []struct {
			k string
			v time.Time
		}{{"CREATED", j.CreatedAt}, {"ENQUEUED", j.EnqueuedAt}, {"FAILED", j.FailedAt}, {"RETRIED", j.RetriedAt}} {
			if !t.v.IsZero() {
				line(t.k, when(t.v))
			}
		}
		if e := errorText(j); e != "" {
			line("ERROR", cut(e, maxShownArgs))
		}
	}
	if iter != nil {
		line("ITERATION", iterationText(iter))
	}
	resultLines(w, result)
	stepLines(w, steps)
	if len(bt) > 0 {
		line("BACKTRACE", "")
		for i, l := range bt {
			if i == maxShownTrace {
				fmt.Fprintf(w, "  … %d more line(s) (--json prints them all)\n", len(bt)-i)
				break
			}
			fmt.Fprintf(w, "  %s\n", cut(l, 500))
		}
	}
	// Pretty-printed within bounds: a document nested 10 000 deep or megabytes long is shown
	// cut, with where to get it whole.
	// A document that is no JSON is shown escaped on one line: its line breaks are its own.
	pretty, truncated := textsafe.Pretty([]byte(rec.Raw), maxPrettyDepth, maxShownRaw)
	if !textsafe.IsJSON([]byte(rec.Raw)) {
		pretty = textsafe.Terminal(pretty)
	}
	line("RAW", "")
	fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(pretty, "\n", "\n  "))
	if truncated {
		fmt.Fprintf(w, "  (cut at %d KiB of %d bytes; exq job %s --json prints it whole)\n", maxShownRaw>>10, len(rec.Raw), textsafe.Terminal(places[0].jid()))
	}
	_, err = fmt.Fprint(a.stdout, w.String())
	return err
}

// jobShowJSON is what exq job --json prints: where the job is, the job (absent when it has
// finished), and the result it stored.
type jobShowJSON struct {
	Places []place  `json:"places"`
	Job    *jobJSON `json:"job,omitempty"`
	resultJSON
	stepsJSON
	// Iteration is an iterable job's saved state: executions, cursor (JSON), runtime_ns,
	// cancelled, done.
	Iteration *exq.IterationProgress `json:"iteration,omitempty"`
}

// iterationText is one line of an iterable job's saved state (the API bounds the cursor and
// keeps it JSON; the caller escapes the line).
func iterationText(p *exq.IterationProgress) string {
	s := fmt.Sprintf("cursor %s, run %d, %s iterating", cut(string(p.Cursor), maxShownArgs), p.Executions, p.Runtime.Round(100*time.Millisecond))
	if !p.Cancelled.IsZero() {
		s += ", cancelled " + when(p.Cancelled)
	}
	if p.Done {
		s += ", done"
	}
	return s
}

// showFinished shows a job found nowhere that stored a result: it has finished.
func (a *app) showFinished(jid string, places []place, result exq.StoredResult, steps exq.JobSteps) error {
	if a.json {
		return a.printJSON(jobShowJSON{Places: places, resultJSON: toResultJSON(result), stepsJSON: toStepsJSON(steps)})
	}
	w := &strings.Builder{}
	line := func(k string, v any) { fmt.Fprintf(w, "%-10s %v\n", k, v) }
	for _, p := range places {
		in := ""
		if p.Namespace != "" {
			in = " (namespace " + p.Namespace + ")"
		}
		line("STATE", p.String()+in)
	}
	line("JID", jid)
	resultLines(w, result)
	stepLines(w, steps)
	_, err := fmt.Fprint(a.stdout, w.String())
	return err
}

// resultLines writes a stored result for exq job: its first maxShownArgs runes, and when
// that is not all of it, how large it is.
func resultLines(w *strings.Builder, r exq.StoredResult) {
	if r.Size == 0 {
		return
	}
	text := resultText(r, maxShownArgs)
	fmt.Fprintf(w, "%-10s %s\n", "RESULT", text)
	if r.Truncated() || utf8.RuneCountInString(r.JSON) > maxShownArgs {
		fmt.Fprintf(w, "  (cut: the result is %d bytes; --json prints its first %d KiB)\n", r.Size, maxShownRaw>>10)
	}
}

// maxShownStep is how much of each step's result exq job reads (--json prints that much).
const maxShownStep = 4 << 10

// stepsJSON are the durable steps a job saved, as exq job --json prints them.
type stepsJSON struct {
	Steps      []stepJSON `json:"steps,omitempty"`
	StepsTotal int        `json:"steps_total,omitempty"`
}

// stepJSON is one saved step: its name, the start of its result's JSON (a string: a cut
// document is no JSON), its whole size, and whether it was cut.
type stepJSON struct {
	Name      string `json:"name"`
	Result    string `json:"result"`
	Bytes     int    `json:"bytes"`
	Truncated bool   `json:"truncated,omitempty"`
}

func toStepsJSON(s exq.JobSteps) stepsJSON {
	out := stepsJSON{StepsTotal: s.Total}
	for _, st := range s.Steps {
		out.Steps = append(out.Steps, stepJSON{Name: st.Name, Result: st.JSON, Bytes: st.Size, Truncated: st.Truncated()})
	}
	return out
}

// stepLines writes the steps a job saved for exq job: one line each, its name and the start
// of its result, escaped.
func stepLines(w *strings.Builder, s exq.JobSteps) {
	if s.Total == 0 {
		return
	}
	fmt.Fprintf(w, "%-10s %s\n", "STEPS", count(s.Total, "step saved", "steps saved"))
	for _, st := range s.Steps {
		text := textsafe.Terminal(clip(st.JSON, 200))
		if st.Truncated() || utf8.RuneCountInString(st.JSON) > 200 {
			text += fmt.Sprintf(" (cut: %d bytes)", st.Size)
		}
		fmt.Fprintf(w, "  %s = %s\n", textsafe.Terminal(clip(st.Name, maxShownStepName)), text)
	}
	if s.Total > len(s.Steps) {
		fmt.Fprintf(w, "  … %d more step(s) not read\n", s.Total-len(s.Steps))
	}
}

// maxShownStepName bounds a step name on a line (exq writes at most exq.MaxStepName bytes;
// another writer may write more).
const maxShownStepName = 200
