package exq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

func ExampleNewAPI() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	// Something to look at: a job that died.
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, MaxRetries: exq.NoRetries,
		Workers: map[string]exq.Worker{"MyApp.Charge": exq.WorkerFunc(func(context.Context, *exq.Job) error {
			return errors.New("card declined")
		})}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Enqueue(ctx, "default", "MyApp.Charge", []any{42}, exq.JID("charge-42")); err != nil {
		fmt.Println(err)
		return
	}

	// The API needs no running node (here the node's would do too: e.API()).
	api, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer api.Close()
	var dead []exq.JobRecord
	for len(dead) == 0 {
		dead, _ = api.Dead(ctx, exq.ListOptions{Size: 10})
		time.Sleep(time.Millisecond)
	}
	job, err := dead[0].Job() // an error for a document some other program wrote
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.JID, job.ErrorMessage)
	e.Stop(ctx) // stop the node so the job is not retried while we look

	// Run it again: it moves, byte for byte, to its queue.
	rec, err := api.RequeueJob(ctx, exq.DeadSet, "charge-42")
	fmt.Println(rec.Raw == dead[0].Raw, err)
	n, _ := api.QueueSize(ctx, "default")
	fmt.Println(n)
	// Output:
	// charge-42 card declined
	// true <nil>
	// 1
}
