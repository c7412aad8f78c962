package exq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

func ExampleSnooze() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	done := make(chan struct{})
	runs := 0
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, SchedulerPollTimeout: 10 * time.Millisecond,
		Workers: map[string]exq.Worker{
			"MyApp.WaitForReport": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				runs++
				if runs == 1 {
					return exq.Snooze(10 * time.Millisecond) // not ready yet: run again later
				}
				fmt.Printf("run %d: retry_count %d, last message %q\n", runs, job.RetryCount, job.ErrorMessage)
				close(done)
				return nil
			}),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	if _, err := e.Enqueue(ctx, "default", "MyApp.WaitForReport", nil); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: run 2: retry_count 0, last message "Snoozed for 0.01 seconds"
}
