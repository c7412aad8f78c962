package exq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

// Backfill is the args of a long job that walks rows by id.
type Backfill struct {
	Table string `json:"table"`
	Rows  int    `json:"rows"`
}

func (Backfill) Class() string { return "MyApp::Backfill" }

// A long job as an Iteration: exq calls Each with the cursor of the next item (here a row
// number), saves the cursor every SaveEvery and whenever the run stops, and resumes from it after
// a deploy (Stop), a crash (rescue) or a retry. API.IterationProgress reads the saved state.
func ExampleIteration() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	done := make(chan string, 1)
	backfill := exq.Iteration[Backfill, int]{
		SaveEvery: time.Second,
		Each: func(ctx context.Context, job *exq.Job, a Backfill, row int) (int, bool, error) {
			// ... update row `row` of a.Table ...
			return row + 1, row+1 >= a.Rows, nil
		},
		OnComplete: func(ctx context.Context, job *exq.Job, a Backfill, row int) {
			done <- fmt.Sprintf("%s: %d rows", a.Table, row)
		},
	}
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Register: []exq.Registration{exq.IterationFor(backfill)}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	jid, err := exq.EnqueueArgs(ctx, e, Backfill{Table: "users", Rows: 5000})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-done)
	p, _, err := e.API().IterationProgress(ctx, jid)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("runs %d, cursor %s, done %v\n", p.Executions, p.Cursor, p.Done)
	// Output:
	// users: 5000 rows
	// runs 1, cursor 5000, done true
}
