//go:build unix

package exqpg

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// BenchmarkFeatureCostOutbox is the outbox's row of the table "What each feature costs"
// (docs/benchmarks.md; BenchmarkFeatureCost in the exq package has the others), with a plain
// row of its own to compare with in the same run: a no-op job's whole life (enqueue in
// groups of 500, fetch, run, acknowledgement) on one node (concurrency 50), enqueued straight
// to Redis (plain) or written to the outbox in a transaction of 500 rows and pushed by one
// relay (outbox). It reports this process's CPU per job (client-µs/job: the node, the
// enqueuing and the relay) and the Redis server's (redis-µs/job); Postgres's own CPU is not
// counted.
//
//	go test -run '^$' -bench BenchmarkFeatureCostOutbox -benchtime 20000x -count 3 ./exqpg | go run ./bench/costtable
func BenchmarkFeatureCostOutbox(b *testing.B) {
	for _, kind := range []string{"plain", "outbox"} {
		b.Run(kind, func(b *testing.B) { benchOutboxCost(b, kind == "outbox") })
	}
}

func benchOutboxCost(b *testing.B, outbox bool) {
	pool, schema := pgPool(b)
	rdb, ns := redisNS(b)
	ob, err := New(schema)
	require.NoError(b, err)
	ctx := context.Background()
	var done atomic.Int64
	all := make(chan struct{})
	node, err := exq.Start(ctx, exq.Options{Redis: rdb, Namespace: ns, Queues: []exq.Queue{{Name: "q", Concurrency: 50}},
		Workers: map[string]exq.Worker{"W": exq.WorkerFunc(func(context.Context, *exq.Job) error {
			if done.Add(1) == int64(b.N) {
				close(all)
			}
			return nil
		})}, Logger: quietLogger()})
	require.NoError(b, err)
	if outbox {
		c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quietLogger()})
		require.NoError(b, err)
		b.Cleanup(func() { _ = c.Close() })
		runRelay(b, pool, c, RelayOptions{Schema: schema})
	}
	const group = 500
	redis0, client0 := redisCPU(b, rdb), ownCPU(b)
	b.ResetTimer()
	for n := 0; n < b.N; n += group {
		specs := make([]exq.JobSpec, min(group, b.N-n))
		for i := range specs {
			specs[i] = exq.JobSpec{Queue: "q", Class: "W", Args: []any{n + i}}
		}
		if outbox {
			require.NoError(b, inTx(b, pool, func(tx Tx) error {
				_, err := ob.EnqueueAll(ctx, tx, specs)
				return err
			}))
		} else {
			_, err := node.EnqueueAll(ctx, specs)
			require.NoError(b, err)
		}
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d jobs done", done.Load(), b.N)
	}
	require.NoError(b, node.Stop(ctx)) // the acknowledgements reach Redis before its CPU is read
	b.StopTimer()
	b.ReportMetric((ownCPU(b)-client0)*1e6/float64(b.N), "client-µs/job")
	b.ReportMetric((redisCPU(b, rdb)-redis0)*1e6/float64(b.N), "redis-µs/job")
}

// ownCPU is this process's CPU time so far (user + system).
func ownCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// redisCPU is redis-server's CPU time so far (user + system, INFO cpu).
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	require.NoError(b, err)
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(b, err)
			total += f
		}
	}
	return total
}
