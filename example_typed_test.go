package exq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

// The args types of a photo pipeline: each names its class (and, if it likes, its queue), so
// no enqueue, batch, callback, workflow step or worker below writes a class string.
type (
	Resize struct {
		Photo string `json:"photo"`
		Width int    `json:"width"`
	}
	Caption struct {
		Photo string `json:"photo"`
	}
	Publish   struct{}
	AlbumDone struct {
		Album string `json:"album"`
	}
)

func (Resize) Class() string    { return "Photos.Resize" }
func (Caption) Class() string   { return "Photos.Caption" }
func (Publish) Class() string   { return "Photos.Publish" }
func (AlbumDone) Class() string { return "Photos.AlbumDone" }

// Typed all the way down: a batch of typed jobs with a typed callback, and a workflow of typed
// steps whose last one reads its parents' results.
func ExampleWorkerForResult() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	albumDone := make(chan struct{})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Register: []exq.Registration{
			// A step that returns a result: its dependents read it with ParentResult.
			exq.WorkerForResult(func(ctx context.Context, job *exq.Job, a Resize) (string, error) {
				return fmt.Sprintf("%s@%d", a.Photo, a.Width), nil
			}),
			exq.WorkerForResult(func(ctx context.Context, job *exq.Job, a Caption) (string, error) {
				return "A cat on " + a.Photo, nil
			}),
			exq.WorkerForResult(func(ctx context.Context, job *exq.Job, _ Publish) (string, error) {
				var image, caption string
				if err := exq.ParentResult(ctx, "resize", &image); err != nil {
					return "", err
				}
				if err := exq.ParentResult(ctx, "caption", &caption); err != nil {
					return "", err
				}
				return image + ": " + caption, nil
			}),
			exq.WorkerFor(func(ctx context.Context, job *exq.Job, a AlbumDone) error {
				fmt.Println("album", a.Album, "resized")
				close(albumDone)
				return nil
			}),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// A batch: the jobs and the callback are typed values; Queue defaults to "default".
	_, _, err = e.NewBatch(ctx, exq.BatchOptions{
		Description: "resize the album",
		OnSuccess:   &exq.JobSpec{Args: AlbumDone{Album: "summer"}},
	}, []exq.JobSpec{
		{Args: Resize{Photo: "a.png", Width: 640}},
		{Args: Resize{Photo: "b.png", Width: 640}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	<-albumDone

	// A workflow: each step is a typed value with a name.
	w, err := e.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "publish a photo"}, []exq.WorkflowJob{
		{Name: "resize", Args: Resize{Photo: "p.png", Width: 1024}},
		{Name: "caption", Args: Caption{Photo: "p.png"}},
		{Name: "publish", Args: Publish{}, DependsOn: []string{"resize", "caption"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var published string
	if err := e.WaitResult(ctx, w.JIDs["publish"], &published); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(published)
	// Output:
	// album summer resized
	// p.png@1024: A cat on p.png
}

// Signup is the args of MyApp.Signup jobs: the type names its class, so the worker and the
// enqueue side agree on both.
type Signup struct {
	UserID   int    `json:"user_id"`
	Template string `json:"template"`
}

func (Signup) Class() string { return "MyApp.Signup" }

// Workers given to Start are there before the node fetches its first job, so the jobs that
// waited in Redis during a deploy run at once, none failing for want of a worker.
func ExampleWorkerFor() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	// A job waiting before the node starts (pushed by an earlier deploy, or by Sidekiq).
	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: url, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := exq.EnqueueArgs(ctx, c, Signup{UserID: 7, Template: "welcome"}); err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Close()

	done := make(chan struct{})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Register: []exq.Registration{
			exq.WorkerFor(func(ctx context.Context, job *exq.Job, a Signup) error {
				fmt.Printf("%s: welcome user %d with %q\n", job.Class, a.UserID, a.Template)
				close(done)
				return nil
			}),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	<-done
	// Output: MyApp.Signup: welcome user 7 with "welcome"
}

func ExampleAddWorker() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	done := make(chan struct{})
	err = exq.AddWorker(e, func(ctx context.Context, job *exq.Job, a Signup) error {
		fmt.Printf("%s: welcome user %d with %q\n", job.Class, a.UserID, a.Template)
		close(done)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// On the wire: "class":"MyApp.Signup","args":[{"user_id":42,"template":"welcome"}].
	if _, err := exq.EnqueueArgs(ctx, e, Signup{UserID: 42, Template: "welcome"}); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: MyApp.Signup: welcome user 42 with "welcome"
}

func ExampleEnqueueArgs() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	// An enqueue-only client; *exq.Exq and the exqtest doubles work the same way.
	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	a := Signup{UserID: 42, Template: "tips"}
	enqueued := 0
	check := func(_ string, err error) {
		if err != nil {
			fmt.Println(err)
			return
		}
		enqueued++
	}
	check(exq.EnqueueArgs(ctx, c, a))                                         // on "default", or the queue of a Queue() method
	check(exq.EnqueueArgs(ctx, c, a, exq.OnQueue("mail"), exq.MaxRetries(3))) // on "mail"
	check(exq.EnqueueArgsIn(ctx, c, 24*time.Hour, a))                         // tomorrow
	fmt.Println(enqueued, "jobs enqueued")
	// Output: 3 jobs enqueued
}

func ExampleTyped() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	// A class string another runtime chose, for a type that does not name it.
	type Invoice struct {
		ID int `json:"id"`
	}
	done := make(chan struct{})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, Workers: map[string]exq.Worker{
		"Billing::InvoiceWorker": exq.Typed(func(ctx context.Context, job *exq.Job, a Invoice) error {
			fmt.Printf("invoice %d (retry %d)\n", a.ID, job.RetryCount)
			close(done)
			return nil
		}),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	// What Sidekiq's Billing::InvoiceWorker.perform_async({"id" => 7}) pushes.
	if _, err := e.Enqueue(ctx, "default", "Billing::InvoiceWorker", []any{map[string]any{"id": 7}}); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: invoice 7 (retry 0)
}
