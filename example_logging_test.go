package exq_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/exqgo/exq"
)

// LogJobs logs one line per job once its outcome is stored (args left out unless LogArgs).
func ExampleLogJobs() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{} // keep the output stable
			}
			return a
		}}))
	done := make(chan struct{})
	opts := exq.Options{RedisURL: url, Logger: quiet,
		Middleware: []exq.Middleware{exq.LogJobs(logger)},
		Workers: map[string]exq.Worker{"MyApp.Ping": exq.WorkerFunc(func(context.Context, *exq.Job) error {
			return nil
		})},
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.JobSucceeded {
				close(done)
			}
		}},
	}
	e, err := exq.Start(ctx, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Enqueue(ctx, "default", "MyApp.Ping", nil, exq.JID("ping-1")); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	e.Stop(ctx)
	// Output:
	// level=INFO msg="exq: job done" class=MyApp.Ping queue=default jid=ping-1 outcome=done retry_count=0
}
