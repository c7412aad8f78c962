package exq_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/exqgo/exq"
)

// LogJobs logs one line per job once its outcome is stored (args left out unless LogArgs).
func ExampleLogJobs() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{} // keep the output stable
			}
			return a
		}}))
	done := make(chan struct{})
	opts := exq.Options{RedisURL: url, Logger: quiet,
		Middleware: []exq.Middleware{exq.LogJobs(logger)},
		Workers: map[string]exq.Worker{"MyApp.Ping": exq.WorkerFunc(func(context.Context, *exq.Job) error {
			return nil
		})},
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.JobSucceeded {
				close(done)
			}
		}},
	}
	e, err := exq.Start(ctx, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Enqueue(ctx, "default", "MyApp.Ping", nil, exq.JID("ping-1")); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	e.Stop(ctx)
	// Output:
	// level=INFO msg="exq: job done" class=MyApp.Ping queue=default jid=ping-1 outcome=done retry_count=0
}

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

// A node that serves three namespaces (shards) of a Redis Cluster, and an enqueue-only client
// that routes jobs the same way. (Not run here: it needs a cluster.)
func ExampleStartSharded() {
	ctx := context.Background()
	url := "redis://10.0.0.1:7000?cluster=true&addr=10.0.0.2:7000&addr=10.0.0.3:7000"
	workers := map[string]exq.Worker{"MyApp.Resize": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil })}

	shards := exq.ShardOptions{Namespaces: []string{"{exq0}", "{exq2}", "{exq5}"}, By: exq.ByJID}
	node, err := exq.StartSharded(ctx, exq.Options{RedisURL: url, Workers: workers}, shards)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Stop(ctx)
	client, err := exq.NewShardedClient(ctx, exq.ClientOptions{RedisURL: url}, shards) // enqueue only
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	_, err = client.Enqueue(ctx, "default", "MyApp.Resize", []any{"img.png"}, exq.MaxRetries(3))
	fmt.Println(err)
}
