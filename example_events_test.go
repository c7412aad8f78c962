package exq_test

import (
	"context"
	"fmt"

	"github.com/exqgo/exq"
)

// Listeners receive a typed event for every job's enqueue, start and outcome, and for the
// node's life. They run where the event happens: keep them quick.
func ExampleListener() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	died := make(chan exq.Event, 1)
	opts := exq.Options{RedisURL: url, Logger: quiet, MaxRetries: exq.NoRetries,
		Workers: map[string]exq.Worker{"MyApp.Charge": exq.WorkerFunc(func(context.Context, *exq.Job) error {
			return fmt.Errorf("card declined")
		})},
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.JobDied {
				died <- ev // alert(ev.Queue, ev.Class, ev.JID, ev.Err)
			}
		}},
	}
	e, err := exq.Start(ctx, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	if _, err := e.Enqueue(ctx, "default", "MyApp.Charge", []any{42}, exq.JID("charge-42")); err != nil {
		fmt.Println(err)
		return
	}
	ev := <-died
	fmt.Println(ev.Class, ev.JID, ev.Err)
	// Output: MyApp.Charge charge-42 card declined
}
