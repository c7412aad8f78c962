package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

func (a *app) cronCmd() *cobra.Command {
	list := func(cmd *cobra.Command, _ []string) error { return a.cronList(cmd.Context()) }
	c := &cobra.Command{
		Use:   "cron",
		Short: "Periodic jobs: list, history, enqueue, enable, disable, delete, add",
		Long: `Periodic jobs (exq's and sidekiq-cron's, which share their keys). Without a subcommand,
lists them: spec, queue, class, status, last and next enqueue. Periodic jobs live in one
namespace: with a list of shards, run the command once per shard.`,
		Args: nArgs(0, 0, "a subcommand: list, history, enqueue, enable, disable, delete or add"),
		RunE: list,
	}
	c.AddCommand(&cobra.Command{Use: "list", Short: "List the periodic jobs", Args: nArgs(0, 0, "no argument"), RunE: list})
	named := func(use, short string, run func(ctx context.Context, name string) error) *cobra.Command {
		return &cobra.Command{Use: use + " NAME", Short: short, Args: nArgs(1, 1, "cron "+use+" NAME"),
			ValidArgsFunction: a.complete(cronNames),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := a.cronOpen(cmd.Context()); err != nil {
					return err
				}
				return run(cmd.Context(), args[0])
			}}
	}
	c.AddCommand(
		named("history", "The last enqueues of periodic job NAME, newest first", a.cronHistory),
		named("enqueue", "Enqueue periodic job NAME's job now (its ticks are not affected)", a.cronEnqueue),
		named("enable", "Let the nodes enqueue NAME at its ticks again", func(ctx context.Context, n string) error { return a.cronStatus(ctx, n, true) }),
		named("disable", "Stop every node (and sidekiq-cron) from enqueueing NAME", func(ctx context.Context, n string) error { return a.cronStatus(ctx, n, false) }),
		named("delete", "Delete periodic job NAME and its history", a.cronDelete),
		a.cronAddCmd(),
	)
	return c
}

// cronOpen refuses a list of shards and connects.
func (a *app) cronOpen(ctx context.Context) error {
	if err := a.oneNamespace("cron"); err != nil {
		return err
	}
	return a.connect(ctx, true)
}

func (a *app) cronList(ctx context.Context) error {
	if err := a.cronOpen(ctx); err != nil {
		return err
	}
	states, err := a.api.PeriodicJobs(ctx) // sorted by name
	if err != nil {
		return err
	}
	if a.json {
		out := make([]periodicJSON, len(states))
		for i, s := range states {
			out[i] = toPeriodicJSON(s)
		}
		return a.printJSON(out)
	}
	problems := false
	for _, s := range states {
		problems = problems || s.Problem != ""
	}
	header := []string{"NAME", "SPEC", "QUEUE", "CLASS", "STATUS", "LAST", "NEXT"}
	if problems {
		header = append(header, "PROBLEM")
	}
	rows := make([][]any, len(states))
	for i, s := range states {
		status := "disabled"
		if s.Enabled {
			status = "enabled"
		}
		rows[i] = []any{s.Name, s.Spec, s.Queue, s.Class, status, when(s.LastEnqueued), when(s.Next)}
		if problems {
			rows[i] = append(rows[i], cut(s.Problem, 60))
		}
	}
	return a.table(header, rows)
}

func (a *app) cronHistory(ctx context.Context, name string) error {
	// PeriodicHistory lists nothing for an unknown name: say it is not found instead.
	if _, err := a.api.PeriodicJob(ctx, name); err != nil {
		return err
	}
	runs, err := a.api.PeriodicHistory(ctx, name) // newest first
	if err != nil {
		return err
	}
	if a.json {
		out := make([]runJSON, len(runs))
		for i, r := range runs {
			out[i] = runJSON{JID: r.JID, Enqueued: ts(r.Enqueued)}
		}
		return a.printJSON(out)
	}
	rows := make([][]any, len(runs))
	for i, r := range runs {
		rows[i] = []any{r.JID, when(r.Enqueued)}
	}
	return a.table([]string{"JID", "ENQUEUED"}, rows)
}

