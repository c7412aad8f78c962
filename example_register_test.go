package exq_test

import (
	"context"
	"fmt"

	"github.com/exqgo/exq"
)

func ExampleExq_Register() {
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
	// Workers can be added while the node runs; text after "/" in a class is ignored, so a
	// job of class "MyApp.Resize/perform" (Exq style) runs this worker too.
	err = e.Register("MyApp.Resize", exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
		var path string
		var width int
		if err := job.Bind(&path, &width); err != nil {
			return err
		}
		fmt.Printf("%s: resize %s to %d px\n", job.Class, path, width)
		close(done)
		return nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Enqueue(ctx, "default", "MyApp.Resize/perform", []any{"img.png", 640}); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: MyApp.Resize/perform: resize img.png to 640 px
}
