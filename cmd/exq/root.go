package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/redact"
	"github.com/exqgo/exq/internal/textsafe"
)

// defaultRedisURL is the Redis used without --redis-url and $EXQ_REDIS_URL (exq's default).
// A variable, so that the tests can point a build at a private server (-ldflags -X).
var defaultRedisURL = "redis://127.0.0.1:6379/0"

// app is one invocation: its flags, where it prints, and its connection once made.
type app struct {
	env
	// rawStdout and rawStderr are the streams as given, for the command's own control
	// sequences (the progress bar, --watch's clear screen); stdout and stderr escape them.
	rawStdout, rawStderr io.Writer
	redisURL             string
	namespace            string
	nsFrom               string // where the namespace came from, as the write notice says it
	json                 bool
	timeout              time.Duration

	nss     []string        // the namespaces, in --namespace order
	api     *exq.API        // one namespace; nil with several or before connect
	sharded *exq.ShardedAPI // several namespaces; nil with one
	opts    exq.ClientOptions
	cancel  context.CancelFunc
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "exq",
		Short: "Operate the jobs in a Redis shared by exq, Exq and Sidekiq nodes",
		Long: `exq operates the jobs in a Redis shared by exq, Exq and Sidekiq nodes: counters, queues,
one job wherever it is, retry/scheduled/dead jobs, processes, periodic jobs, signals to nodes.

Tables are for people; --json prints one snake_case schema for scripts (docs/operating.md, "JSON output").
Exit status: 0 done; 1 failed (Redis unreachable, not found, not confirmed); 2 bad command
line or input (nothing was written).`,
		SilenceErrors:      true,
		SilenceUsage:       true,
		PersistentPreRunE:  a.prepare,
		PersistentPostRunE: a.sayWhereWritten,
	}
	f := root.PersistentFlags()
	f.StringVar(&a.redisURL, "redis-url", "", "Redis to use "+a.defaultHelp("EXQ_REDIS_URL", defaultRedisURL))
	f.StringVarP(&a.namespace, "namespace", "n", exq.DefaultNamespace,
		`key namespace ("" for none), or a comma-separated list of shards such as '{exq0},{exq1}' `+a.defaultHelp("EXQ_NAMESPACE", exq.DefaultNamespace))
	// The help names the default itself, once: pflag would add a second, fixed (default "exq").
	f.Lookup("namespace").DefValue = ""
	f.BoolVar(&a.json, "json", false, "print JSON for scripts instead of tables")
	f.DurationVar(&a.timeout, "timeout", time.Minute, "time limit for the whole command")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.AddGroup(&cobra.Group{ID: "look", Title: "Look:"}, &cobra.Group{ID: "act", Title: "Act:"})
	for _, c := range []*cobra.Command{a.statsCmd(), a.queuesCmd(), a.keysCmd(), a.jobsCmd(), a.setCmd(exq.RetrySet),
		a.setCmd(exq.ScheduledSet), a.setCmd(exq.DeadSet), a.jobCmd(), a.processesCmd(), a.busyCmd(), a.cronCmd(),
		a.batchCmd(), a.workflowCmd(), a.metricsCmd()} {
		c.GroupID = "look"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{a.enqueueCmd(), a.requeueCmd(), a.deleteCmd(), a.signalCmd("quiet", "TSTP"),
		a.signalCmd("stop", "TERM"), a.cancelCmd(), a.webCmd(), a.outboxCmd()} {
		c.GroupID = "act"
		root.AddCommand(c)
	}
	markWrites(root)
	strictCompletion(root)
	return root
}

// defaultHelp is a global flag's default as its help says it: the value of the environment
// variable that stands for the flag when it is set (a URL with its password masked), else
// the built-in default.
func (a *app) defaultHelp(envVar, builtin string) string {
	if v := a.getenv(envVar); v != "" {
		if envVar == "EXQ_REDIS_URL" {
			v = redact.URL(v)
		}
		return fmt.Sprintf("(default %q, from $%s)", v, envVar)
	}
	return fmt.Sprintf("(default %q; $%s overrides it)", builtin, envVar)
}

// writes marks a command that changes what Redis holds: after it succeeds, the server and
// namespace it went to are said on stderr (sayWhereWritten).
const writes = "writes"

