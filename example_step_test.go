package exq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

// Durable steps: a job that charges a card and then sends a receipt fails after the charge;
// its retry gets the saved charge back instead of charging again, and runs only the receipt.
func ExampleStep() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	charges, receipts := 0, 0
	done := make(chan string, 1)
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Backoff: func(int, *exq.Job) time.Duration { return 0 }, // retry at once, for the example
		Workers: map[string]exq.Worker{
			"Shop.Checkout": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				charge, err := exq.Step(ctx, "charge", func(ctx context.Context) (string, error) {
					charges++
					return "ch_1001", nil // the payment provider's id, saved under the job
				})
				if err != nil {
					return err
				}
				if job.RetryCount == 0 {
					return errors.New("the mail server is down") // the first run fails here
				}
				if _, err := exq.Step(ctx, "receipt", func(ctx context.Context) (bool, error) {
					receipts++
					return true, nil
				}); err != nil {
					return err
				}
				done <- charge
				return nil
			}),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	jid, err := e.Enqueue(ctx, "default", "Shop.Checkout", []any{1001})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("charged", <-done)
	fmt.Println("charges:", charges, "receipts:", receipts)

	// The saved steps, as `exq job` and the job's dashboard page show them (kept StepTTL
	// after the job succeeded).
	steps, err := e.API().Steps(ctx, jid, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range steps.Steps {
		fmt.Println(s.Name, s.JSON)
	}
	// A name that is not acceptable is refused before the step runs.
	_, err = exq.Step(exq.WithJob(ctx, &exq.Job{}), "", func(context.Context) (int, error) { return 0, nil })
	fmt.Println(errors.Is(err, exq.ErrInvalidStep))
	// Output:
	// charged ch_1001
	// charges: 1 receipts: 1
	// charge "ch_1001"
	// receipt true
	// true
}
