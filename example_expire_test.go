package exq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

// Expiring jobs: a job not started by its expiry is not run. Here a digest enqueued while no
// node runs expires before one starts; with KeepExpiredJobs it waits in the dead set, saying
// why, and the node reports it (JobExpired) and counts it.
func ExampleExpiresIn() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	client, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: url, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	// Worth sending only within the next 100 ms (a day, in a real program).
	if _, err := client.Enqueue(ctx, "default", "Mail.Digest", []any{42}, exq.ExpiresIn(100*time.Millisecond)); err != nil {
		fmt.Println(err)
		return
	}
	// An expiry that has passed is refused at once: nothing is written.
	_, err = client.Enqueue(ctx, "default", "Mail.Digest", []any{43}, exq.ExpiresAt(time.Now().Add(-time.Hour)))
	fmt.Println(err != nil)
	time.Sleep(200 * time.Millisecond) // no node runs meanwhile

	expired := make(chan exq.Event, 1)
	ran := 0
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, KeepExpiredJobs: true,
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.JobExpired {
				expired <- ev
			}
		}},
		Workers: map[string]exq.Worker{
			"Mail.Digest": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error { ran++; return nil }),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	ev := <-expired
	fmt.Println(ev.Kind, ev.Class, "ran:", ran)
	n, err := e.API().ExpiredJobs(ctx)
	fmt.Println("expired:", n, err)
	dead, err := e.API().Find(ctx, exq.DeadSet, ev.JID)
	if err != nil {
		fmt.Println(err)
		return
	}
	job, _ := dead.Job()
	fmt.Println(job.ErrorClass)
	// Output:
	// true
	// job_expired Mail.Digest ran: 0
	// expired: 1 <nil>
	// exq.Expired
}
