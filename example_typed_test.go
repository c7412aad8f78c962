package exq_test

import (
	"context"
	"fmt"

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
