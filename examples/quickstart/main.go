// Command quickstart starts an exq node, enqueues a few jobs (one of which fails once and
// succeeds on its retry), prints what ran and exits 0.
//
//	go run ./examples/quickstart                                  # in-process Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/quickstart  # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
)

// Greet is the args of Quickstart.Greet jobs. The type names its class, so the worker and the
// enqueue calls share both; on the wire the job's args are [{"name":"Ada"}].
type Greet struct {
	Name string `json:"name"`
}

func (Greet) Class() string { return "Quickstart.Greet" }

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	// Ctrl-C ends ctx, and with it the node (gracefully).
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

	done := make(chan string, 16)
	var flakyRuns atomic.Int32
	// Workers are given to Start, so they are there before the first fetch: jobs already
	// waiting in Redis run at once.
	e, err := exq.Start(ctx, exq.Options{
		RedisURL:  url,
		Namespace: "exq-quickstart",
		Queues:    []exq.Queue{{Name: "default", Concurrency: 10}},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		// Retry after a second instead of Exq's 16 s or more, so the retry shows at once.
		Backoff:              func(int, *exq.Job) time.Duration { return time.Second },
		SchedulerPollTimeout: 50 * time.Millisecond,
		Workers: map[string]exq.Worker{
			Greet{}.Class(): exq.Typed(func(ctx context.Context, job *exq.Job, g Greet) error {
				done <- fmt.Sprintf("Quickstart.Greet    jid=%s  hello, %s", job.JID, g.Name)
				return nil
			}),
			"Quickstart.Flaky": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				if flakyRuns.Add(1) == 1 {
					fmt.Printf("Quickstart.Flaky    jid=%s  attempt 1 fails (it goes to the retry set)\n", job.JID)
					return errors.New("the first attempt always fails")
				}
				done <- fmt.Sprintf("Quickstart.Flaky    jid=%s  attempt %d succeeded (retry_count=%d, last error %q)",
					job.JID, flakyRuns.Load(), job.RetryCount, job.ErrorMessage)
				return nil
			}),
		},
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(context.Background()); err != nil {
			log.Print(err)
		}
	}()

	for _, name := range []string{"Ada", "Grace", "Linus"} {
		if _, err := exq.EnqueueArgs(ctx, e, Greet{Name: name}); err != nil {
			return err
		}
	}
	if _, err := exq.EnqueueArgsIn(ctx, e, 200*time.Millisecond, Greet{Name: "scheduled job"}); err != nil {
		return err
	}
	if _, err := e.Enqueue(ctx, "default", "Quickstart.Flaky", nil); err != nil {
		return err
	}

	timeout := time.After(30 * time.Second)
	for i := 0; i < 5; i++ {
		select {
		case line := <-done:
			fmt.Println(line)
		case <-timeout:
			return fmt.Errorf("quickstart: only %d of 5 jobs ran within 30 s", i)
		case <-e.Done():
			return fmt.Errorf("quickstart: stopped after %d of 5 jobs", i)
		}
	}
	fmt.Println("all 5 jobs ran; one failed once and succeeded through the retry set")
	return nil
}
