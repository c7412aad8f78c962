// Command exq operates the jobs in a Redis shared by exq, Exq and Sidekiq nodes: counters,
// queues, retry/scheduled/dead jobs, processes, and signals to nodes.
//
//	exq [--redis-url URL] [--namespace NS[,NS…]] [--json] COMMAND [ARGS]
//
// Run `exq --help` for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/exqgo/exq"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // Redis, a job or periodic job was not found, or a periodic job exists
	exitUsage = 2 // bad command line or bad input
)

// usageError is a bad command line or bad input: exit 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

const help = `exq operates the jobs in a Redis shared by exq, Exq and Sidekiq nodes.

Usage:
  exq [global flags] COMMAND [ARGS] [flags]

Global flags:
  --redis-url URL   Redis to use (default $EXQ_REDIS_URL, else redis://127.0.0.1:6379/0)
  --namespace NS    key namespace (default "exq"; "" for none), or a comma-separated list of
                    shards, e.g. '{exq0},{exq1},{exq2}' (see "Several namespaces" below)
  --json            print JSON for scripts instead of tables
  --timeout D       time limit for the whole command (default 1m)

Commands:
  stats                      counters, processes and job counts at a glance
  queues                     every queue: its size, whether it is paused, its global limit
                             and the slots in use (LIMIT 3/5), its rate and the jobs
                             started within the rate's window (STARTED)
  queues pause QUEUE         pause QUEUE on every exq node: running jobs finish, no more are fetched
  queues resume QUEUE        let every node fetch from QUEUE again
  jobs QUEUE                 jobs waiting in QUEUE, next to run last  [--limit N --offset N --oldest]
  retries                    jobs waiting to be retried, soonest first [--limit N --offset N]
  scheduled                  jobs scheduled for later, soonest first   [--limit N --offset N]
  dead                       dead jobs, most recent first              [--limit N --offset N]
  retry JID                  run a retry, scheduled or dead job now (moved to its queue)
  retry --all [--set S]      run every job of set S now (dead, retry or schedule; default dead)
  delete JID [--set S]       delete a job from retry, schedule or dead (default: wherever it is)
  delete --all --set S       delete every job of set S
  delete --queue QUEUE       delete a queue and its waiting jobs
  enqueue QUEUE CLASS ARGS   enqueue a job; ARGS is a JSON array, e.g. '[42,"welcome"]'
                             [--in 10m | --at 2030-01-02T15:04:05Z] [--max-retries N] [--jid JID]
  processes                  live nodes (exq, Exq and Sidekiq)
  busy                       jobs running now, on every node
  quiet NODE                 ask NODE to fetch no more jobs (TSTP)
  stop NODE                  ask NODE to go quiet and stop (TERM)
  cancel JID                 cancel running job JID (it goes to dead as "Canceled")
  cron [list]                periodic jobs: spec, queue, class, status, last and next enqueue
  cron history NAME          the last enqueues of periodic job NAME, newest first
  cron enqueue NAME          enqueue periodic job NAME's job now (its ticks are not affected)
  cron enable NAME           let the nodes enqueue NAME at its ticks again
  cron disable NAME          stop every node (and sidekiq-cron) from enqueueing NAME
  cron delete NAME           delete periodic job NAME and its history
  cron add NAME SPEC QUEUE CLASS [ARGS]
                             create a periodic job; SPEC is a cron line ('0 9 * * 1-5', 6 fields
                             with seconds first, a zone at the end), @hourly… or '@every 30s';
                             ARGS a JSON array (default [])
                             [--timezone ZONE] [--description TEXT] [--disabled]

Several namespaces (shards): stats, queues, processes and busy sum or merge every shard
(queues sums slots in use and starts, but a queue's limit and rate apply in each shard);
retry JID, delete JID and cancel JID look for the job in each shard; quiet and stop signal
the node in every shard where it is live. jobs, retries, scheduled, dead, enqueue, cron,
retry --all, delete --all and delete --queue work on one namespace: they refuse (exit 2),
so run them with a single --namespace per shard.

Bulk commands (retry --all) show a progress bar on stderr.
Exit status: 0 done, 1 failed (Redis, or the job or periodic job was not found, or the
periodic job exists already), 2 bad command line or input.
`

