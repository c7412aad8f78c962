package exq

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exqgo/exq/internal/testutil"
)

// BenchmarkProcessNoop measures end-to-end throughput on a real Redis: b.N no-op jobs are
// enqueued in batches before the node starts, and the clock runs until the last one is done.
func BenchmarkProcessNoop(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	en := &enqueuer{jq: testStore(rdb, keysFor(ns), ""), now: time.Now, maxRetries: DefaultMaxRetries}
	batch := make([]JobSpec, 0, 500)
	for i := 0; i < b.N; i++ {
		batch = append(batch, JobSpec{Queue: "default", Class: "Noop", Args: []any{i}})
		if len(batch) == cap(batch) || i == b.N-1 {
			if _, err := en.enqueueAll(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var done atomic.Int64
	all := make(chan struct{})
	noop := WorkerFunc(func(context.Context, *Job) error {
		if done.Add(1) == int64(b.N) {
			close(all)
		}
		return nil
	})
	b.ResetTimer()
	e, err := Start(ctx, Options{Redis: rdb, Namespace: ns, Logger: testLogger(), DisableScheduler: true,
		Queues: []Queue{{Name: "default", Concurrency: 50}}, Workers: map[string]Worker{"Noop": noop}})
	if err != nil {
		b.Fatal(err)
	}
	<-all
	b.StopTimer()
	b.ReportMetric(float64(b.N)/float64(e.mgr.polls.Load()), "jobs/fetch")
	if err := e.Stop(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEnqueue measures single enqueues from one caller on a real Redis.
func BenchmarkEnqueue(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	en := &enqueuer{jq: testStore(rdb, keysFor(ns), ""), now: time.Now, maxRetries: DefaultMaxRetries}
	args := []any{42, "welcome"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := en.enqueue(ctx, "default", "W", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}
