// Command workflow shows batches, workflows and results: a batch of three resizes whose
// success callback runs once every resize has succeeded; a workflow in which a fetch runs
// first, a resize and a thumbnail both wait for it, and a publish waits for both and reads
// their results; and a client waiting for the publish's result. It prints what happened and
// exits 0.
//
//	go run ./examples/workflow                                  # in-process Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/workflow  # a real Redis
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
)

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
	batchDone := make(chan string, 1)
	e, err := exq.Start(ctx, exq.Options{
		RedisURL:  url,
		Namespace: "exq-example-workflow",
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Workers: map[string]exq.Worker{
			"Image.Resize":  exq.TypedResult(resize),
			"Image.Fetch":   exq.TypedResult(fetch),
			"Image.Thumb":   exq.TypedResult(thumb),
			"Image.Publish": exq.WorkerFunc(publish),
			"Batch.Done": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				batchDone <- job.CallbackOf()
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
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := runBatch(ctx, e, batchDone); err != nil {
		return err
	}
	if err := runOpenBatch(ctx, e, batchDone); err != nil {
		return err
	}
	return runWorkflow(ctx, e)
}

func resize(ctx context.Context, job *exq.Job, name string) (string, error) {
	return name + "@800px", nil
}

func fetch(ctx context.Context, job *exq.Job, url string) (string, error) {
	return "original of " + url, nil
}

func thumb(ctx context.Context, job *exq.Job, size int) (string, error) {
	return fmt.Sprintf("thumbnail %dpx", size), nil
}

// publish reads the results of the two jobs it waits for and stores its own.
func publish(ctx context.Context, job *exq.Job) error {
	var resized, thumbnail string
	if err := exq.ParentResult(ctx, "resize", &resized); err != nil {
		return err
	}
	if err := exq.ParentResult(ctx, "thumbnail", &thumbnail); err != nil {
		return err
	}
	return exq.SetResult(ctx, "published "+resized+" with "+thumbnail)
}

// runBatch creates a batch of three resizes with a success callback, and waits for it.
func runBatch(ctx context.Context, e *exq.Exq, done <-chan string) error {
	bid, jids, err := e.NewBatch(ctx, exq.BatchOptions{
		Description: "resize the album",
		OnSuccess:   &exq.JobSpec{Queue: "default", Class: "Batch.Done"},
	}, []exq.JobSpec{
		{Queue: "default", Class: "Image.Resize", Args: []any{"a.png"}},
		{Queue: "default", Class: "Image.Resize", Args: []any{"b.png"}},
		{Queue: "default", Class: "Image.Resize", Args: []any{"c.png"}},
	})
	if err != nil {
		return err
	}
	fmt.Printf("batch of %d resizes created\n", len(jids))
	select {
	case got := <-done:
		if got != bid {
			return fmt.Errorf("the callback ran for batch %s, not %s", got, bid)
		}
	case <-ctx.Done():
		return fmt.Errorf("batch: the success callback did not run: %w", ctx.Err())
	}
	st, err := e.API().Batch(ctx, bid)
	if err != nil {
		return err
	}
	fmt.Printf("batch succeeded: %d jobs, %d pending, success callback ran once\n", st.Total, st.Pending)
	return nil
}

// runOpenBatch fills a batch in parts, as a client with many jobs does (it holds one part at
// a time), then closes it: the success callback cannot run before the close.
func runOpenBatch(ctx context.Context, e *exq.Exq, done <-chan string) error {
	b, err := e.OpenBatch(ctx, exq.BatchOptions{
		Description: "resize the archive",
		OnSuccess:   &exq.JobSpec{Queue: "default", Class: "Batch.Done"},
	})
	if err != nil {
		return err
	}
	for part := range 3 { // each part could be a page of a database query
		jobs := make([]exq.JobSpec, 100)
		for i := range jobs {
			// The jids are the caller's: an Add sent again after an error adds nothing twice.
			jid := exq.JID(fmt.Sprintf("%s-%d-%d", b.ID(), part, i))
			jobs[i] = exq.JobSpec{Queue: "default", Class: "Image.Resize", Args: []any{fmt.Sprintf("%d-%d.png", part, i)},
				Options: []exq.EnqueueOption{jid}}
		}
		if _, err := b.Add(ctx, jobs); err != nil {
			return err
		}
	}
	if err := b.Close(ctx); err != nil {
		return err
	}
	select {
	case got := <-done:
		if got != b.ID() {
			return fmt.Errorf("the callback ran for batch %s, not %s", got, b.ID())
		}
	case <-ctx.Done():
		return fmt.Errorf("open batch: the success callback did not run: %w", ctx.Err())
	}
	fmt.Println("open batch of 300 resizes closed: success callback ran once")
	return nil
}

// runWorkflow writes fetch → (resize, thumbnail) → publish and waits for publish's result.
func runWorkflow(ctx context.Context, e *exq.Exq) error {
	w, err := e.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "publish a photo"}, []exq.WorkflowJob{
		{Name: "fetch", Queue: "default", Class: "Image.Fetch", Args: []any{"https://example.com/p.png"}},
		{Name: "resize", Queue: "default", Class: "Image.Resize", Args: []any{"p.png"}, DependsOn: []string{"fetch"}},
		{Name: "thumbnail", Queue: "default", Class: "Image.Thumb", Args: []any{64}, DependsOn: []string{"fetch"}},
		{Name: "publish", Queue: "default", Class: "Image.Publish", DependsOn: []string{"resize", "thumbnail"}},
	})
	if err != nil {
		return err
	}
	var out string
	if err := e.WaitResult(ctx, w.JIDs["publish"], &out); err != nil {
		return err
	}
	fmt.Println("workflow result:", out)
	return nil
}
