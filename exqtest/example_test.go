package exqtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqtest"
)

// register is application code under test: it depends on exq.Enqueuer, which *exq.Exq,
// *exq.Client and the doubles implement.
func register(ctx context.Context, jobs exq.Enqueuer, userID int) error {
	_, err := jobs.Enqueue(ctx, "mail", "MyApp.Welcome", []any{userID})
	return err
}

// The Fake records jobs and runs nothing; the Inline runs the worker at once.
func Example() {
	ctx := context.Background()
	fake := exqtest.NewFake() // records jobs: Jobs(), JobsOfClass(), JobsInQueue(), Clear()
	if err := register(ctx, fake, 42); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(fake.JobsOfClass("MyApp.Welcome")), string(fake.Jobs()[0].Args))

	welcome := exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error { return errors.New("smtp down") })
	inline := exqtest.NewInline(map[string]exq.Worker{"MyApp.Welcome": welcome})
	err := register(ctx, inline, 42) // runs the worker now; its error comes back here
	fmt.Println(err)
	// Output:
	// 1 [42]
	// smtp down
}

// The doubles honour unique jobs as Redis does, and their clock moves only when told.
func ExampleFake_Complete() {
	ctx := context.Background()
	sync := exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Hour})
	fake := exqtest.NewFake()
	jid, _ := fake.Enqueue(ctx, "default", "MyApp.Sync", []any{42}, sync)
	_, err := fake.Enqueue(ctx, "default", "MyApp.Sync", []any{42}, sync) // errors.Is(err, exq.ErrUniqueConflict)
	fmt.Println(errors.Is(err, exq.ErrUniqueConflict))
	fake.Complete(jid)      // the job ran: the lock is free
	fake.Advance(time.Hour) // or let every lock of For ≤ 1h expire
	_, err = fake.Enqueue(ctx, "default", "MyApp.Sync", []any{42}, sync)
	fmt.Println(err)
	// Output:
	// true
	// <nil>
}

// Signup is the args of a typed job: its type names its class.
type Signup struct {
	UserID int `json:"user_id"`
}

// Class names the job's class.
func (Signup) Class() string { return "MyApp.Signup" }

// Typed code is tested with no class string: ArgsOf decodes the recorded jobs of a type's
// class as its worker would.
func ExampleArgsOf() {
	ctx := context.Background()
	fake := exqtest.NewFake()
	_, _ = exq.EnqueueArgs(ctx, fake, Signup{UserID: 42}) // the code under test enqueues
	signups, err := exqtest.ArgsOf[Signup](fake)
	fmt.Println(signups, err)
	// Output:
	// [{42}] <nil>
}
