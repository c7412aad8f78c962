// Micro-benchmarks of the hot paths, next to the end-to-end ones in bench_test.go: job decode,
// job build, enqueue (single, parallel, batch), fetch of a batch, completion, counters. The
// Redis ones need EXQ_TEST_REDIS_URL and report ns/job as well as ns/op, so batch sizes
// compare. Compare two commits with benchstat:
//
//	EXQ_TEST_REDIS_URL=redis://127.0.0.1:PORT/0 go test -run '^$' -bench . -benchmem -count 6 . | tee new.txt
//	benchstat old.txt new.txt

package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// benchDoc is a job document as exq writes it.
func benchDoc(args string) string {
	now := time.Now()
	return wire.NewJob{Class: "MyApp.Worker", Args: json.RawMessage(args), Queue: "default", JID: uuid.NewString(),
		EnqueuedAt: now, CreatedAt: now, Retry: DefaultMaxRetries}.Encode()
}

// BenchmarkDecodeJob is what process does with a fetched document before the worker runs:
// decode the header and build the *Job. Sub-benchmarks: a fresh job, one that failed before
// (error fields, retry_count, failed_at), and one with big args (which must stay raw).
func BenchmarkDecodeJob(b *testing.B) {
	fresh := benchDoc(`[42,"welcome"]`)
	retried := fresh[:len(fresh)-1] + `,"retry_count":3,"failed_at":1796010415.66,"retried_at":1796010515.66,` +
		`"error_message":"dial tcp 10.0.0.1:443: i/o timeout","error_class":"*net.OpError"}`
	big := benchDoc(`[{"items":[` + repeatJSON(`{"sku":"A-1","qty":2,"note":"gift wrap"}`, 200) + `]}]`)
	for _, c := range []struct{ name, raw string }{{"fresh", fresh}, {"retried", retried}, {"args_8KiB", big}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.raw)))
			for b.Loop() {
				h, err := wire.DecodeHeader(c.raw)
				if err != nil {
					b.Fatal(err)
				}
				if j := newJob(h, c.raw, "default", DefaultMaxRetries); j.Class == "" {
					b.Fatal("no class")
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) { // the real shape: many workers decode at once
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h, err := wire.DecodeHeader(fresh)
				if err != nil {
					b.Fatal(err)
				}
				_ = newJob(h, fresh, "default", DefaultMaxRetries)
			}
		})
	})
}

func repeatJSON(item string, n int) string {
	out := make([]byte, 0, n*(len(item)+1))
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, item...)
	}
	return string(out)
}

