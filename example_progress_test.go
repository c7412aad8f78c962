package exq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

// A long job reports how far it has got; the busy list (API.BusyJobs, `exq busy`, the
// dashboard's Busy page) shows the latest report within about a second.
func ExampleSetProgress() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	finish := make(chan struct{})
	importer := exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
		rows := 1000
		for i := range rows {
			// ... import row i ...
			if i%100 == 0 {
				msg := fmt.Sprintf("row %d of %d", i, rows)
				if err := exq.SetProgress(ctx, float64(i)/float64(rows), msg); err != nil {
					return err
				}
			}
		}
		<-finish // (for the example: stay busy while it looks)
		return nil
	})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Workers: map[string]exq.Worker{"MyApp.Import": importer}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	defer close(finish)
	if _, err := e.Enqueue(ctx, "default", "MyApp.Import", nil); err != nil {
		fmt.Println(err)
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		busy, err := e.API().BusyJobs(ctx)
		if err != nil || len(busy) == 0 || busy[0].Progress == nil || busy[0].Progress.Fraction < 0.9 {
			continue
		}
		fmt.Printf("%.0f%% %s\n", 100*busy[0].Progress.Fraction, busy[0].Progress.Message)
		break
	}
	// Output: 90% row 900 of 1000
}
