package exqprom_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqprom"
)

// A node whose events and Redis state are exported on /metrics. The example runs against an
// in-process Redis and its own registry; a real program passes its RedisURL and uses
// prometheus.MustRegister(c) with http.Handle("/metrics", promhttp.Handler()).
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()

	var once sync.Once
	done := make(chan struct{})
	opts := exq.Options{
		RedisURL: "redis://" + m.Addr() + "/0",
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Workers: map[string]exq.Worker{
			"MyApp.SendEmail": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
		},
	}
	// The API reads queue sizes, the sets and the counters from Redis on each scrape.
	api, err := exq.NewAPI(ctx, opts.ClientOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer api.Close()
	c := exqprom.New(api, exqprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	opts.Listeners = []exq.Listener{c.Listener(), func(ev exq.Event) {
		if ev.Kind == exq.JobSucceeded {
			once.Do(func() { close(done) })
		}
	}}

	e, err := exq.Start(ctx, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	if _, err := e.Enqueue(ctx, "default", "MyApp.SendEmail", []any{42}); err != nil {
		fmt.Println(err)
		return
	}
	<-done

	resp, err := http.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		l := lines.Text()
		if strings.HasPrefix(l, "exq_jobs_enqueued_total") || strings.HasPrefix(l, "exq_queue_size") ||
			strings.HasPrefix(l, "exq_jobs_processed_total") && strings.Contains(l, `outcome="succeeded"`) {
			fmt.Println(l)
		}
	}
	// Output:
	// exq_jobs_enqueued_total{class="MyApp.SendEmail",queue="default"} 1
	// exq_jobs_processed_total{class="MyApp.SendEmail",outcome="succeeded",queue="default"} 1
	// exq_queue_size{queue="default"} 0
}
