// Command typed shows typed workers: each kind of job has an args type that names its class,
// so no class string is written anywhere else; the workers are given to Start (Options.Register
// with exq.WorkerFor, which takes the class from the args type) so that they are registered
// before the node fetches its first job, a flaky job is retried with a fast Backoff until it
// succeeds, and a job that always fails goes to the dead set, which it then reads through
// exq.NewAPI as an admin tool would. It prints what happened and exits 0.
//
//	go run ./examples/typed                                  # in-process Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/typed  # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
)

// SendEmail is the args of Shop.SendEmail jobs: on the wire, [{"to":…,"subject":…}].
type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Class names the job's class, so that enqueue and worker agree on it.
func (SendEmail) Class() string { return "Shop.SendEmail" }

// Charge is the args of Shop.Charge jobs, which go to the "payments" queue.
type Charge struct {
	OrderID int   `json:"order_id"`
	Cents   int64 `json:"cents"`
}

// Class names the job's class.
func (Charge) Class() string { return "Shop.Charge" }

// Queue sends Charge jobs to "payments" unless the enqueue says exq.OnQueue.
func (Charge) Queue() string { return "payments" }

func sendEmail(ctx context.Context, job *exq.Job, a SendEmail) error {
	fmt.Printf("Shop.SendEmail  %q to %s\n", a.Subject, a.To)
	return nil
}

// charge always fails for order 13, and for the others on their first two attempts.
func charge(ctx context.Context, job *exq.Job, a Charge) error {
	attempt := job.RetryCount + 1
	if a.OrderID == 13 || attempt <= 2 {
		err := errors.New("gateway timeout")
		if a.OrderID == 13 {
			err = errors.New("card declined")
		}
		fmt.Printf("Shop.Charge     order %d, attempt %d: %v\n", a.OrderID, attempt, err)
		return err
	}
	fmt.Printf("Shop.Charge     order %d, attempt %d: charged %d cents\n", a.OrderID, attempt, a.Cents)
	return nil
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		m, err := miniredis.Run()
		if err != nil {
			return err
		}
		defer m.Close()
		url = "redis://" + m.Addr() + "/0"
		fmt.Println("REDIS_URL is unset: using an in-process Redis (miniredis)")
	}

	outcomes := make(chan exq.Event, 64)
	opts := exq.Options{
		RedisURL:  url,
		Namespace: "exq-example-typed",
		Queues:    []exq.Queue{{Name: "default", Concurrency: 5}, {Name: "payments", Concurrency: 2}},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		// Given to Start, the workers are there before the first fetch: a job waiting in
		// Redis never fails for want of its worker. Each registers under its args type's class.
		Register: []exq.Registration{exq.WorkerFor(sendEmail), exq.WorkerFor(charge)},
		// Retry after 100 ms, 200 ms… instead of Exq's 16 s or more.
		Backoff: func(n int, _ *exq.Job) time.Duration { return time.Duration(n) * 100 * time.Millisecond },
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.JobSucceeded || ev.Kind == exq.JobDied {
				outcomes <- ev
			}
		}},
	}
	e, err := exq.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(context.Background()); err != nil {
			log.Print(err)
		}
	}()

	email, err1 := exq.EnqueueArgs(ctx, e, SendEmail{To: "ada@example.com", Subject: "Welcome"})
	paid, err2 := exq.EnqueueArgs(ctx, e, Charge{OrderID: 7, Cents: 1999}, exq.MaxRetries(3))
	declined, err3 := exq.EnqueueArgs(ctx, e, Charge{OrderID: 13, Cents: 500}, exq.MaxRetries(2))
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	// The outcome each job must reach: order 7 succeeds on its 2nd retry, order 13 dies after it.
	want := map[string]exq.EventKind{email: exq.JobSucceeded, paid: exq.JobSucceeded, declined: exq.JobDied}
	for timeout := time.After(10 * time.Second); len(want) > 0; {
		select {
		case ev := <-outcomes: // jobs left in the namespace by an earlier run are not in want
			if kind, ours := want[ev.JID]; ours && ev.Kind != kind {
				return fmt.Errorf("typed: job %s (%s) ended %s, want %s", ev.JID, ev.Class, ev.Kind, kind)
			}
			delete(want, ev.JID)
		case <-timeout:
			return fmt.Errorf("typed: %d of 3 jobs did not finish within 10 s", len(want))
		}
	}

	// An admin tool (as the CLI and the dashboard) reads the dead set without running a node.
	api, err := exq.NewAPI(ctx, opts.ClientOptions())
	if err != nil {
		return err
	}
	defer api.Close()
	rec, err := api.Find(ctx, exq.DeadSet, declined)
	if err != nil {
		return err
	}
	fmt.Printf("dead set, as Redis holds it (died %s):\n  %s\n", rec.At.Format(time.TimeOnly), rec.Raw)
	fmt.Println("all 3 jobs finished: one at once, one after 2 retries, one dead after 2 retries")
	return nil
}