// cli is one invocation: the API, where to print, how.
type cli struct {
	api     *exq.API        // one namespace; nil with several
	sharded *exq.ShardedAPI // several namespaces; nil with one
	nss     []string        // the namespaces, in --namespace order
	opts    exq.ClientOptions
	out     io.Writer
	errOut  io.Writer
	json    bool
}

// view is what stats, queues and processes read: one namespace, or the sum over shards.
type view interface {
	Overview(ctx context.Context) (exq.Overview, error)
	QueueStates(ctx context.Context) ([]exq.QueueState, error)
	Processes(ctx context.Context) ([]exq.Process, error)
}

func (c *cli) view() view {
	if c.sharded != nil {
		return c.sharded
	}
	return c.api
}

// shards is the API of each namespace, in --namespace order (one for a single namespace).
func (c *cli) shards() []*exq.API {
	if c.sharded != nil {
		return c.sharded.Shards()
	}
	return []*exq.API{c.api}
}

func (c *cli) close() {
	if c.sharded != nil {
		_ = c.sharded.Close()
	} else {
		_ = c.api.Close()
	}
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
			return nil, fmt.Errorf("--namespace %q: a namespace in the list is empty", s)
		}
		if seen[ns] {
			return nil, fmt.Errorf("--namespace %q: %q is listed twice", s, ns)
		}
		seen[ns] = true
		out = append(out, ns)
	}
	return out, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("exq", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	redisURL := global.String("redis-url", "", "")
	namespace := global.String("namespace", exq.DefaultNamespace, "")
	asJSON := global.Bool("json", false, "")
	timeout := global.Duration("timeout", time.Minute, "")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return exitOK
		}
		fmt.Fprintf(stderr, "exq: %v (see exq --help)\n", err)
		return exitUsage
	}
	rest := global.Args()
	if len(rest) == 0 || rest[0] == "help" {
		fmt.Fprint(stdout, help)
		if len(rest) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "exq: unknown command %q (see exq --help)\n", rest[0])
		return exitUsage
	}
	nss, err := parseNamespaces(*namespace)
	if err != nil {
		fmt.Fprintf(stderr, "exq: %v (see exq --help)\n", err)
		return exitUsage
	}
	if len(nss) > 1 && !cmd.sharded {
		fmt.Fprintf(stderr, "exq %s: %s works on one namespace; pass a single --namespace (run it once per shard)\n", rest[0], rest[0])
		return exitUsage
	}
	url := *redisURL
	if url == "" {
		url = getenv("EXQ_REDIS_URL")
	}
	opts := exq.ClientOptions{RedisURL: url}
	if len(nss) == 1 {
		opts.Namespace = nss[0]
		opts.NoNamespace = nss[0] == ""
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var opened *cli
	open := opener{sharded: len(nss) > 1, connect: func() (*cli, error) {
		c := &cli{nss: nss, opts: opts, out: stdout, errOut: stderr, json: *asJSON}
		var err error
		if len(nss) > 1 {
			c.sharded, err = exq.NewShardedAPI(ctx, opts, exq.ShardOptions{Namespaces: nss})
		} else {
			c.api, err = exq.NewAPI(ctx, opts)
		}
		if err != nil {
			return nil, err
		}
		opened = c
		return opened, nil
	}}
	err = cmd.parse(ctx, rest[1:], open)
	if opened != nil {
		opened.close()
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "exq %s: %s\n", rest[0], strings.TrimPrefix(err.Error(), "exq: "))
	var u usageError
	if errors.As(err, &u) || errors.Is(err, exq.ErrInvalidJob) || errors.Is(err, exq.ErrInvalidOptions) || errors.Is(err, exq.ErrInvalidQueue) ||
		errors.Is(err, exq.ErrInvalidPeriodic) {
		return exitUsage
	}
	return exitError
}
