package exq_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/exqgo/exq"
)

// Request and response over a queue: the worker returns a result, and the program that
// enqueued the job waits for it (woken by Redis pub/sub, on whichever node the job ran). Any
// worker can store one with SetResult; TypedResult stores what its function returns.
func ExampleExq_WaitResult() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	type Quote struct {
		Total    int    `json:"total"`
		Currency string `json:"currency"`
	}
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Workers: map[string]exq.Worker{
			"Shop.Quote": exq.TypedResult(func(ctx context.Context, job *exq.Job, items []int) (Quote, error) {
				q := Quote{Currency: "EUR"}
				for _, price := range items {
					q.Total += price
				}
				return q, nil
			}),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// Nothing is stored for a job that has not run (or whose result expired, after ResultTTL).
	fmt.Println(errors.Is(e.Result(ctx, "no-such-job", &Quote{}), exq.ErrNoResult))

	jid, err := e.Enqueue(ctx, "default", "Shop.Quote", []any{[]int{1200, 350, 99}})
	if err != nil {
		fmt.Println(err)
		return
	}
	var q Quote
	if err := e.WaitResult(ctx, jid, &q); err != nil { // give ctx a deadline in a real program
		fmt.Println(err)
		return
	}
	fmt.Println(q.Total, q.Currency)
	// Output:
	// true
	// 1649 EUR
}
