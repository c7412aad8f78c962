package exq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

func ExampleExq_Enqueue() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, Queues: []exq.Queue{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// Now, with three retries instead of the default 25 and an id of our own.
	jid, err := e.Enqueue(ctx, "default", "MyApp.Resize", []any{"img.png", 640}, exq.MaxRetries(3), exq.JID("resize-img.png"))
	fmt.Println(jid, err)
	// In ten minutes, or at a given time.
	_, err = e.EnqueueIn(ctx, "default", "MyApp.Reminder", 10*time.Minute, []any{42})
	fmt.Println(err)
	_, err = e.EnqueueAt(ctx, "default", "MyApp.Report", time.Date(2030, 1, 1, 8, 0, 0, 0, time.UTC), nil)
	fmt.Println(err)
	// Bad input is refused before anything is written.
	_, err = e.Enqueue(ctx, "default", "", nil)
	fmt.Println(err)
	_, err = e.Enqueue(ctx, "default", "MyApp.Resize", map[string]int{"width": 640})
	fmt.Println(err)
	// Output:
	// resize-img.png <nil>
	// <nil>
	// <nil>
	// exq: enqueue: class is empty
	// exq: enqueue: args must be a list (a slice or array), got map[string]int
}

func ExampleExq_EnqueueAll() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, Queues: []exq.Queue{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// One atomic write: all three jobs or none.
	results, err := e.EnqueueAll(ctx, []exq.JobSpec{
		{Queue: "default", Class: "MyApp.Welcome", Args: []any{42}, Options: []exq.EnqueueOption{exq.JID("welcome-42")}},
		{Queue: "default", Class: "MyApp.Tips", Args: []any{42}, In: 24 * time.Hour, Options: []exq.EnqueueOption{exq.JID("tips-42")}},
		{Queue: "mail", Class: "MyApp.Survey", Args: []any{42}, At: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Options: []exq.EnqueueOption{exq.JID("survey-42")}},
	})
	fmt.Println(err)
	for _, r := range results {
		fmt.Println(r.JID)
	}
	// Output:
	// <nil>
	// welcome-42
	// tips-42
	// survey-42
}
