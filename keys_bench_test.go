//go:build unix

package exq

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// BenchmarkKeyedCostByKeys measures a keyed job's Redis CPU (redis-µs/job, INFO cpu) through
// the store alone, with 10, 1 000 or 100 000 keys that have jobs waiting: per round, a fetch of
// 50 jobs (10 with 10 keys; KeyPolicy Concurrency 1), their acknowledgements with their keys'
// releases, and as many new jobs enqueued to the keys just served. The cost per job must not
// grow with the number of keys beyond a sorted set's log:
//
//	go test -run '^$' -bench BenchmarkKeyedCostByKeys -benchtime 400x .
func BenchmarkKeyedCostByKeys(b *testing.B) {
	for _, keys := range []int{10, 1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) { benchKeyedByKeys(b, keys) })
	}
}

func benchKeyedByKeys(b *testing.B, keys int) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	jq := testStore(rdb, keysFor(ns), "n")
	round := min(50, keys) // Concurrency 1: one job per key at a time
	seq := 0
	item := func(k int) store.KeyedItem {
		seq++
		key := fmt.Sprint("t", k)
		return store.KeyedItem{Key: key, BatchItem: store.BatchItem{Queue: "q",
			Job: fmt.Sprintf(`{"class":"W","args":[],"queue":"q","jid":"j%d","exq_key":%q}`, seq, key)}}
	}
	for k := 0; k < keys; k += 1000 {
		var items []store.KeyedItem
		for j := k; j < min(k+1000, keys); j++ {
			items = append(items, item(j), item(j))
		}
		if err := jq.EnqueueKeyedAll(ctx, items); err != nil {
			b.Fatal(err)
		}
	}
	policy := &store.KeyPolicy{Concurrency: 1}
	var first uint64 = 1
	redis0 := redisCPUSeconds(b, rdb)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := jq.Fetch(ctx, []store.FetchReq{{Queue: "q", N: round, Keys: policy, First: first}}, time.Minute, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		var acks []store.AckReq
		for j, raw := range res.Jobs[0] {
			acks = append(acks, store.AckReq{Queue: "q", Raw: raw},
				store.AckReq{Queue: store.KeyScope("q", res.JobKeys[0][j]), Lease: jq.LeaseMember(first + uint64(j))})
		}
		first += uint64(round)
		if _, err := jq.AckMany(ctx, acks); err != nil {
			b.Fatal(err)
		}
		// As many new jobs, to the keys just served: every key keeps its backlog.
		items := make([]store.KeyedItem, len(res.JobKeys[0]))
		for j, key := range res.JobKeys[0] {
			var k int
			fmt.Sscanf(key, "t%d", &k)
			items[j] = item(k)
		}
		if err := jq.EnqueueKeyedAll(ctx, items); err != nil {
			b.Fatal(err)
		}
		if len(res.Jobs[0]) < round {
			b.Fatalf("round %d: %d jobs fetched", i, len(res.Jobs[0]))
		}
	}
	b.StopTimer()
	b.ReportMetric((redisCPUSeconds(b, rdb)-redis0)*1e6/float64(b.N*round), "redis-µs/job")
}

// BenchmarkKeyedFairness measures how long a job of a small key waits behind another key's
// backlog, at the size issue 41 names: key A has 100 000 jobs of 10 ms waiting, key B enqueues
// 10 jobs a second until A's are done, one node runs 50 at a time. It reports B's start latency
// (enqueue to start, p50 and p99) and A's throughput, with keys served in turn
// (KeyPolicy{Fair: true}, "fair") and with the same jobs in the queue's own list (no keys,
// "plain"): the fair row's B latency is the bound, the plain row's shows the starvation fair
// share fixes, and A's throughput of the two rows is the cost of serving keys in turn.
//
//	go test -run '^$' -bench BenchmarkKeyedFairness -benchtime 1x .
func BenchmarkKeyedFairness(b *testing.B) {
	for _, mode := range []string{"fair", "plain"} {
		b.Run(mode, func(b *testing.B) {
			r := runFairness(b, mode, fairnessSize{backlog: 100_000, job: 10 * time.Millisecond, conc: 50, every: 100 * time.Millisecond})
			b.ReportMetric(float64(r.p50.Microseconds())/1000, "B-p50-ms")
			b.ReportMetric(float64(r.p99.Microseconds())/1000, "B-p99-ms")
			b.ReportMetric(float64(r.bJobs), "B-jobs")
			b.ReportMetric(r.aRate, "A-jobs/s")
		})
	}
}

