// Command unique shows unique jobs (exq.Unique): while a job holds its lock, enqueueing the
// same job again is refused with a *exq.UniqueConflictError carrying the holder's jid, a job
// with other args is not a duplicate, and once the job has succeeded its lock is released, so
// the same job can be enqueued again. It prints what happened and exits 0.
//
//	go run ./examples/unique                                  # in-process Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/unique  # a real Redis
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

// Rebuild is the args of Reports.Rebuild jobs: rebuild one account's reports.
type Rebuild struct {
	AccountID int `json:"account_id"`
}

// Class names the job's class.
func (Rebuild) Class() string { return "Reports.Rebuild" }

// oncePending allows one Rebuild of an account at a time, queued or running: the lock is
// taken with the enqueue and released when the job succeeds (or dies). It expires after a
// minute in any case, so a lost job cannot block its account for ever. UntilStart would
// release it when the job starts; UntilExpiry only when it expires (at most one per minute).
var oncePending = exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Minute})

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

	started, release := make(chan int, 4), make(chan struct{})
	succeeded := make(chan string, 4)
	e, err := exq.Start(ctx, exq.Options{
		RedisURL:  url,
		Namespace: "exq-example-unique",
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Workers: map[string]exq.Worker{Rebuild{}.Class(): exq.Typed(func(ctx context.Context, job *exq.Job, a Rebuild) error {
			started <- a.AccountID
			select { // hold the job (and its lock) until main lets it finish
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})},
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.JobSucceeded {
				succeeded <- ev.JID
			}
		}},
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(context.Background()); err != nil {
			log.Print(err)
		}
	}()
	timeout := time.After(10 * time.Second)

	first, err := exq.EnqueueArgs(ctx, e, Rebuild{AccountID: 42}, oncePending)
	if err != nil {
		return fmt.Errorf("unique: first enqueue: %w", err)
	}
	fmt.Printf("enqueued   account 42: jid=%s\n", first)
	select {
	case <-started:
		fmt.Println("running    account 42 (it holds the lock)")
	case <-timeout:
		return errors.New("unique: the job did not start within 10 s")
	}

	_, err = exq.EnqueueArgs(ctx, e, Rebuild{AccountID: 42}, oncePending)
	var conflict *exq.UniqueConflictError
	if !errors.As(err, &conflict) || conflict.JID != first {
		return fmt.Errorf("unique: a duplicate of %s was not refused with its jid: %v", first, err)
	}
	fmt.Printf("refused    account 42 again: %v\n", err)
	other, err := exq.EnqueueArgs(ctx, e, Rebuild{AccountID: 7}, oncePending)
	if err != nil {
		return fmt.Errorf("unique: other args are not a duplicate: %w", err)
	}
	fmt.Printf("enqueued   account 7: jid=%s (other args, other lock)\n", other)

	close(release) // let every Rebuild finish
	for running := map[string]bool{first: true, other: true}; len(running) > 0; {
		select {
		case jid := <-succeeded:
			delete(running, jid)
			if jid != first {
				continue
			}
			// The lock went with the job's acknowledgement: the same job is welcome again.
			again, err := exq.EnqueueArgs(ctx, e, Rebuild{AccountID: 42}, oncePending)
			if err != nil {
				return fmt.Errorf("unique: the lock of %s outlived its run: %w", first, err)
			}
			running[again] = true
			fmt.Printf("succeeded  account 42, so its lock is released: enqueued again as jid=%s\n", again)
		case <-timeout:
			return errors.New("unique: the jobs did not all succeed within 10 s")
		}
	}
	fmt.Println("one Rebuild per account at a time: 1 duplicate refused, 3 jobs ran")
	return nil
}
