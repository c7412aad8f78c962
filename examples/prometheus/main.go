// Command prometheus shows exq's metrics in Prometheus with package exqprom: the collector's
// Listener counts what this node does (jobs enqueued, run by outcome, their durations) and,
// on each scrape, the collector reads what the fleet shares from Redis (queue sizes and
// latencies, the retry, scheduled and dead sets, live nodes). The program serves /metrics on
// a loopback port, runs a few jobs (one fails once and is retried), waits until the node has
// written its counters to Redis (once a second), scrapes its own /metrics once and prints the
// exq_ lines. It exits 0 when the scrape shows every run, counted by the node
// (exq_jobs_processed_total) and by the fleet's counters in Redis (exq_processed_total,
// exq_failed_total) alike.
//
// It is a module of its own, as exqprom is, so that the Prometheus client stays out of the
// core module's dependencies. In this repository go.work joins it to the checkout:
//
//	cd examples/prometheus && go run .                                  # in-process Redis (miniredis)
//	cd examples/prometheus && REDIS_URL=redis://127.0.0.1:6379/0 go run .  # a real Redis
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqprom"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
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

	var failedOnce atomic.Bool
	succeeded := make(chan string, 16)
	opts := exq.Options{
		RedisURL:  url,
		Namespace: "exq-example-prometheus",
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Workers: map[string]exq.Worker{"Reports.Build": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			if failedOnce.CompareAndSwap(false, true) {
				return errors.New("the first run fails")
			}
			return nil
		})},
		Backoff: func(int, *exq.Job) time.Duration { return 100 * time.Millisecond },
	}
	// The collector reads the fleet's state through an API (NoCache: every scrape reads Redis;
	// the default caches it for 5 s so that many scrapers do not load Redis).
	api, err := exq.NewAPI(ctx, opts.ClientOptions())
	if err != nil {
		return err
	}
	defer api.Close()
	c := exqprom.New(api, exqprom.Options{CacheFor: exqprom.NoCache})
	prometheus.MustRegister(c)
	opts.Listeners = []exq.Listener{c.Listener(), func(ev exq.Event) {
		if ev.Kind == exq.JobSucceeded {
			succeeded <- ev.JID
		}
	}}

	e, err := exq.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if err := e.Stop(context.Background()); err != nil {
			log.Print(err)
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) // returns http.ErrServerClosed after Shutdown
	defer srv.Shutdown(context.Background())
	fmt.Printf("serving http://%s/metrics\n", ln.Addr())

	want := map[string]bool{}
	for i := 1; i <= 4; i++ {
		jid, err := e.Enqueue(ctx, "default", "Reports.Build", []any{i})
		if err != nil {
			return err
		}
		want[jid] = true
	}
	for len(want) > 0 {
		select {
		case jid := <-succeeded:
			delete(want, jid)
		case <-ctx.Done():
			return fmt.Errorf("prometheus: %d of 4 jobs did not succeed within 10 s", len(want))
		}
	}
	// Two counts of the same runs: exq_jobs_processed_total is this node's Listener, counted as
	// each run ends; exq_processed_total and exq_failed_total are the fleet's counters in Redis
	// (Sidekiq's stat:processed and stat:failed), which each node writes about once a second.
	// Scraped at once they would still say 0, so wait until the node has written them.
	for {
		o, err := api.Overview(ctx)
		if err != nil {
			return err
		}
		if o.Processed >= 4 && o.Failed >= 1 {
			break
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("prometheus: the node did not write its counters to Redis within 10 s (processed %d, failed %d)", o.Processed, o.Failed)
		}
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ln.Addr().String()+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Both counts agree: 4 runs succeeded and 1 failed (and was retried).
	expect := map[string]bool{`exq_jobs_processed_total{class="Reports.Build",outcome="succeeded",queue="default"} 4`: false,
		`exq_jobs_processed_total{class="Reports.Build",outcome="retried",queue="default"} 1`: false,
		"exq_processed_total 4": false, "exq_failed_total 1": false}
	for lines := bufio.NewScanner(resp.Body); lines.Scan(); {
		l := lines.Text()
		if strings.HasPrefix(l, "exq_") && !strings.HasPrefix(l, "exq_job_duration_seconds_bucket") {
			fmt.Println(l)
			if _, ok := expect[l]; ok {
				expect[l] = true
			}
		}
	}
	for l, seen := range expect {
		if !seen {
			return errors.New("prometheus: /metrics has no line " + l)
		}
	}
	return nil
}