// fairnessSize is the shape of a fairness run: A's backlog of jobs lasting job each, the
// node's concurrency, and how often B enqueues one.
type fairnessSize struct {
	backlog int
	job     time.Duration
	conc    int
	every   time.Duration
}

// fairnessResult is what a fairness run measured: B's start latencies and A's throughput.
type fairnessResult struct {
	p50, p99 time.Duration
	bJobs    int
	aRate    float64 // A's jobs per second, from the first enqueue of B to A's last job
}

// runFairness runs the fairness scenario (BenchmarkKeyedFairness) once, in mode "fair" (keyed
// jobs, KeyPolicy{Fair: true}) or "plain" (the same jobs without keys).
func runFairness(tb testing.TB, mode string, size fairnessSize) fairnessResult {
	rdb, ns := testutil.Redis(tb)
	ctx := context.Background()
	var mu sync.Mutex
	enqueued := map[string]time.Time{}
	var waits []time.Duration
	var aDone atomic.Int64
	w := WorkerFunc(func(_ context.Context, job *Job) error {
		var key string
		_ = job.Bind(&key)
		if key == "B" {
			mu.Lock()
			waits = append(waits, time.Since(enqueued[job.JID]))
			mu.Unlock()
			return nil
		}
		time.Sleep(size.job)
		aDone.Add(1)
		return nil
	})
	keys := KeyPolicy{}
	if mode == "fair" {
		keys = KeyPolicy{Fair: true}
	}
	e, err := Start(ctx, Options{Redis: rdb, Namespace: ns, Logger: testLogger(),
		Queues: []Queue{{Name: "q", Concurrency: size.conc, Keys: keys}}, Workers: map[string]Worker{"W": w}})
	if err != nil {
		tb.Fatal(err)
	}
	opts := func(k string) []EnqueueOption {
		if mode == "fair" {
			return []EnqueueOption{Key(k)}
		}
		return nil
	}
	for n := 0; n < size.backlog; n += 500 {
		specs := make([]JobSpec, min(500, size.backlog-n))
		for i := range specs {
			specs[i] = JobSpec{Queue: "q", Class: "W", Args: []any{"A"}, Options: opts("A")}
		}
		if _, err := e.EnqueueAll(ctx, specs); err != nil {
			tb.Fatal(err)
		}
	}
	if b, ok := tb.(*testing.B); ok {
		b.ResetTimer()
	}
	began, aBegan := time.Now(), aDone.Load()
	for aDone.Load() < int64(size.backlog) {
		mu.Lock()
		jid, err := e.Enqueue(ctx, "q", "W", []any{"B"}, opts("B")...)
		enqueued[jid] = time.Now()
		mu.Unlock()
		if err != nil {
			tb.Fatal(err)
		}
		time.Sleep(size.every)
	}
	aRate := float64(int64(size.backlog)-aBegan) / time.Since(began).Seconds()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		all := len(waits) == len(enqueued)
		mu.Unlock()
		if all || time.Now().After(deadline) {
			break
		}
	}
	if b, ok := tb.(*testing.B); ok {
		b.StopTimer()
	}
	if err := e.Stop(ctx); err != nil {
		tb.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) == 0 {
		tb.Fatal("no job of B started")
	}
	slices.Sort(waits)
	return fairnessResult{p50: waits[len(waits)/2], p99: waits[len(waits)*99/100], bJobs: len(waits), aRate: aRate}
}
