// Command rivertx measures River's transactional insert, the peer of exq's outbox (module
// exqpg, docs/outbox.md): one goroutine commits transactions of one job each (River's
// InsertTx plus a statement of the application's own), back to back, and a River client runs
// them; a job's latency is from its commit's return to its worker's start. It runs on a
// database of its own, created on -pg's server and dropped at the end. exqpg's
// BenchmarkCommitToStart measures the same loop through the outbox:
//
//	go run ./rivertx -n 3000                 # River tuned (FetchCooldown 1 ms, FetchPollInterval 10 ms)
//	go run ./rivertx -n 3000 -tuned=false    # River's defaults
//	cd ../exqpg && go test -run '^$' -bench ToStart -benchtime 3000x .
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct {
	I int `json:"i"`
}

func (noopArgs) Kind() string { return "noop" }

// startWorker records when each job started, by its I.
type startWorker struct {
	river.WorkerDefaults[noopArgs]
	mu      sync.Mutex
	started map[int]time.Time
}

func (w *startWorker) Work(_ context.Context, j *river.Job[noopArgs]) error {
	now := time.Now()
	w.mu.Lock()
	w.started[j.Args.I] = now
	w.mu.Unlock()
	return nil
}

func (w *startWorker) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.started)
}

func main() {
	pg := flag.String("pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "a Postgres database URL; the command creates and drops a database of its own on that server")
	n := flag.Int("n", 3000, "transactions (one job each)")
	tuned := flag.Bool("tuned", true, "FetchCooldown 1 ms and FetchPollInterval 10 ms instead of River's defaults (100 ms, 1 s)")
	flag.Parse()
	if *n < 1 {
		log.Fatalf("-n must be 1 or more, got %d", *n)
	}
	if err := run(context.Background(), *pg, *n, *tuned); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, base string, n int, tuned bool) error {
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	name := fmt.Sprintf("exqbench_rivertx_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	defer func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			log.Printf("drop database %s: %v", name, err)
		}
	}()
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	u.Path = "/" + name
	pool, err := pgxpool.New(ctx, u.String()) // the application's
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}

	w := &startWorker{started: make(map[int]time.Time, n)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	cfg := &river.Config{Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 50}}, Workers: workers}
	if tuned {
		cfg.FetchCooldown, cfg.FetchPollInterval = time.Millisecond, 10*time.Millisecond
	}
	wpool, err := pgxpool.New(ctx, u.String()) // the workers', as in a process of their own
	if err != nil {
		return err
	}
	defer wpool.Close()
	runner, err := river.NewClient(riverpgxv5.New(wpool), cfg)
	if err != nil {
		return err
	}
	if err := runner.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = runner.Stop(context.Background()) }()
	inserter, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return err
	}

	committed := make([]time.Time, n)
	for i := range n {
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := inserter.InsertTx(ctx, tx, noopArgs{I: i}, nil); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT 1") // the application's own write
			return err
		}); err != nil {
			return err
		}
		committed[i] = time.Now()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for w.count() < n {
		if time.Now().After(deadline) {
			return errors.New("not every job started within 2 minutes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	lat := make([]time.Duration, n)
	w.mu.Lock()
	for i, c := range committed {
		lat[i] = max(w.started[i].Sub(c), 0)
	}
	w.mu.Unlock()
	slices.Sort(lat)
	fmt.Printf("river (tuned=%v): %d transactions, commit → job start p50 %.2f ms, p99 %.2f ms\n", tuned, n,
		float64(lat[n/2].Microseconds())/1000, float64(lat[n*99/100].Microseconds())/1000)
	return nil
}
