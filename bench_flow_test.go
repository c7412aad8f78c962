package exq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/testutil"
)

// redisCPUSeconds is redis-server's CPU time so far (user + system), as bench/ measures it.
func redisCPUSeconds(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			total += f
		}
	}
	return total
}

// BenchmarkFlowJob measures the whole life of a job (enqueue, fetch, run, outcome,
// acknowledgement) as a plain job, as a job of a batch (500 jobs a batch, with success and
// complete callbacks) and as a job of a workflow (500 jobs a workflow: one root, 498 jobs that
// depend on it, one that depends on those), reporting the Redis server's CPU per job
// (redis-µs/job, from INFO cpu as bench/ reads it) beside the client's time per job (ns/op).
// Compare the three in one run:
//
//	go test -run '^$' -bench BenchmarkFlowJob -benchtime 20000x .
func BenchmarkFlowJob(b *testing.B) {
	for _, kind := range []string{"plain", "batch", "workflow"} {
		b.Run(kind, func(b *testing.B) {
			rdb, ns := testutil.Redis(b)
			ctx := context.Background()
			var done atomic.Int64
			all := make(chan struct{})
			noop := WorkerFunc(func(context.Context, *Job) error {
				if done.Add(1) == int64(b.N) {
					close(all)
				}
				return nil
			})
			e, err := Start(ctx, Options{Redis: rdb, Namespace: ns, Logger: testLogger(), DisableScheduler: true,
				Queues:  []Queue{{Name: "default", Concurrency: 50}, {Name: "cb", Concurrency: 1}},
				Workers: map[string]Worker{"Noop": noop, "Callback": WorkerFunc(func(context.Context, *Job) error { return nil })}})
			if err != nil {
				b.Fatal(err)
			}
			const group = 500
			cpu0 := redisCPUSeconds(b, rdb)
			b.ResetTimer()
			for n := 0; n < b.N; n += group {
				size := min(group, b.N-n)
				switch kind {
				case "plain":
					specs := make([]JobSpec, size)
					for i := range specs {
						specs[i] = JobSpec{Queue: "default", Class: "Noop", Args: []any{n + i}}
					}
					_, err = e.EnqueueAll(ctx, specs)
				case "batch":
					specs := make([]JobSpec, size)
					for i := range specs {
						specs[i] = JobSpec{Queue: "default", Class: "Noop", Args: []any{n + i}}
					}
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
			b.StopTimer()
			// Let the acknowledgements and callbacks reach Redis before reading its CPU.
			if err := e.Stop(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric((redisCPUSeconds(b, rdb)-cpu0)*1e6/float64(b.N), "redis-µs/job")
		})
	}
}
