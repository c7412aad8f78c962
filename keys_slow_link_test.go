package exq

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// Sequences hold with a node behind a slow link (its replies delayed 50–300 ms) beside two
// direct ones: the slow node's fetches, acknowledgements and lease releases arrive late, and
// the leases keep each key to one job at a time until they do. Every job runs once, each key's
// in enqueue order.
func TestKeyedSequencesHoldWithANodeBehindASlowLink(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	cl, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer cl.Close()
	const jobs = 120
	order := enqueueByKey(t, cl, "k", []string{"a", "b", "c", "d", "e", "f"}, jobs)
	log := newKeyLog()
	q := Queue{Name: "k", Concurrency: 4, Keys: KeyPolicy{Sequence: true}}
	w := map[string]Worker{"W": log.worker(10*time.Millisecond, func(job *Job) bool { return job.RetryCount == 0 && job.JID[0] < '4' })}
	backoff := func(int, *Job) time.Duration { return 50 * time.Millisecond }
	proxy := testutil.NewProxy(t, v.rdb.Options().Addr)
	proxy.SetJitter(50*time.Millisecond, 300*time.Millisecond)
	var slowRuns atomic.Int64
	slow := map[string]Worker{"W": WorkerFunc(func(ctx context.Context, job *Job) error {
		slowRuns.Add(1)
		return w["W"].Perform(ctx, job)
	})}
	// The slow node comes first: it holds keys when the direct nodes start.
	v.start(Options{Redis: v.clientVia(proxy.Addr()), Queues: []Queue{q}, Workers: slow, Backoff: backoff})
	testutil.WaitFor(t, "the slow node runs jobs", func() bool { return slowRuns.Load() >= 4 })
	for range 2 {
		v.start(Options{Queues: []Queue{q}, Workers: w, Backoff: backoff})
	}
	waitLong(t, time.Minute, "every job succeeded", func() bool { return log.succeeded() == jobs })
	require.GreaterOrEqual(t, slowRuns.Load(), int64(4), "the node behind the slow link ran jobs")
	t.Logf("%d jobs over 6 keys, %d runs on the node behind the slow link", jobs, slowRuns.Load())
	log.assertRanInOrderWithRetries(t, order)
}
