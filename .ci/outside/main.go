// Command outside is a user's program outside this repository: it imports exq, web, exqprom
// and exqotel as published modules (CI builds it with no workspace and no replace, from a
// GOPROXY=file:// directory made from this checkout), runs one job through a node with the
// metrics and tracing integrations, and fetches the dashboard and the metrics page.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqotel"
	"github.com/exqgo/exq/exqprom"
	"github.com/exqgo/exq/web"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := miniredis.Run()
	if err != nil {
		return err
	}
	defer m.Close()
	ran := make(chan string, 1)
	opts := exq.Options{
		RedisURL:     "redis://" + m.Addr() + "/0",
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Middleware:   []exq.Middleware{exqotel.Middleware()},
		EnqueueHooks: []exq.EnqueueHook{exqotel.EnqueueHook()},
		Workers: map[string]exq.Worker{
			"Outside.Hello": exq.WorkerFunc(func(_ context.Context, job *exq.Job) error {
				ran <- job.JID
				return nil
			}),
		},
	}
	api, err := exq.NewAPI(ctx, opts.ClientOptions())
	if err != nil {
		return err
	}
	defer api.Close()
	metrics := exqprom.New(api, exqprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	opts.Listeners = []exq.Listener{metrics.Listener()}
	e, err := exq.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer e.Stop(context.Background())
	jid, err := e.Enqueue(ctx, "default", "Outside.Hello", []any{"world"})
	if err != nil {
		return err
	}
	select {
	case got := <-ran:
		if got != jid {
			return fmt.Errorf("ran %s, enqueued %s", got, jid)
		}
	case <-ctx.Done():
		return fmt.Errorf("job %s did not run: %w", jid, ctx.Err())
	}
	mux := http.NewServeMux()
	mux.Handle("/exq/", http.StripPrefix("/exq", web.New(api, web.Options{ReadOnly: true})))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]string{"/exq/": "Processed", "/metrics": "exq_jobs_enqueued_total"} {
		if err := get(srv.URL+path, want); err != nil {
			return err
		}
	}
	fmt.Fprintln(os.Stdout, "outside module: exq, web, exqprom and exqotel built and ran one job", jid)
	return nil
}

func get(url, want string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s, body without %q", url, resp.Status, want)
	}
	return nil
}
