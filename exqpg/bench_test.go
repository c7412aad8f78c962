package exqpg

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// Commit → job start: one goroutine commits transactions of one job each, back to back; three
// relays push them; a node runs them. The latency of a job is from its commit's return to its
// worker's start. Run with: go test -run '^$' -bench ToStart -benchtime 3000x ./exqpg
func BenchmarkCommitToStart(b *testing.B) { benchToStart(b, true) }

// The baseline of BenchmarkCommitToStart: the same loop enqueues straight to Redis after each
// commit (exq.Client.Enqueue, no outbox), from the enqueue's return to the worker's start.
func BenchmarkDirectEnqueueToStart(b *testing.B) { benchToStart(b, false) }

func benchToStart(b *testing.B, outbox bool) {
	pool, schema := pgPool(b)
	rdb, ns := redisNS(b)
	ob, _ := New(schema)
	ctx := context.Background()
	var mu sync.Mutex
	started := map[string]time.Time{}
	w := exq.WorkerFunc(func(_ context.Context, job *exq.Job) error {
		now := time.Now()
		mu.Lock()
		started[job.JID] = now
		mu.Unlock()
		return nil
	})
	node, err := exq.Start(ctx, exq.Options{Redis: rdb, Namespace: ns, Queues: []exq.Queue{{Name: "q", Concurrency: 50}},
		Workers: map[string]exq.Worker{"W": w}, Logger: quietLogger()})
	require.NoError(b, err)
	b.Cleanup(func() { _ = node.Stop(context.Background()) })
	direct := client(b, rdb, ns)
	if outbox {
		for range 3 { // each relay with a pool of its own, as in a process of its own
			runRelay(b, ownPool(b), client(b, rdb, ns), RelayOptions{Schema: schema})
		}
	}
	committed := make(map[string]time.Time, b.N)
	b.ResetTimer()
	for range b.N {
		tx, err := pool.Begin(ctx)
		require.NoError(b, err)
		var jid string
		if outbox {
			jid, err = ob.Enqueue(ctx, tx, "q", "W", nil)
			require.NoError(b, err)
		}
		_, err = tx.Exec(ctx, "SELECT 1") // the application's own write
		require.NoError(b, err)
		require.NoError(b, tx.Commit(ctx))
		if !outbox {
			jid, err = direct.Enqueue(ctx, "q", "W", nil)
			require.NoError(b, err)
		}
		committed[jid] = time.Now()
	}
	eventually(b, time.Minute, "every job started", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(started) >= b.N
	})
	b.StopTimer()
	lat := make([]time.Duration, 0, b.N)
	mu.Lock()
	for jid, c := range committed {
		lat = append(lat, max(started[jid].Sub(c), 0))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// Relayed throughput: b.N committed rows wait in the table, then three relays push them all.
// Run with: go test -run '^$' -bench RelayThroughput -benchtime 100000x ./exqpg
func BenchmarkRelayThroughput(b *testing.B) {
	pool, schema := pgPool(b)
	rdb, ns := redisNS(b)
	ob, _ := New(schema)
	ctx := context.Background()
	specs := make([]exq.JobSpec, 1000)
	for i := range specs {
		specs[i] = exq.JobSpec{Queue: "q", Class: "W", Args: []any{i}}
	}
	for n := 0; n < b.N; n += len(specs) {
		require.NoError(b, inTx(b, pool, func(tx Tx) error {
			_, err := ob.EnqueueAll(ctx, tx, specs[:min(len(specs), b.N-n)])
			return err
		}))
	}
	b.ResetTimer()
	start := time.Now()
	for range 3 {
		runRelay(b, ownPool(b), client(b, rdb, ns), RelayOptions{Schema: schema})
	}
	eventually(b, 10*time.Minute, "every row relayed", func() bool { return rows(b, pool, schema) == 0 })
	elapsed := time.Since(start)
	b.StopTimer()
	require.Equal(b, int64(b.N), rdb.LLen(ctx, ns+":queue:q").Val())
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
}

// ownPool is a pool of its own on the test database.
func ownPool(b *testing.B) *pgxpool.Pool {
	b.Helper()
	p, err := pgxpool.New(context.Background(), testDBURL)
	require.NoError(b, err)
	b.Cleanup(p.Close)
	return p
}
