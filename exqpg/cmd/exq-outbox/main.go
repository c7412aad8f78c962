// Command exq-outbox runs exq's outbox relay, which moves jobs committed into a Postgres outbox
// table (module exqpg) to Redis, and creates that table. `exq outbox relay ARGS` runs it too.
//
//	exq-outbox migrate [--pg-url URL] [--schema S]
//	exq-outbox relay   [--pg-url URL] [--schema S] [--redis-url URL] [--namespace NS] [--batch-size N] [--migrate]
//	exq-outbox status  [--pg-url URL] [--schema S] [--json]
//
// Defaults come from the environment: $EXQPG_URL (else $DATABASE_URL) for Postgres,
// $EXQ_REDIS_URL and $EXQ_NAMESPACE for Redis, as the exq command reads them. The relay runs
// until SIGINT or SIGTERM, then finishes its round and exits 0. Exit status: 0 done; 1 failed
// (a server unreachable); 2 bad command line.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqpg"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: exq-outbox COMMAND [FLAGS]

Commands:
  migrate   create the outbox table (safe to run again)
  relay     move committed outbox rows to Redis until interrupted
  status    print the outbox's backlog, read from Postgres

Run exq-outbox COMMAND -h for its flags.
`

// errUsage marks a bad command line: exit 2.
var errUsage = errors.New("bad command line")

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("exq-outbox "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	pgURL := fs.String("pg-url", firstOf(getenv("EXQPG_URL"), getenv("DATABASE_URL")), "Postgres URL (default $EXQPG_URL, else $DATABASE_URL)")
	schema := fs.String("schema", exqpg.DefaultSchema, "schema of the outbox table")
	var err error
	switch args[0] {
	case "migrate":
		if err = parse(fs, args[1:], pgURL); err == nil {
			err = migrate(ctx, *pgURL, *schema)
		}
	case "relay":
		redisURL := fs.String("redis-url", firstOf(getenv("EXQ_REDIS_URL"), exq.DefaultRedisURL), "Redis URL (default $EXQ_REDIS_URL, else exq's default)")
		ns := fs.String("namespace", firstOf(getenv("EXQ_NAMESPACE"), exq.DefaultNamespace), "exq namespace (default $EXQ_NAMESPACE, else exq's default)")
		batch := fs.Int("batch-size", 0, "most rows per round (default 1000)")
		poll := fs.Duration("poll", 0, "safety poll interval (default 1s)")
		mig := fs.Bool("migrate", false, "create the outbox table first")
		if err = parse(fs, args[1:], pgURL); err == nil {
			err = relay(ctx, *pgURL, *redisURL, *ns, *mig, exqpg.RelayOptions{Schema: *schema, BatchSize: *batch, PollInterval: *poll,
				Logger: slog.New(slog.NewTextHandler(stderr, nil))})
		}
	case "status":
		asJSON := fs.Bool("json", false, "print JSON")
		if err = parse(fs, args[1:], pgURL); err == nil {
			err = status(ctx, *pgURL, *schema, *asJSON, stdout)
		}
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "exq-outbox: unknown command %q\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage), errors.Is(err, exqpg.ErrInvalidOptions), errors.Is(err, exqpg.ErrInvalidSchema):
		fmt.Fprintf(stderr, "exq-outbox %s: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(stderr, "exq-outbox %s: %v\n", args[0], err)
	return 1
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func parse(fs *flag.FlagSet, args []string, pgURL *string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *pgURL == "" {
		return fmt.Errorf("%w: no Postgres URL: pass --pg-url or set $EXQPG_URL", errUsage)
	}
	return nil
}

func connect(ctx context.Context, pgURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(pgURL)
	if err != nil {
		return nil, fmt.Errorf("%w: --pg-url: %v", errUsage, err)
	}
	return pgxpool.NewWithConfig(ctx, cfg) // connects lazily: a down server is retried by the relay
}

func migrate(ctx context.Context, pgURL, schema string) error {
	pool, err := connect(ctx, pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	return exqpg.Migrate(ctx, pool, schema)
}

func relay(ctx context.Context, pgURL, redisURL, ns string, mig bool, o exqpg.RelayOptions) error {
	pool, err := connect(ctx, pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if mig {
		if err := exqpg.Migrate(ctx, pool, o.Schema); err != nil {
			return err
		}
	}
	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: redisURL, Namespace: ns, Logger: o.Logger})
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := exqpg.NewRelay(pool, c, o)
	if err != nil {
		return err
	}
	o.Logger.Info("exq-outbox: relaying", "schema", o.Schema, "namespace", ns)
	return r.Run(ctx)
}

func status(ctx context.Context, pgURL, schema string, asJSON bool, stdout io.Writer) error {
	pool, err := connect(ctx, pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	r, err := exqpg.NewRelay(pool, noPush{}, exqpg.RelayOptions{Schema: schema})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := r.Status(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"backlog": s.Backlog, "failed": s.Failed,
			"oldest_age_seconds": s.OldestAge.Seconds()})
	}
	_, err = fmt.Fprintf(stdout, "backlog %d, oldest %s, failed %d\n", s.Backlog, s.OldestAge.Round(time.Millisecond), s.Failed)
	return err
}

// noPush is the pusher of a relay used only for its Status.
type noPush struct{}

func (noPush) PushRelayed(context.Context, time.Duration, []exq.RelayedJob) ([]exq.RelayResult, error) {
	return nil, errors.New("exq-outbox status pushes nothing")
}
