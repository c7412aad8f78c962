package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

func (a *app) processesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "processes",
		Short: "Live nodes: exq, Exq and Sidekiq",
		Long: `Live nodes of every runtime (exq, Exq, Sidekiq): host, pid, queues, concurrency, busy jobs,
quiet, when it started, its memory (RSS, as the node reports it) and its last beat.`,
		Args: nArgs(0, 0, "no argument"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			ps, err := a.view().Processes(ctx)
			if err != nil {
				return err
			}
			if a.json {
				out := make([]processJSON, len(ps))
				for i, p := range ps {
					out[i] = toProcessJSON(p)
				}
				return a.printJSON(out)
			}
			rows := make([][]any, len(ps))
			for i, p := range ps {
				quiet, rss := "", "-"
				if p.Quiet {
					quiet = "quiet"
				}
				if p.RSSKB > 0 {
					rss = fmt.Sprintf("%.1f MB", float64(p.RSSKB)/1024)
				}
				rows[i] = []any{p.Identity, p.Runtime, p.Hostname, p.PID, strings.Join(p.Queues, ","),
					fmt.Sprintf("%d/%d", p.Busy, p.Concurrency), quiet, when(p.StartedAt), rss, ago(p.Beat) + " ago"}
			}
			return a.table([]string{"NODE", "RUNTIME", "HOST", "PID", "QUEUES", "BUSY", "STATE", "STARTED", "RSS", "BEAT"}, rows)
		},
	}
}

func (a *app) busyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "busy",
		Short: "Jobs running now, on every node",
		Long:  `Jobs running now on every live node (of every namespace given), oldest run first, with their args.`,
		Args:  nArgs(0, 0, "no argument"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			var busy []exq.BusyJob
			for _, api := range a.shards() {
				b, err := api.BusyJobs(ctx)
				if err != nil {
					return err
				}
				busy = append(busy, b...)
			}
			sort.SliceStable(busy, func(i, j int) bool { return busy[i].RunAt.Before(busy[j].RunAt) })
			if a.json {
				out := make([]busyJSON, len(busy))
				for i, b := range busy {
					out[i] = busyJSON{Node: b.Node, RunID: b.RunID, Queue: b.Queue, RunAt: ts(b.RunAt), Progress: toProgressJSON(b.Progress),
						Job: toListedJobJSON(b.JobRecord)}
				}
				return a.printJSON(out)
			}
			rows := make([][]any, len(busy))
			for i, b := range busy {
				jid, class, args := b.Ref(), "<undecodable>", cut(b.Raw, 50)
				if j, err := b.Job(); err == nil {
					jid, class, args = j.JID, j.Class, cut(string(j.Args), 50)
				}
				progress := "-"
				if p := b.Progress; p != nil {
					progress = fmt.Sprintf("%.0f%%", 100*p.Fraction)
					if p.Message != "" {
						progress += " " + cut(p.Message, 40)
					}
				}
				rows[i] = []any{b.Node, b.Queue, jid, class, args, when(b.RunAt), ago(b.RunAt), progress}
			}
			return a.table([]string{"NODE", "QUEUE", "JID", "CLASS", "ARGS", "STARTED", "FOR", "PROGRESS"}, rows)
		},
	}
}

func (a *app) signalCmd(name, sig string) *cobra.Command {
	what := map[string]string{
		"TSTP": "Ask NODE to fetch no more jobs (TSTP); its running jobs finish",
		"TERM": "Ask NODE to go quiet and stop (TERM)",
	}[sig]
	return &cobra.Command{
		Use:   name + " NODE",
		Short: what,
		Long: what + `. The node acts on it at its next ping (within 5 s); exq, Exq and Sidekiq
nodes all honour it. With several namespaces, NODE is signalled in each where it is live.`,
		Args:              nArgs(1, 1, name+" NODE"),
		ValidArgsFunction: a.complete(nodeNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, node := cmd.Context(), args[0]
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			var live []*exq.API
			for _, api := range a.shards() {
				ps, err := api.Processes(ctx)
				if err != nil {
					return err
				}
				for _, p := range ps {
					if p.Identity == node {
						live = append(live, api)
						break
					}
				}
			}
			if len(live) == 0 {
				return fmt.Errorf("no live node %q (see exq processes)", node)
			}
			for _, api := range live {
				if err := api.SendSignal(ctx, node, sig); err != nil {
					return err
				}
			}
			return a.say(map[string]any{"node": node, "signal": sig},
				"sent %s to %s; it acts on it at its next ping (within 5 s)", sig, node)
		},
	}
}

