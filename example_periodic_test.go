package exq_test

import (
	"context"
	"fmt"

	"github.com/exqgo/exq"
)

// Periodic jobs are cron schedules in sidekiq-cron's layout: every node evaluates them, and
// each tick is enqueued once however many nodes (and Ruby processes) run.
func ExamplePeriodicJob() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	e, err := exq.Start(ctx, exq.Options{
		RedisURL: url,
		Logger:   quiet,
		Periodic: []exq.PeriodicJob{
			{Name: "nightly report", Spec: "30 2 * * *", Timezone: "America/New_York", Queue: "reports", Class: "MyApp.Report", Args: []any{"daily"}},
			{Name: "ping", Spec: "@every 30s", Class: "MyApp.Ping"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	schedules, err := e.API().PeriodicJobs(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range schedules {
		fmt.Println(p.Name, "|", p.Spec, "|", p.Queue, p.Class)
	}
	// Output:
	// nightly report | 30 2 * * * America/New_York | reports MyApp.Report
	// ping | */30 * * * * * | default MyApp.Ping
}
