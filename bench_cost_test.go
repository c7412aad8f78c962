//go:build unix

package exq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/exqgo/exq/internal/testutil"
)

// clientCPUSeconds is this process's CPU time so far (user + system): the client's side of a
// benchmark whose Redis server is another process.
func clientCPUSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// costKinds are the rows of BenchmarkFeatureCost, in the order of the table in
// docs/benchmarks.md ("What each feature costs"); "plain" first, the others compared to it.
var costKinds = []string{"plain", "bind", "unique", "scheduled", "retried", "batch", "workflow", "keyed", "keyed-fair",
	"keyed-10k", "expiring", "iteration", "step"}

// BenchmarkFeatureCost measures what each feature adds to the whole life of a no-op job
// (enqueue in groups of 500, fetch, run, outcome, acknowledgement) on one node (concurrency
// 50, the scheduler on), reporting the client's CPU per job (client-µs/job, this process's
// user + system time) and the Redis server's (redis-µs/job, INFO cpu) beside the wall time
// (ns/op). Each row is a plain job plus one feature: the worker calls Bind (bind), the job
// has a unique lock until success (unique), it is enqueued with In (scheduled, due 1 ms
// later, moved by the scheduler), its first run fails and it is retried at once (retried: the
// two runs count as one job), it is one of a 500-job batch with two callbacks (batch), or one
// of a 500-job workflow: a root, 498 jobs depending on it and one depending on those
// (workflow), or it has one of 100 keys on a queue whose KeyPolicy allows 2 running per key
// (keyed) or only serves the keys in turn (keyed-fair), or has one of 10 000 keys (keyed-10k,
// Concurrency 2 per key; its ns/op against plain's is issue 41's throughput ratio), it expires in an hour (expiring: ExpiresIn),
// its worker is an Iteration of one item (iteration: its state saved once, when it completes),
// or its worker runs one durable step (step: exq.Step's read and save). The relay from the Postgres outbox is measured in exqpg
// (BenchmarkFeatureCostOutbox). The table and its ratios to plain come from one run:
//
//	go test -run '^$' -bench BenchmarkFeatureCost -benchtime 20000x -count 3 . | go run ./bench/costtable
func BenchmarkFeatureCost(b *testing.B) {
	for _, kind := range costKinds {
		b.Run(kind, func(b *testing.B) { benchFeature(b, kind) })
	}
}

// costKeys is how many keys the jobs of the "keyed" rows spread over (KeyPolicy Concurrency 2:
// with 50 slots, 100 keys leave none idle).
const costKeys = 100

// keyedPolicy is the KeyPolicy of the "keyed" rows' queue.
func keyedPolicy(kind string) KeyPolicy {
	switch kind {
	case "keyed", "keyed-10k":
		return KeyPolicy{Concurrency: 2}
	case "keyed-fair":
		return KeyPolicy{Fair: true}
	}
	return KeyPolicy{}
}

// errFirstRun fails the first run of a job of the "retried" row.
var errFirstRun = errors.New("first run fails")

func benchFeature(b *testing.B, kind string) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	var done atomic.Int64
	all := make(chan struct{})
	finish := func() {
		if done.Add(1) == int64(b.N) {
			close(all)
		}
	}
	var worker Worker = WorkerFunc(func(_ context.Context, job *Job) error {
		switch kind {
		case "bind":
			var n int
			if err := job.Bind(&n); err != nil {
				return err
			}
		case "retried":
			if job.RetryCount == 0 {
				return errFirstRun
			}
		}
		finish()
		return nil
	})
	switch kind {
	case "iteration":
		worker = Iteration[int, int]{SaveEvery: time.Hour, Each: func(context.Context, *Job, int, int) (int, bool, error) {
			finish()
			return 1, true, nil
		}}
	case "step":
		worker = WorkerFunc(func(ctx context.Context, job *Job) error {
			if _, err := Step(ctx, "one", func(context.Context) (int, error) { return 1, nil }); err != nil {
				return err
			}
			finish()
			return nil
		})
	}
	e, err := Start(ctx, Options{Redis: rdb, Namespace: ns, Logger: testLogger(),
		Backoff: func(int, *Job) time.Duration { return 0 },
		Queues:  []Queue{{Name: "default", Concurrency: 50, Keys: keyedPolicy(kind)}, {Name: "cb", Concurrency: 1}},
		Workers: map[string]Worker{"Noop": worker, "Callback": WorkerFunc(func(context.Context, *Job) error { return nil })}})
	if err != nil {
		b.Fatal(err)
	}
	const group = 500
	unique := []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour})}
	redis0, client0 := redisCPUSeconds(b, rdb), clientCPUSeconds(b)
	b.ResetTimer()
	for n := 0; n < b.N; n += group {
		size := min(group, b.N-n)
		specs := make([]JobSpec, size)
		for i := range specs {
			specs[i] = JobSpec{Queue: "default", Class: "Noop", Args: []any{n + i}}
			switch kind {
			case "unique":
				specs[i].Options = unique
			case "scheduled":
				specs[i].In = time.Millisecond
			case "keyed", "keyed-fair":
				specs[i].Options = []EnqueueOption{Key(strconv.Itoa((n + i) % costKeys))}
			case "keyed-10k":
				specs[i].Options = []EnqueueOption{Key(strconv.Itoa((n + i) % 10000))}
			case "expiring":
				specs[i].Options = []EnqueueOption{ExpiresIn(time.Hour)}
			}
		}
		switch kind {
		case "batch":
			_, _, err = e.NewBatch(ctx, BatchOptions{
				OnSuccess:  &JobSpec{Queue: "cb", Class: "Callback"},
				OnComplete: &JobSpec{Queue: "cb", Class: "Callback"}}, specs)
		case "workflow":
			jobs := make([]WorkflowJob, size)
			var mids []string
			for i := range jobs {
				name := fmt.Sprintf("j%d", i)
				jobs[i] = WorkflowJob{Name: name, Queue: "default", Class: "Noop", Args: []any{n + i}}
				switch {
				case i == 0:
				case i == size-1 && size > 2:
					jobs[i].DependsOn = mids
				default:
					jobs[i].DependsOn = []string{"j0"}
					mids = append(mids, name)
				}
			}
			_, err = e.EnqueueWorkflow(ctx, WorkflowOptions{}, jobs)
		default:
			var res []EnqueueResult
			res, err = e.EnqueueAll(ctx, specs)
			for _, r := range res {
				if err == nil && r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d jobs done", done.Load(), b.N)
	}
	// Let the acknowledgements and callbacks reach Redis before reading its CPU.
	if err := e.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric((clientCPUSeconds(b)-client0)*1e6/float64(b.N), "client-µs/job")
	b.ReportMetric((redisCPUSeconds(b, rdb)-redis0)*1e6/float64(b.N), "redis-µs/job")
}