// writeCommands are the commands that change what Redis holds (exq web changes it only on a
// person's click, and says where it serves from as it starts).
var writeCommands = []string{
	"exq enqueue", "exq requeue", "exq delete", "exq quiet", "exq stop", "exq cancel",
	"exq queues pause", "exq queues resume", "exq keys pause", "exq keys resume",
	"exq cron add", "exq cron delete", "exq cron disable", "exq cron enable", "exq cron enqueue",
}

// markWrites annotates the write commands; it panics on one that does not exist, so that a
// renamed command cannot silently lose its notice.
func markWrites(root *cobra.Command) {
	byPath := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		byPath[c.CommandPath()] = c
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, p := range writeCommands {
		c, ok := byPath[p]
		if !ok {
			panic("exq: markWrites: no command " + p)
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[writes] = "true"
	}
}

// sayWhereWritten says on stderr, after a write command succeeded, which server (password
// masked) and namespace it went to and where each came from: a write given no --redis-url or
// --namespace would otherwise go quietly to the defaults. Stdout keeps only the command's own
// output (a jid), for scripts.
func (a *app) sayWhereWritten(cmd *cobra.Command, _ []string) error {
	if cmd.Annotations[writes] == "" || len(a.nss) == 0 {
		return nil
	}
	u, from := a.target()
	quoted := make([]string, len(a.nss))
	for i, ns := range a.nss {
		quoted[i] = fmt.Sprintf("%q", ns)
	}
	what := "namespace " + quoted[0]
	if len(quoted) > 1 {
		what = "namespaces " + strings.Join(quoted, ", ")
	}
	_, err := fmt.Fprintf(a.stderr, "%s: sent to %s (%s), %s (%s)\n", cmd.CommandPath(), redact.URL(u), from, what, a.nsFrom)
	return err
}

// prepare checks the global flags and sets the command's time limit, before any command runs.
func (a *app) prepare(cmd *cobra.Command, _ []string) error {
	a.nsFrom = "--namespace"
	if f := cmd.Flags().Lookup("namespace"); f != nil && !f.Changed {
		a.nsFrom = "the default: no --namespace, no $EXQ_NAMESPACE"
		if ns := a.getenv("EXQ_NAMESPACE"); ns != "" {
			a.namespace = ns // as $EXQ_REDIS_URL stands for --redis-url; -n "" still means none
			a.nsFrom = "$EXQ_NAMESPACE"
		}
	}
	nss, err := parseNamespaces(a.namespace)
	if err != nil {
		return err
	}
	a.nss = nss
	if a.timeout <= 0 {
		return usagef("--timeout must be positive, got %s", a.timeout)
	}
	if w := cmd.Flags().Lookup("watch"); w != nil && w.Changed || cmd.Annotations[untimed] != "" {
		return nil // stats --watch and web run until interrupted; each step has its own limit
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
	a.cancel = cancel
	cmd.SetContext(ctx)
	return nil
}

// parseNamespaces splits --namespace: one namespace (possibly "", for none), or a
// comma-separated list of distinct, non-empty shards.
func parseNamespaces(s string) ([]string, error) {
	if !strings.Contains(s, ",") {
		return []string{s}, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, ns := range strings.Split(s, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			return nil, usagef("--namespace %q: a namespace in the list is empty", s)
		}
		if seen[ns] {
			return nil, usagef("--namespace %q: %q is listed twice", s, ns)
		}
		seen[ns] = true
		out = append(out, ns)
	}
	return out, nil
}

// oneNamespace refuses a command (or mode) that works on one namespace when given several.
func (a *app) oneNamespace(what string) error {
	if len(a.nss) > 1 {
		return usagef("%s works on one namespace; pass a single --namespace (run it once per shard)", what)
	}
	return nil
}

// target is the Redis URL to use and where it came from.
func (a *app) target() (u, from string) {
	switch {
	case a.redisURL != "":
		return a.redisURL, "--redis-url"
	case a.getenv("EXQ_REDIS_URL") != "":
		return a.getenv("EXQ_REDIS_URL"), "$EXQ_REDIS_URL"
	}
	return defaultRedisURL, "the default: no --redis-url, no $EXQ_REDIS_URL"
}

// connect opens the API. Commands call it only once their input is known to be good, so bad
// input never reaches Redis. With checkEmpty it warns when the namespace holds nothing at all.
func (a *app) connect(ctx context.Context, checkEmpty bool) error {
	u, _ := a.target()
	a.opts = exq.ClientOptions{RedisURL: u, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var err error
	if len(a.nss) > 1 {
		a.sharded, err = exq.NewShardedAPI(ctx, a.opts, exq.ShardOptions{Namespaces: a.nss})
	} else {
		a.opts.Namespace, a.opts.NoNamespace = a.nss[0], a.nss[0] == ""
		a.api, err = exq.NewAPI(ctx, a.opts)
	}
	if err != nil {
		return err
	}
	if checkEmpty {
		return a.warnIfEmpty(ctx)
	}
	return nil
}

func (a *app) close() {
	if a.cancel != nil {
		a.cancel()
	}
	if a.sharded != nil {
		_ = a.sharded.Close()
	}
	if a.api != nil {
		_ = a.api.Close()
	}
}

// shards is the API of each namespace, in --namespace order (one for a single namespace).
func (a *app) shards() []*exq.API {
	if a.sharded != nil {
		return a.sharded.Shards()
	}
	return []*exq.API{a.api}
}

// view is what stats, queues and processes read: one namespace, or the sum over shards.
type view interface {
	Overview(ctx context.Context) (exq.Overview, error)
	QueueStates(ctx context.Context) ([]exq.QueueState, error)
	Processes(ctx context.Context) ([]exq.Process, error)
	PauseQueue(ctx context.Context, q string) error
	ResumeQueue(ctx context.Context, q string) error
}

func (a *app) view() view {
	if a.sharded != nil {
		return a.sharded
	}
	return a.api
}

// warnIfEmpty says on stderr, naming the URL (password masked) and the namespace, when a
// namespace holds no queue, job, process, counter or periodic job: a wrong --namespace or
// --redis-url otherwise shows zeros that look like an idle system.
func (a *app) warnIfEmpty(ctx context.Context) error {
	for i, api := range a.shards() {
		// Only a namespace that reads as empty is warned about. A read that fails (a stored
		// key of another type) is not this check's to report: the command reports what it
		// reads itself, and one bad key must not fail every command (exq batch show failed
		// when one periodic job's key was a string).
		o, err1 := api.Overview(ctx)
		qs, err2 := api.QueueStates(ctx)
		crons, err3 := api.PeriodicJobs(ctx)
		if err := errors.Join(err1, err2, err3); err != nil {
			if ctx.Err() != nil {
				return err
			}
			continue
		}
		if o != (exq.Overview{}) || len(qs) > 0 || len(crons) > 0 {
			continue
		}
		u, from := a.target()
		a.warnf("namespace %q at %s (%s) holds no exq, Exq or Sidekiq keys: no queue, job, process, counter or periodic job; check --namespace and --redis-url",
			a.nss[i], redact.URL(u), from)
	}
	return nil
}

// warnf writes one warning line on stderr: what it names from Redis (queue names) cannot
// break the line, and the line stops at maxWarning characters.
func (a *app) warnf(format string, args ...any) {
	fmt.Fprintf(a.stderr, "exq: warning: %s\n", textsafe.Terminal(clip(fmt.Sprintf(format, args...), maxWarning)))
}

// maxWarning bounds a warning line, in characters (one lists the known queues).
const maxWarning = 2000

// where names the shard something was found in: "" for a single namespace, else
// " (namespace NS)"; it adds "namespace" to v for JSON.
func (a *app) where(shard int, v map[string]any) string {
	if a.sharded == nil {
		return ""
	}
	v["namespace"] = a.nss[shard]
	return fmt.Sprintf(" (namespace %s)", a.nss[shard])
}

// nArgs checks the number of positional arguments, as a usage error naming the form.
func nArgs(minN, maxN int, form string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < minN || len(args) > maxN {
			return usagef("want %s, got %d argument(s)", form, len(args))
		}
		return nil
	}
}

// completionShells are the shells cobra's completion command writes scripts for.
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// strictCompletion makes "exq completion SHELL" fail (exit 2, naming the shells) for a shell
// it has no script for, where cobra prints the help and exits 0: a script that pipes
// "exq completion tcsh" into a file would otherwise install the help text.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("give a shell: %s", strings.Join(completionShells, ", "))
			}
			return usagef("no script for shell %q; supported shells: %s", args[0], strings.Join(completionShells, ", "))
		}
		c.RunE = func(*cobra.Command, []string) error { return nil } // only reached through Args, which refuses
	}
}
