// Command sidekiq shows exq sharing queues with Sidekiq. It pushes a job exactly as Sidekiq 6's
// client writes one (its JSON, then SADD queues + LPUSH queue:<q> in one pipeline), with a
// plain go-redis client, and an exq node runs it. Then it enqueues a job through exq for a
// Ruby worker class on a queue only Sidekiq works, and pops it as Sidekiq's fetch does, to
// print the JSON that Sidekiq would read. It exits 0 when both went through.
//
//	go run ./examples/sidekiq                                  # in-process Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/sidekiq  # a real Redis
//
// Namespaces: every key here starts with "sidekiq-example:", which is how Sidekiq 6 writes
// them with the redis-namespace gem:
//
//	Sidekiq.configure_server { |c| c.redis = { url: ENV["REDIS_URL"], namespace: "sidekiq-example" } }
//
// (and the same in configure_client). Sidekiq 7 dropped namespaces: give exq NoNamespace: true
// (and no Namespace) and the keys are Sidekiq's own, "queue:default".
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq"
)

const namespace = "sidekiq-example"

// sidekiqJob is a job as Sidekiq 6.4's client writes it (its field order; JSON's is free).
type sidekiqJob struct {
	Retry      any     `json:"retry"` // true (the default 25 retries), false or a number
	Queue      string  `json:"queue"`
	Class      string  `json:"class"`
	Args       []any   `json:"args"`
	JID        string  `json:"jid"` // 24 hex characters
	CreatedAt  float64 `json:"created_at"`
	EnqueuedAt float64 `json:"enqueued_at"` // epoch seconds, as floats
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
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
	ro, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(ro) // stands in for Ruby's Sidekiq client
	defer rdb.Close()

	ran := make(chan string, 1)
	e, err := exq.Start(ctx, exq.Options{
		RedisURL:  url,
		Namespace: namespace,
		Queues:    []exq.Queue{{Name: "default", Concurrency: 5}}, // not "ruby": Sidekiq works that one
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		// The Go side of `class HardWorker; include Sidekiq::Worker; def perform(name, count)`.
		Workers: map[string]exq.Worker{"HardWorker": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			var name string
			var count int
			if err := job.Bind(&name, &count); err != nil {
				return err
			}
			fmt.Printf("exq ran HardWorker.perform(%q, %d): jid=%s retries=%d\n", name, count, job.JID, job.MaxRetries)
			ran <- job.JID
			return nil
		})},
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(context.Background()); err != nil {
			log.Print(err)
		}
	}()

	// HardWorker.perform_async("bob", 5), as Sidekiq 6.4 writes it.
	id := make([]byte, 12)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	jid, now := hex.EncodeToString(id), float64(time.Now().UnixMicro())/1e6
	job, err := json.Marshal(sidekiqJob{Retry: true, Queue: "default", Class: "HardWorker",
		Args: []any{"bob", 5}, JID: jid, CreatedAt: now, EnqueuedAt: now})
	if err != nil {
		return err
	}
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, namespace+":queues", "default")
		p.LPush(ctx, namespace+":queue:default", job)
		return nil
	}); err != nil {
		return err
	}
	fmt.Printf("pushed as Sidekiq does: LPUSH %s:queue:default %s\n", namespace, job)
	select {
	case got := <-ran:
		if got != jid {
			return fmt.Errorf("sidekiq: exq ran jid %s, want %s", got, jid)
		}
	case <-ctx.Done():
		return fmt.Errorf("sidekiq: exq did not run the pushed job: %w", ctx.Err())
	}

	// The other way: a job for a Ruby worker class ("A::B" is a valid Ruby constant; Sidekiq
	// runs Billing::InvoiceWorker.new.perform(42, "EUR")).
	if _, err := e.Enqueue(ctx, "ruby", "Billing::InvoiceWorker", []any{42, "EUR"}); err != nil {
		return err
	}
	// Sidekiq 6's fetch: BRPOP queue:<q>, from the right end.
	popped, err := rdb.BRPop(ctx, 2*time.Second, namespace+":queue:ruby").Result()
	if err != nil {
		return fmt.Errorf("sidekiq: nothing in %s:queue:ruby: %w", namespace, err)
	}
	var read sidekiqJob
	if err := json.Unmarshal([]byte(popped[1]), &read); err != nil || read.Class != "Billing::InvoiceWorker" || len(read.Args) != 2 {
		return fmt.Errorf("sidekiq: %s holds %s, not the job exq enqueued (%v)", popped[0], popped[1], err)
	}
	fmt.Printf("Sidekiq would read from %s: %s\n", popped[0], popped[1])
	fmt.Printf("  and run %s.new.perform(%v, %q) (jid %s, retry %v)\n", read.Class, read.Args[0], read.Args[1], read.JID, read.Retry)
	return nil
}
