package exqpg

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// runs records the runs of jobs by jid.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func newRuns() *runs { return &runs{n: map[string]int{}} }

func (r *runs) worker() exq.Worker {
	return exq.WorkerFunc(func(_ context.Context, job *exq.Job) error {
		r.mu.Lock()
		r.n[job.JID]++
		r.mu.Unlock()
		return nil
	})
}

func (r *runs) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.n))
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startNode starts an exq node on rdb and ns that runs class W on the given queues into r,
// stopped when the test ends.
func startNode(t testing.TB, rdb redis.UniversalClient, ns string, r *runs, queues ...string) *exq.Exq {
	t.Helper()
	qs := make([]exq.Queue, len(queues))
	for i, q := range queues {
		qs[i] = exq.Queue{Name: q, Concurrency: 20}
	}
	e, err := exq.Start(context.Background(), exq.Options{Redis: rdb, Namespace: ns, Queues: qs,
		Workers: map[string]exq.Worker{"W": r.worker()}, Logger: quietLogger(),
		PollTimeout: 20 * time.Millisecond, SchedulerPollTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
	})
	return e
}

// runRelay runs a relay until the test ends.
func runRelay(t testing.TB, pool *pgxpool.Pool, p Pusher, o RelayOptions) *Relay {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	r, err := NewRelay(pool, p, o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// inTx runs f in a transaction of pool and commits it.
func inTx(t testing.TB, pool *pgxpool.Pool, f func(tx Tx) error) error {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// rows counts the outbox's rows.
func rows(t testing.TB, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM "`+schema+`".exq_outbox`).Scan(&n))
	return n
}

// eventually polls cond every 10 ms until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// syncBuffer is a log destination that tests read while the relay writes.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

func (s *syncBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(s, nil)) }
