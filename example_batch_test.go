package exq_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/exqgo/exq"
)

// A batch is a set of jobs with callbacks: OnSuccess is enqueued once, when every job of the
// batch has succeeded, however many nodes run them.
func ExampleExq_NewBatch() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	type callback struct{ bid, album string }
	done := make(chan callback, 1)
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Workers: map[string]exq.Worker{
			"Image.Resize": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
			"Album.Ready": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				var album string
				if err := job.Bind(&album); err != nil {
					return err
				}
				done <- callback{bid: job.CallbackOf(), album: album} // CallbackOf: the batch's id
				return nil
			}),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	bid, jids, err := e.NewBatch(ctx, exq.BatchOptions{
		Description: "resize the album",
		OnSuccess:   &exq.JobSpec{Class: "Album.Ready", Args: []any{"summer"}},
	}, []exq.JobSpec{
		{Class: "Image.Resize", Args: []any{"a.png"}},
		{Class: "Image.Resize", Args: []any{"b.png"}},
		{Class: "Image.Resize", Args: []any{"c.png"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cb := <-done
	fmt.Println(len(jids), "jobs resized")
	fmt.Println("album", cb.album, "ready:", cb.bid == bid)
	// Output:
	// 3 jobs resized
	// album summer ready: true
}

// What happens when a job of a batch dies: its death is recorded in the batch before the job
// moves to the dead set, OnDeath is enqueued at the first death, and the job stays pending,
// so OnSuccess waits (until it is retried from the dead set and succeeds).
func ExampleExq_NewBatch_death() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	died, allDone := make(chan struct{}), make(chan struct{})
	var cardUpdated atomic.Bool
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, MaxRetries: exq.NoRetries,
		Workers: map[string]exq.Worker{
			"MyApp.Charge": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				var card string
				if err := job.Bind(&card); err != nil {
					return err
				}
				if card == "expired" && !cardUpdated.Load() {
					return errors.New("card declined")
				}
				return nil
			}),
			"MyApp.ChargeFailed": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				close(died)
				return nil
			}),
			"MyApp.ChargesDone": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				close(allDone)
				return nil
			}),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	bid, _, err := e.NewBatch(ctx, exq.BatchOptions{
		OnSuccess: &exq.JobSpec{Class: "MyApp.ChargesDone"},
		OnDeath:   &exq.JobSpec{Class: "MyApp.ChargeFailed"},
	}, []exq.JobSpec{
		{Class: "MyApp.Charge", Args: []any{"valid"}, Options: []exq.EnqueueOption{exq.JID("charge-1")}},
		{Class: "MyApp.Charge", Args: []any{"expired"}, Options: []exq.EnqueueOption{exq.JID("charge-2")}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	<-died
	var b exq.BatchStatus
	// The other job's success may be recorded a moment later.
	for deadline := time.Now().Add(10 * time.Second); b.Pending != 1 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err = e.API().Batch(ctx, bid); err != nil {
			fmt.Println(err)
			return
		}
	}
	dead, err := e.API().BatchJobs(ctx, bid, "dead", 10)
	fmt.Println(dead, err)
	fmt.Printf("total %d, pending %d, dead %d, succeeded: %v\n", b.Total, b.Pending, b.Dead, !b.SucceededAt.IsZero())

	// The customer updates the card; the dead job is run again, succeeds, and the batch with it.
	cardUpdated.Store(true)
	if _, err := e.API().RequeueJob(ctx, exq.DeadSet, "charge-2"); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case <-allDone:
		fmt.Println("OnSuccess ran")
	case <-time.After(10 * time.Second):
		fmt.Println("OnSuccess did not run")
	}
	// Output:
	// [charge-2] <nil>
	// total 2, pending 1, dead 1, succeeded: false
	// OnSuccess ran
}
