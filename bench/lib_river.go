package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// River (riverqueue/river with riverpgxv5) is the Postgres peer: what Go users pick when they
// leave Redis. It runs on a database of its own, created (with River's migrations, run here
// through rivermigrate) when the bench starts and dropped when it ends; every run truncates
// river_job first. "Defaults" is River's Config with its defaults (FetchCooldown 100 ms,
// FetchPollInterval 1 s) and pgxpool's default pool (max(4, CPUs) connections); tuned sets
// FetchCooldown 1 ms and FetchPollInterval 10 ms and sizes the pool to the callers or the
// concurrency. Jobs carry the two ints as River's JSON args struct, read from job.Args, as
// River's README teaches.

// riverEnv is the bench's own River database.
type riverEnv struct {
	admin *pgx.Conn     // on the server's maintenance database: CREATE and DROP DATABASE
	pool  *pgxpool.Pool // on the bench's database: truncate and checks
	url   string        // of the bench's database
	name  string
}

// openRiver creates a uniquely named database on the server of base (a postgres:// URL of a
// database that exists, such as "postgres") and runs River's migrations in it.
func openRiver(ctx context.Context, base string) (*riverEnv, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	admin, err := pgx.Connect(cctx, base)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", redactPG(base), err)
	}
	name := fmt.Sprintf("exqbench_river_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := admin.Exec(cctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close(ctx)
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(base)
	if err != nil {
		_ = admin.Close(ctx)
		return nil, err
	}
	u.Path = "/" + name
	env := &riverEnv{admin: admin, url: u.String(), name: name}
	if env.pool, err = pgxpool.New(ctx, env.url); err != nil {
		env.close()
		return nil, err
	}
	m, err := rivermigrate.New(riverpgxv5.New(env.pool), &rivermigrate.Config{Logger: discardLogger})
	if err == nil {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		env.close()
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	return env, nil
}

// close drops the bench's database.
func (r *riverEnv) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.pool != nil {
		r.pool.Close()
	}
	if _, err := r.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+r.name+" WITH (FORCE)"); err != nil {
		logf("river: could not drop database %s: %v", r.name, err)
	}
	_ = r.admin.Close(ctx)
}

// redactPG hides a password in a postgres URL.
func redactPG(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func (r *riverEnv) newPool(ctx context.Context, size int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(r.url)
	if err != nil {
		return nil, err
	}
	if size > 0 {
		cfg.MaxConns = int32(size)
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

func riverTargets(env *riverEnv) []*target {
	mk := func(name, knob string, cooldown, poll time.Duration, size func(n int) int) *target {
		return &target{
			Name: name, Lib: "river", Knob: knob, Peer: true,
			reset: func(ctx context.Context) error {
				_, err := env.pool.Exec(ctx, "TRUNCATE river_job")
				return err
			},
			drained: func(ctx context.Context, n int) error {
				var completed, total int
				err := env.pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FROM river_job").Scan(&completed, &total)
				if err != nil {
					return err
				}
				if completed != n || total != n {
					return fmt.Errorf("%s: after the drain and Stop: %d of %d jobs completed (want %d of %d)", name, completed, total, n, n)
				}
				return nil
			},
			newProducer: func(ctx context.Context, callers int) (producer, error) {
				pool, err := env.newPool(ctx, size(callers))
				if err != nil {
					return nil, errorf("river", "pool", err)
				}
				c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: discardLogger})
				if err != nil {
					pool.Close()
					return nil, errorf("river", "insert-only client", err)
				}
				return &riverProducer{c: c, pool: pool}, nil
			},
			newConsumer: func(ctx context.Context, c int, onJob func(i, at int64)) (consumer, error) {
				pool, err := env.newPool(ctx, size(c))
				if err != nil {
					return nil, errorf("river", "pool", err)
				}
				workers := river.NewWorkers()
				river.AddWorker(workers, &riverWorker{onJob: onJob})
				cl, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
					Queues:            map[string]river.QueueConfig{queueName: {MaxWorkers: c}},
					Workers:           workers,
					FetchCooldown:     cooldown,
					FetchPollInterval: poll,
					Logger:            discardLogger,
				})
				if err == nil {
					err = cl.Start(context.WithoutCancel(ctx))
				}
				if err != nil {
					pool.Close()
					return nil, errorf("river", "start client", err)
				}
				return &riverConsumer{c: cl, pool: pool}, nil
			},
		}
	}
	return []*target{
		mk("river", "", 0, 0, func(int) int { return 0 }),
		mk("river (tuned)", "FetchCooldown 100 ms → 1 ms; FetchPollInterval 1 s → 10 ms; pgxpool MaxConns max(4, CPUs) → callers/concurrency + 10",
			time.Millisecond, 10*time.Millisecond, func(n int) int { return n + 10 }),
	}
}

// riverArgs are a job's args: River stores them as JSON.
type riverArgs struct {
	I  int64 `json:"i"`
	At int64 `json:"at"`
}

func (riverArgs) Kind() string { return strings.ToLower(jobClass) }

type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	onJob func(i, at int64)
}

func (w *riverWorker) Work(_ context.Context, job *river.Job[riverArgs]) error {
	w.onJob(job.Args.I, job.Args.At)
	return nil
}

type riverProducer struct {
	c    *river.Client[pgx.Tx]
	pool *pgxpool.Pool
}

func (p *riverProducer) enqueue(ctx context.Context, i int64) error {
	_, err := p.c.Insert(ctx, riverArgs{I: i, At: nowNS()}, nil)
	return err
}

func (p *riverProducer) enqueueBatch(ctx context.Context, is []int64) error {
	params := make([]river.InsertManyParams, len(is))
	for k, i := range is {
		params[k] = river.InsertManyParams{Args: riverArgs{I: i, At: nowNS()}}
	}
	_, err := p.c.InsertMany(ctx, params)
	return err
}

func (p *riverProducer) close() error {
	p.pool.Close()
	return nil
}

type riverConsumer struct {
	c    *river.Client[pgx.Tx]
	pool *pgxpool.Pool
}

func (c *riverConsumer) stop(ctx context.Context) error {
	err := c.c.Stop(ctx)
	c.pool.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("river: stop: %w", err)
	}
	return err
}

// openPG opens River's database, or says why River cannot run.
func (b *bench) openPG(ctx context.Context) (*riverEnv, error) {
	if b.cfg.pg == "" {
		return nil, errors.New("-pg is empty")
	}
	env, err := openRiver(ctx, b.cfg.pg)
	if err != nil {
		return nil, fmt.Errorf("no usable Postgres at %s (%w); River's rows are left out", redactPG(b.cfg.pg), err)
	}
	logf("river: database %s created and migrated", env.name)
	return env, nil
}
