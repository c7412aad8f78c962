package exq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

// ErrRateLimited is what a payment provider's client returns when it is asked to back off.
var ErrRateLimited = errors.New("rate limited")

// ChargeWorker charges a card. The provider asks to be left alone for an hour after a rate
// limit, so the worker chooses its retries' delay for that error itself.
type ChargeWorker struct {
	charge func(ctx context.Context, job *exq.Job) error
}

func (w ChargeWorker) Perform(ctx context.Context, job *exq.Job) error { return w.charge(ctx, job) }

// NextRetry is the delay before the job runs again after err; job.RetryCount is the number of
// that retry (1 for the first). Zero or less leaves it to Options.Backoff.
func (ChargeWorker) NextRetry(job *exq.Job, err error) time.Duration {
	if errors.Is(err, ErrRateLimited) {
		return time.Duration(job.RetryCount) * time.Hour
	}
	return 0
}

func ExampleWorker_nextRetry() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	retried := make(chan exq.Event, 1)
	e, err := exq.Start(ctx, exq.Options{
		RedisURL: url,
		Logger:   quiet,
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.JobRetried {
				retried <- ev
			}
		}},
		Workers: map[string]exq.Worker{
			"MyApp.Charge": ChargeWorker{charge: func(ctx context.Context, job *exq.Job) error {
				return fmt.Errorf("charge: %w", ErrRateLimited)
			}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	if _, err := e.Enqueue(ctx, "default", "MyApp.Charge", []any{"order-7"}); err != nil {
		fmt.Println(err)
		return
	}

	ev := <-retried
	fmt.Printf("retry %d runs again in about %s\n", ev.RetryCount, time.Until(ev.At).Round(time.Hour))
	// Output: retry 1 runs again in about 1h0m0s
}
