package exq_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/exqgo/exq"
)

// A program's main: the node stops gracefully when the process is told to (Ctrl-C, SIGTERM
// from systemd or Kubernetes), a TERM comes from Sidekiq's or Exq's UI, or Stop is called.
func ExampleStart_signals() {
	url, stopRedis := exampleRedis()
	defer stopRedis()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	running := make(chan struct{})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, ShutdownTimeout: 10 * time.Second,
		Workers: map[string]exq.Worker{"MyApp.Report": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			close(running)
			time.Sleep(50 * time.Millisecond) // a job that is running when the signal comes
			fmt.Println("report done")
			return nil
		})}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Enqueue(ctx, "default", "MyApp.Report", nil); err != nil {
		fmt.Println(err)
		return
	}
	<-running
	stop() // stands in for Ctrl-C: ctx ends, and the node starts stopping

	<-e.Done()
	err = e.Stop(context.Background()) // waits for the running job (up to ShutdownTimeout)
	fmt.Println("stopped:", err)
	// Output:
	// report done
	// stopped: <nil>
}
