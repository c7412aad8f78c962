package exq_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
)

// quiet keeps the examples' output to what they print.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// The examples run against an in-process Redis; a real program passes its RedisURL.
func exampleRedis() (url string, stop func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	return "redis://" + m.Addr() + "/0", m.Close
}

func ExampleStart() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	done := make(chan string)
	e, err := exq.Start(ctx, exq.Options{
		RedisURL: url,
		Queues:   []exq.Queue{{Name: "default", Concurrency: 10}, {Name: "mail", Concurrency: 2}},
		Logger:   quiet,
		Workers: map[string]exq.Worker{
			"MyApp.SendEmail": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				var userID int
				var template string
				if err := job.Bind(&userID, &template); err != nil {
					return err // args that never decode: dead at once (exq.ArgsDecodeError)
				}
				done <- fmt.Sprintf("sent %q to user %d", template, userID)
				return nil
			}),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	if _, err := e.Enqueue(ctx, "mail", "MyApp.SendEmail", []any{42, "welcome"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-done)
	// Output: sent "welcome" to user 42
}