func (a *app) cronEnqueue(ctx context.Context, name string) error {
	jid, err := a.api.EnqueuePeriodicNow(ctx, name)
	if err != nil {
		return err
	}
	return a.say(map[string]any{"name": name, "jid": jid}, "enqueued %s from periodic job %s", jid, name)
}

func (a *app) cronStatus(ctx context.Context, name string, enable bool) error {
	var err error
	verb := "disabled"
	if enable {
		verb = "enabled"
		err = a.api.EnablePeriodic(ctx, name)
	} else {
		err = a.api.DisablePeriodic(ctx, name)
	}
	if err != nil {
		return err
	}
	return a.say(map[string]any{"name": name, "enabled": enable}, "%s periodic job %s", verb, name)
}

func (a *app) cronDelete(ctx context.Context, name string) error {
	if err := a.api.DeletePeriodic(ctx, name); err != nil {
		return err
	}
	return a.say(map[string]any{"name": name, "deleted": true}, "deleted periodic job %s", name)
}

func (a *app) cronAddCmd() *cobra.Command {
	var timezone, description string
	var disabled bool
	c := &cobra.Command{
		Use:   "add NAME SPEC QUEUE CLASS [ARGS]",
		Short: "Create a periodic job",
		Long: `Create a periodic job. SPEC is a cron line ('0 9 * * 1-5', 6 fields with seconds first, a
zone at the end), @hourly… or '@every 30s'; ARGS a JSON array (default []). Without a zone in
SPEC or --timezone, each node reads SPEC in its own local zone (TZ), as the library's
PeriodicJob and sidekiq-cron do. A CLASS that looks like JSON args or a QUEUE or CLASS that
looks like a cron line exits 2: the arguments are in the wrong order.`,
		Example: `  exq cron add nightly '0 3 * * *' reports Reports.Nightly '[1,"full"]' --timezone Europe/Paris`,
		Args:    nArgs(4, 5, "cron add NAME SPEC QUEUE CLASS [ARGS]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := checkCronOrder(args); err != nil {
				return err
			}
			raw := json.RawMessage("[]")
			if len(args) == 5 {
				if err := checkArgsJSON("ARGS", args[4]); err != nil {
					return err
				}
				raw = json.RawMessage(args[4])
			}
			p := exq.PeriodicJob{Name: args[0], Spec: args[1], Queue: args[2], Class: args[3], Args: raw,
				Timezone: timezone, Description: description, Disabled: disabled}
			if err := a.oneNamespace("cron"); err != nil {
				return err
			}
			if err := a.connect(ctx, false); err != nil {
				return err
			}
			// AddPeriodic checks p before writing: invalid input (ErrInvalidPeriodic, exit 2) writes nothing.
			if err := a.api.AddPeriodic(ctx, p); err != nil {
				return err
			}
			st, err := a.api.PeriodicJob(ctx, p.Name)
			if err != nil {
				return err
			}
			next := "disabled"
			if st.Enabled {
				next = "next at " + when(st.Next)
			}
			return a.say(toPeriodicJSON(st), "added periodic job %s (%s, %s)", st.Name, st.Spec, next)
		},
	}
	c.Flags().StringVar(&timezone, "timezone", "", "time zone of SPEC (e.g. Europe/Paris; default: each node's local zone, TZ)")
	c.Flags().StringVar(&description, "description", "", "what it is for")
	c.Flags().BoolVar(&disabled, "disabled", false, "create it disabled")
	return c
}

// checkCronOrder refuses the arguments of cron add given in another order than NAME SPEC QUEUE
// CLASS [ARGS] (QUEUE left out, so that CLASS got the args): nothing else notices, and the
// schedule would enqueue jobs of a class nobody runs.
func checkCronOrder(args []string) error {
	const order = "NAME SPEC QUEUE CLASS [ARGS]"
	if err := checkClassArg(args[3], order); err != nil {
		return err
	}
	for i, what := range map[int]string{0: "NAME", 2: "QUEUE"} {
		if v := strings.TrimSpace(args[i]); strings.HasPrefix(v, "@") || strings.Count(v, " ") >= 4 {
			return usagef("%s %q looks like a cron SPEC: the order is %s", what, args[i], order)
		}
	}
	return nil
}
