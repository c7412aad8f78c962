package exq_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/exqgo/exq"
)

// TenantSync is the args of a tenant's sync step; its jobs take the tenant as their key.
type TenantSync struct {
	Tenant string `json:"tenant"`
	Step   int    `json:"step"`
}

func (TenantSync) Class() string    { return "Sync" }
func (TenantSync) Queue() string    { return "sync" }
func (s TenantSync) JobKey() string { return s.Tenant }

// Keyed jobs in a sequence: each tenant's steps run one at a time in the order they were
// enqueued, whichever node takes them; other tenants run in parallel, served in turn. The
// first step of "acme" fails once: its later steps wait until its retry succeeded.
func ExampleKeyPolicy() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	var mu sync.Mutex
	ran := map[string][]int{}
	failed := false
	done := make(chan struct{}, 6)
	sync := exq.WorkerFor(func(ctx context.Context, job *exq.Job, s TenantSync) error {
		mu.Lock()
		defer mu.Unlock()
		if s.Tenant == "acme" && s.Step == 1 && !failed {
			failed = true
			return fmt.Errorf("the tenant's API is down")
		}
		ran[job.Key()] = append(ran[job.Key()], s.Step) // the job's key: its tenant
		done <- struct{}{}
		return nil
	})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Backoff: func(int, *exq.Job) time.Duration { return 50 * time.Millisecond },
		Queues: []exq.Queue{
			// Each tenant's syncs run one at a time, in order; tenants in parallel, in turn.
			{Name: "sync", Concurrency: 10, Keys: exq.KeyPolicy{Sequence: true}},
		},
		Register: []exq.Registration{sync}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	for step := 1; step <= 3; step++ {
		for _, tenant := range []string{"acme", "globex"} {
			if _, err := exq.EnqueueArgs(ctx, e, TenantSync{Tenant: tenant, Step: step}); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	for range 6 {
		<-done
	}
	fmt.Println("acme:", ran["acme"])
	fmt.Println("globex:", ran["globex"])
	// Output:
	// acme: [1 2 3]
	// globex: [1 2 3]
}