// BenchmarkBuildJob is the CPU side of an enqueue: validation, args encoding, jid, document.
func BenchmarkBuildJob(b *testing.B) {
	en := &enqueuer{jq: testStore(nil, keysFor("bench"), ""), now: time.Now, maxRetries: DefaultMaxRetries}
	for _, c := range []struct {
		name string
		args any
	}{
		{"ints", []any{42, 7}},
		{"strings", []any{"user@example.com", "welcome"}},
		{"struct", []any{struct {
			UserID   int    `json:"user_id"`
			Template string `json:"template"`
		}{42, "welcome"}}},
		{"raw", json.RawMessage(`[42,"welcome"]`)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := en.build(context.Background(), "enqueue", "default", "MyApp.Worker", c.args, time.Time{}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEnqueueParallel is Enqueue from many goroutines (an HTTP server's shape): the pool,
// the script call and its PUBLISH under contention. BenchmarkEnqueue covers one caller.
func BenchmarkEnqueueParallel(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	en := &enqueuer{jq: testStore(rdb, keysFor(ns), ""), now: time.Now, maxRetries: DefaultMaxRetries}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(25) // 25 × GOMAXPROCS goroutines
	b.RunParallel(func(pb *testing.PB) {
		args := []any{42, "welcome"}
		for pb.Next() {
			if _, err := en.enqueue(ctx, "default", "W", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEnqueueAll writes batches of 10, 100 and 500 jobs in one call; ns/job compares
// with BenchmarkEnqueue and with a pipelined LPUSH (BenchmarkRawPipelinedLPush).
func BenchmarkEnqueueAll(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	en := &enqueuer{jq: testStore(rdb, keysFor(ns), ""), now: time.Now, maxRetries: DefaultMaxRetries}
	ctx := context.Background()
	for _, size := range []int{10, 100, 500} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			specs := make([]JobSpec, size)
			for i := range specs {
				specs[i] = JobSpec{Queue: "default", Class: "W", Args: []any{i, "welcome"}}
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if _, err := en.enqueueAll(ctx, specs); err != nil {
					b.Fatal(err)
				}
				n += size
				if n >= 200_000 { // keep the list (and Redis memory) bounded
					b.StopTimer()
					rdb.Del(ctx, keysFor(ns).Queue("default"))
					n = 0
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/job")
		})
	}
}

// BenchmarkRawPipelinedLPush is the floor for BenchmarkEnqueueAll: the same documents, one
// LPUSH each, in one pipeline.
func BenchmarkRawPipelinedLPush(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	key := keysFor(ns).Queue("default")
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = benchDoc(fmt.Sprintf(`[%d,"welcome"]`, i))
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		p := rdb.Pipeline()
		for _, d := range docs {
			p.LPush(ctx, key, d)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		if n += len(docs); n >= 200_000 {
			b.StopTimer()
			rdb.Del(ctx, key)
			n = 0
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/job")
}

// BenchmarkFetch moves a batch of 1, 50 or 200 jobs from the queue into the backup list in one
// round trip (the poll loop's call); the queue is refilled outside the timer.
func BenchmarkFetch(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	keys := keysFor(ns)
	jq := testStore(rdb, keys, "bench-node")
	docs := make([]any, 200)
	for i := range docs {
		docs[i] = benchDoc(fmt.Sprintf(`[%d]`, i))
	}
	for _, size := range []int{1, 50, 200} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			reqs := []store.FetchReq{{Queue: "default", N: size}}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if err := rdb.LPush(ctx, keys.Queue("default"), docs[:size]...).Err(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := jq.Fetch(ctx, reqs, time.Minute, time.Second)
				if err != nil || len(res.Jobs[0]) != size {
					b.Fatalf("fetch: %d jobs, %v", len(res.Jobs[0]), err)
				}
				b.StopTimer()
				rdb.Del(ctx, keys.Backup("bench-node", "default"))
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/job")
		})
	}
}

// BenchmarkComplete is the success path after the worker returns: the counters (in memory)
// and the acknowledgement (LREM of the raw job from the backup list), with 50 or 200 jobs in
// flight in the backup list, acknowledged oldest first as they finish in a real run.
func BenchmarkComplete(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	keys := keysFor(ns)
	jq := testStore(rdb, keys, "bench-node")
	backup := keys.Backup("bench-node", "default")
	st := newStats(nil, 0, nil, nil, false, false) // record touches only the in-memory counters
	for _, inFlight := range []int{50, 200} {
		b.Run(fmt.Sprint(inFlight), func(b *testing.B) {
			rdb.Del(ctx, backup)
			// The backup list as RPOPLPUSH leaves it: newest at the head, oldest at the tail.
			queue := make([]string, 0, inFlight)
			for i := range inFlight {
				d := benchDoc(fmt.Sprintf(`[%d]`, i))
				queue = append(queue, d)
				rdb.LPush(ctx, backup, d)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				oldest := queue[0]
				st.Record(true, time.Now())
				if err := jq.Ack(ctx, "default", oldest, "", "", ""); err != nil {
					b.Fatal(err)
				}
				// Keep inFlight jobs in the list: a new one comes in as the oldest leaves.
				b.StopTimer()
				d := benchDoc(fmt.Sprintf(`[%d]`, inFlight+i))
				queue = append(queue[1:], d)
				rdb.LPush(ctx, backup, d)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkStatsRecord is the per-job counter update under contention (every worker calls it).
func BenchmarkStatsRecord(b *testing.B) {
	st := newStats(nil, 0, nil, nil, false, false)
	b.ReportAllocs()
	b.SetParallelism(25)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			st.Record(true, time.Now())
		}
	})
}
