package exq_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/exqgo/exq"
)

// Limits that hold across every node of the namespace: at most GlobalLimit jobs of a queue
// running at once, and at most Rate.N starts per Rate.Per. Jobs beyond them wait in their
// queue; API.QueueStates (and `exq queues`) shows how much of each limit is in use.
func ExampleQueue_limits() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	var mu sync.Mutex
	running, most := 0, 0
	release, finished := make(chan struct{}), make(chan struct{}, 5)
	charge := exq.WorkerFunc(func(context.Context, *exq.Job) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		<-release // (for the example: stay running while it looks)
		mu.Lock()
		running--
		mu.Unlock()
		finished <- struct{}{}
		return nil
	})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Queues: []exq.Queue{
			// The payment provider takes two calls at a time, from all our nodes together.
			{Name: "payments", Concurrency: 10, GlobalLimit: 2},
			// The mail provider takes 200 a second.
			{Name: "mail", Concurrency: 10, Rate: exq.Rate{N: 200, Per: time.Second}},
		},
		Workers: map[string]exq.Worker{"MyApp.Charge": charge}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	for i := range 5 {
		if _, err := e.Enqueue(ctx, "payments", "MyApp.Charge", []any{i}); err != nil {
			fmt.Println(err)
			return
		}
	}

	var states []exq.QueueState
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if states, err = e.API().QueueStates(ctx); err != nil {
			fmt.Println(err)
			return
		}
		mu.Lock()
		started := running // a slot is in use from the fetch, a moment before its worker starts
		mu.Unlock()
		if len(states) == 2 && states[1].InUse == 2 && states[1].Size == 3 && started == 2 {
			break // two running, three waiting their turn
		}
	}
	for _, q := range states {
		fmt.Printf("%s: limit %d/%d, rate %q, waiting %d\n", q.Name, q.InUse, q.GlobalLimit, q.Rate, q.Size)
	}

	close(release)
	for range 5 {
		<-finished
	}
	fmt.Println("most running at once:", most)
	// Output:
	// mail: limit 0/0, rate "200/1s", waiting 0
	// payments: limit 2/2, rate "", waiting 3
	// most running at once: 2
}