func (a *app) cancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel JID",
		Short: "Cancel job JID, running or waiting (it goes to dead)",
		Long: `Cancel job JID. A running job: its node cancels the job's context and the job goes to the dead
set with error_message "Canceled" (an iterable job stops at its next item). A job running on a
Sidekiq node gets the cancellation flag of its iteration state, which a Sidekiq 7.3 iterable job
honours at its next save; the command fails when the job has saved no such state (a plain Sidekiq
job runs to its end). A job running on an Exq node is not signalled, and the command fails naming
the node. A job waiting in a queue, the schedule or the retry set moves to the dead set and never runs.`,
		Args: nArgs(1, 1, "cancel JID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, jid := cmd.Context(), args[0]
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			for i, api := range a.shards() {
				places, err := findRunning(cmd, api, jid)
				if err != nil {
					return err
				}
				if len(places) == 0 {
					continue
				}
				p := places[0]
				if p.Runtime == "Sidekiq" {
					return a.cancelOnSidekiq(ctx, i, api, jid, p.Node)
				}
				if p.Runtime != "exq" {
					return fmt.Errorf("job %s runs on node %s (%s): only exq nodes honour cancel, so none was sent", jid, p.Node, runtimeName(p.Runtime))
				}
				node, err := api.CancelJob(ctx, jid)
				if errors.Is(err, exq.ErrJobNotFound) {
					return fmt.Errorf("%w: job %s finished before it could be cancelled", exq.ErrJobNotFound, jid)
				}
				if err != nil {
					return err
				}
				v := map[string]any{"jid": jid, "node": node}
				in := a.where(i, v)
				return a.say(v, "asked %s to cancel %s%s; it goes to dead as Canceled", node, jid, in)
			}
			for i, api := range a.shards() { // not running: waiting in a queue, the schedule or retries
				node, err := api.CancelJob(ctx, jid)
				if errors.Is(err, exq.ErrJobNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				v := map[string]any{"jid": jid, "node": node}
				in := a.where(i, v)
				if node != "" { // started meanwhile
					return a.say(v, "asked %s to cancel %s%s; it goes to dead as Canceled", node, jid, in)
				}
				return a.say(v, "cancelled %s%s: it was waiting, and is in the dead set now (an iterable job between two runs stops at its next start)", jid, in)
			}
			return fmt.Errorf("%w: %s is not running on any node (see exq job %s)", exq.ErrJobNotFound, jid, jid)
		},
	}
}

// cancelOnSidekiq cancels job jid running on Sidekiq node node: Sidekiq has no signal for it,
// but a Sidekiq 7.3 iterable job stops at its next save once the cancellation flag of its
// iteration state is set (API.CancelJob sets it). A job with a saved iteration state is such a
// job; one without may be an iterable job that has not saved yet (Sidekiq saves every 5 s), so
// the flag is left set for it, and the command fails, saying that a plain job runs to its end.
func (a *app) cancelOnSidekiq(ctx context.Context, shard int, api *exq.API, jid, node string) error {
	if _, err := api.CancelJob(ctx, jid); err != nil && !errors.Is(err, exq.ErrJobNotFound) {
		return err
	}
	state, ok, err := api.IterationProgress(ctx, jid)
	if err != nil {
		return err
	}
	if !ok || state.Executions == 0 { // the flag alone is no saved state

		return fmt.Errorf("job %s runs on node %s (Sidekiq) and has saved no iteration state: Sidekiq stops only an iterable job (Sidekiq 7.3 or later) at its next save, so the cancellation flag is set for that case; any other job runs to its end", jid, node)
	}
	v := map[string]any{"jid": jid, "node": node}
	in := a.where(shard, v)
	return a.say(v, "set the cancellation flag of %s%s, an iterable job running on Sidekiq node %s: it stops at its next save (within about 5 s) and is not retried", jid, in, node)
}

// findRunning is where job jid runs in one namespace, with the runtime of its node.
func findRunning(cmd *cobra.Command, api *exq.API, jid string) ([]place, error) {
	ctx := cmd.Context()
	busy, err := api.BusyJobs(ctx)
	if err != nil {
		return nil, err
	}
	var out []place
	for _, b := range busy {
		if j, err := b.Job(); err != nil || j.JID != jid {
			continue
		}
		runtimes, err := nodeRuntimes(ctx, api)
		if err != nil {
			return nil, err
		}
		out = append(out, place{State: "running", Node: b.Node, Runtime: runtimes[b.Node]})
	}
	return out, nil
}

func runtimeName(r string) string {
	if r == "" {
		return "not live any more"
	}
	return r
}
