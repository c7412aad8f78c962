package exq

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// benchCallers is the number of goroutines of the concurrent enqueue benchmarks: an HTTP
// server's handlers, say, each enqueueing one job per request.
const benchCallers = 50

// runCallers runs op b.N times in all, from n goroutines at once, and reports ns/op over the
// whole run (as b.RunParallel does, but with n goroutines whatever GOMAXPROCS is).
func runCallers(b *testing.B, n int, op func() error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	b.ResetTimer()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// benchCleanQueue empties the benchmark's queue after each run, outside the timer.
func benchCleanQueue(b *testing.B, rdb *redis.Client, key string) {
	b.Cleanup(func() { rdb.Del(context.Background(), key) })
}

// BenchmarkEnqueueGroupCommit50 is Enqueue from 50 goroutines at once: the calls that arrive
// while a write is in flight share the next round trip (groupcommit.go). Compare ns/op with
// BenchmarkRawLPush50, the floor: one LPUSH per call from as many goroutines.
func BenchmarkEnqueueGroupCommit50(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	en := &enqueuer{jq: testStore(rdb, keysFor(ns), ""), now: time.Now, maxRetries: DefaultMaxRetries}
	benchCleanQueue(b, rdb, keysFor(ns).Queue("default"))
	ctx := context.Background()
	args := []any{42, "welcome"}
	b.ReportAllocs()
	runCallers(b, benchCallers, func() error {
		_, err := en.enqueue(ctx, "default", "W", args, nil)
		return err
	})
}

// BenchmarkRawLPush50 is one LPUSH of a ready job document per call, from 50 goroutines on
// one client: what a bare Redis client pays, with no job built, no script and no wake-up.
func BenchmarkRawLPush50(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	key := keysFor(ns).Queue("default")
	benchCleanQueue(b, rdb, key)
	ctx := context.Background()
	doc := benchDoc(`[42,"welcome"]`)
	b.ReportAllocs()
	runCallers(b, benchCallers, func() error {
		return rdb.LPush(ctx, key, doc).Err()
	})
}

// stubRedis answers every command at once with 0, without a network: what is left of an
// enqueue is its CPU cost in exq and go-redis.
type stubRedis struct{}

func (stubRedis) DialHook(next redis.DialHook) redis.DialHook { return next }

func (stubRedis) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		if c, ok := cmd.(*redis.Cmd); ok {
			c.SetVal(int64(0))
		}
		return nil
	}
}

func (stubRedis) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// BenchmarkGroupCommitLoneCaller is what group commit adds to a lone caller's enqueue, with the
// round trip taken out (stubRedis): "direct" writes with the one-job script as before group
// commit, "group" goes through GroupCommit.Write, which finds no write in flight and does the
// same. The difference is the whole cost a single caller pays.
func BenchmarkGroupCommitLoneCaller(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	rdb.AddHook(stubRedis{})
	b.Cleanup(func() { _ = rdb.Close() })
	en := &enqueuer{jq: testStore(rdb, keysFor("bench"), ""), now: time.Now, maxRetries: DefaultMaxRetries}
	ctx := context.Background()
	item := store.BatchItem{Queue: "default", Job: benchDoc(`[42,"welcome"]`)}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := en.jq.Enqueue(ctx, item.Queue, item.Job, item.Lock); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("group", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := en.group.Write(ctx, en.jq, item); err != nil {
				b.Fatal(err)
			}
		}
	})
}
