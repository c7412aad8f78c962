// Command webservice is an HTTP service that enqueues a job per request, runs the jobs on
// typed workers given to exq.Start, serves exq's dashboard behind basic auth, and shuts down in
// the order that loses no enqueue: on SIGTERM (or Ctrl-C, or a TERM from Sidekiq's or Exq's
// UI) it stops accepting requests, waits for those in flight (they still enqueue), and only
// then stops exq.
//
//	go run ./examples/webservice                                     # in-process Redis (miniredis)
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/webservice  # a real Redis
//
//	curl -X POST 'http://127.0.0.1:8080/signup?user=42'             # → 202 and the job's jid
//	open http://admin:<password>@127.0.0.1:8080/admin/exq/           # the dashboard
//
// Environment: ADDR (default 127.0.0.1:8080), REDIS_URL, EXQ_NAMESPACE (default "exq"),
// ADMIN_PASSWORD (default: a random one, printed at start), REQUEST_DELAY (a Go duration each
// request works before it enqueues, to watch a drain; default 0).
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/web"
)

// Signup is the args of WebService.Signup jobs; on the wire: [{"user_id":42}].
type Signup struct {
	UserID int `json:"user_id"`
}

// Class names the job class, for the worker and the enqueue side alike.
func (Signup) Class() string { return "WebService.Signup" }

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	// SIGTERM (Kubernetes, systemd) or Ctrl-C ends ctx: that stops exq's workers, and the
	// service begins its shutdown below.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

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
	delay, err := durationEnv("REQUEST_DELAY")
	if err != nil {
		return err
	}

	opts := exq.Options{
		RedisURL:  url,
		Namespace: os.Getenv("EXQ_NAMESPACE"),
		Queues:    []exq.Queue{{Name: "default", Concurrency: 10}},
		Logger:    logger,
		// The workers are given to Start, so they are there before its first fetch: jobs
		// that waited in Redis during the deploy run at once.
		Register: []exq.Registration{exq.WorkerFor(sendWelcome)},
	}
	e, err := exq.Start(ctx, opts)
	if err != nil {
		return err
	}
	// Enqueueing works until Stop, so this runs last, after the HTTP requests have drained.
	defer func() {
		if err := e.Stop(context.Background()); err != nil {
			logger.Error("exq: stop", "error", err)
		}
	}()
	api, err := exq.NewAPI(ctx, opts.ClientOptions())
	if err != nil {
		return err
	}
	defer api.Close()

	password := os.Getenv("ADMIN_PASSWORD")
	if password == "" {
		password = randomPassword()
		fmt.Printf("dashboard: user admin, password %s\n", password)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /signup", signupHandler(e, delay))
	mux.Handle("/admin/exq/", basicAuth("admin", password, web.New(api, web.Options{Prefix: "/admin/exq"})))

	ln, err := net.Listen("tcp", envOr("ADDR", "127.0.0.1:8080"))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("listening on http://%s\n", ln.Addr())

	select {
	case <-e.Done(): // SIGTERM, Ctrl-C, or a TERM from Sidekiq's or Exq's UI
	case err := <-served:
		return err
	}
	// 1. Stop accepting requests and 2. wait for those in flight: they may still enqueue.
	drain, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(drain); err != nil {
		return fmt.Errorf("http: shutdown: %w", err)
	}
	fmt.Println("requests drained; stopping exq")
	return nil // 3. the deferred e.Stop, once nothing can enqueue any more
}

// sendWelcome is the worker of Signup jobs.
func sendWelcome(ctx context.Context, job *exq.Job, a Signup) error {
	fmt.Printf("welcome sent jid=%s user=%d\n", job.JID, a.UserID)
	return nil
}

// signupHandler enqueues a Signup job for ?user=N and answers 202 with its jid.
func signupHandler(enq exq.Enqueuer, delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := strconv.Atoi(r.URL.Query().Get("user"))
		if err != nil {
			http.Error(w, "user must be a number", http.StatusBadRequest)
			return
		}
		if delay > 0 {
			time.Sleep(delay) // the request's own work, before it enqueues
		}
		jid, err := exq.EnqueueArgs(r.Context(), enq, Signup{UserID: user})
		if err != nil {
			http.Error(w, "could not enqueue: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintln(w, jid)
	})
}

// basicAuth lets through only requests with user and password (compared in constant time).
func basicAuth(user, password string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(user + ":" + password))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		got := sha256.Sum256([]byte(u + ":" + p))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="exq", charset="UTF-8"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func durationEnv(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errors.New(name + ": " + err.Error())
	}
	return d, nil
}
