// Command periodic shows periodic jobs: a schedule given to Start (Options.Periodic) enqueues
// a job every second, exactly once per tick however many nodes run it; the API lists it with
// its history and next tick, then disables it, after which no tick is enqueued. Schedules are
// stored in sidekiq-cron's layout, so Sidekiq's Cron tab and the exq CLI (exq cron) see them
// too. It prints what happened and exits 0.
//
//	go run ./examples/periodic                                  # in-process Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/periodic  # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
)

// Probe is the args of Ops.Probe jobs: check that a service answers.
type Probe struct {
	Target string `json:"target"`
}

// Class names the job's class.
func (Probe) Class() string { return "Ops.Probe" }

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		m, err := miniredis.Run()
		if err != nil {
			return err
		}
		defer m.Close()
		url = "redis://" + m.Addr() + "/0"
		fmt.Println("REDIS_URL is unset: using an in-process Redis (miniredis)")
	}

	ran := make(chan string, 16)
	e, err := exq.Start(ctx, exq.Options{
		RedisURL:  url,
		Namespace: "exq-example-periodic",
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Workers: map[string]exq.Worker{Probe{}.Class(): exq.Typed(func(ctx context.Context, job *exq.Job, p Probe) error {
			ran <- fmt.Sprintf("Ops.Probe %s at %s (jid %s)", p.Target, time.Now().Format("15:04:05.000"), job.JID)
			return nil
		})},
		// Written to Redis at Start: a new schedule is created; an existing one keeps its
		// status (enabled or not) and its history.
		Periodic: []exq.PeriodicJob{{
			Name:        "probe-db",
			Spec:        "@every 1s", // stored as the cron line "*/1 * * * * *"
			Class:       Probe{}.Class(),
			Args:        []any{Probe{Target: "db"}},
			Description: "checks the database every second",
		}},
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(context.Background()); err != nil {
			log.Print(err)
		}
	}()

	timeout := time.After(10 * time.Second)
	for i := 0; i < 3; i++ {
		select {
		case line := <-ran:
			fmt.Println(line)
		case <-timeout:
			return fmt.Errorf("periodic: %d of 3 ticks ran within 10 s", i)
		}
	}

	api := e.API() // or exq.NewAPI, in a process that runs no jobs
	all, err := api.PeriodicJobs(ctx)
	if err != nil {
		return err
	}
	for _, p := range all {
		fmt.Printf("schedule %s: %q %s → queue %s, args %s, enabled %t, last %s, next %s\n", p.Name, p.Spec, p.Class,
			p.Queue, p.Args, p.Enabled, p.LastEnqueued.Format(time.TimeOnly), p.Next.Format(time.TimeOnly))
	}

	if err := api.DisablePeriodic(ctx, "probe-db"); err != nil {
		return err
	}
	before, err := api.PeriodicHistory(ctx, "probe-db") // newest first
	if err != nil {
		return err
	}
	if len(before) == 0 {
		return errors.New("periodic: the schedule ran but has no history")
	}
	fmt.Printf("disabled probe-db after %d ticks; waiting 2 s to see that no tick comes\n", len(before))
	time.Sleep(2 * time.Second) // two ticks' worth
	after, err := api.PeriodicHistory(ctx, "probe-db")
	if err != nil {
		return err
	}
	if after[0].JID != before[0].JID {
		return fmt.Errorf("periodic: a tick was enqueued after DisablePeriodic (jid %s)", after[0].JID)
	}
	st, err := api.PeriodicJob(ctx, "probe-db")
	if err != nil {
		return err
	}
	fmt.Printf("schedule %s: enabled %t, no tick since %s\n", st.Name, st.Enabled, st.LastEnqueued.Format(time.TimeOnly))

	// Remove it, so that the next run of this program starts with a new, enabled schedule.
	return api.DeletePeriodic(ctx, "probe-db")
}
