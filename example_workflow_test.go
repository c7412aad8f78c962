package exq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

// A workflow is jobs that wait for others: each is pushed to its queue, once, when every job
// it depends on has succeeded. When one dies instead, the jobs waiting for it are canceled
// (or, with RunOnParentDeath, run anyway).
func ExampleExq_EnqueueWorkflow() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	ran := make(chan string, 10)
	step := func(ctx context.Context, job *exq.Job) error {
		_, name := job.WorkflowID()
		ran <- name
		if job.Class == "ETL.Load" {
			return errors.New("warehouse is read-only")
		}
		return nil
	}
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, MaxRetries: exq.NoRetries,
		Workers: map[string]exq.Worker{
			"ETL.Extract": exq.WorkerFunc(step), "ETL.Transform": exq.WorkerFunc(step),
			"ETL.Load": exq.WorkerFunc(step), "ETL.Report": exq.WorkerFunc(step),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// extract → transform → load → report, and a cleanup that runs after load whatever
	// became of it.
	w, err := e.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "nightly ETL"}, append(exq.Chain(
		exq.WorkflowJob{Name: "extract", Class: "ETL.Extract"},
		exq.WorkflowJob{Name: "transform", Class: "ETL.Transform"},
		exq.WorkflowJob{Name: "load", Class: "ETL.Load"},
		exq.WorkflowJob{Name: "report", Class: "ETL.Report"},
	), exq.WorkflowJob{Name: "cleanup", Class: "ETL.Report", DependsOn: []string{"load"}, OnParentDeath: exq.RunOnParentDeath}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 4 {
		fmt.Println("ran", <-ran)
	}

	var st exq.WorkflowStatus
	// The last job's end is recorded just after it returns.
	for deadline := time.Now().Add(10 * time.Second); st.FinishedAt.IsZero() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, err = e.API().Workflow(ctx, w.ID); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, j := range st.Jobs {
		if j.Reason != "" {
			j.State += " (" + j.Reason + ")"
		}
		fmt.Println(j.Name+":", j.State)
	}
	// Output:
	// ran extract
	// ran transform
	// ran load
	// ran cleanup
	// cleanup: succeeded
	// extract: succeeded
	// load: dead
	// report: canceled (load dead)
	// transform: succeeded
}
