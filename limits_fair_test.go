package exq

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/exqgo/exq/internal/testutil"
)

// nodeLedger counts, per node, the jobs that ended and the most that ran at once, from a
// moment on (measuring).
type nodeLedger struct {
	mu        sync.Mutex
	measuring bool
	ended     []int
	running   []int
	most      []int
}

func newNodeLedger(nodes int) *nodeLedger {
	return &nodeLedger{ended: make([]int, nodes), running: make([]int, nodes), most: make([]int, nodes)}
}

func (l *nodeLedger) worker(node int, d time.Duration) Worker {
	return WorkerFunc(func(ctx context.Context, job *Job) error {
		l.mu.Lock()
		l.running[node]++
		if l.measuring {
			l.most[node] = max(l.most[node], l.running[node])
		}
		l.mu.Unlock()
		time.Sleep(d)
		l.mu.Lock()
		l.running[node]--
		if l.measuring {
			l.ended[node]++
		}
		l.mu.Unlock()
		return nil
	})
}

// measure counts what ends during d from now on and returns it, per node.
func (l *nodeLedger) measure(d time.Duration) (ended, most []int) {
	l.mu.Lock()
	l.measuring = true
	for i := range l.ended {
		l.ended[i], l.most[i] = 0, l.running[i]
	}
	l.mu.Unlock()
	time.Sleep(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.measuring = false
	return append([]int(nil), l.ended...), append([]int(nil), l.most...)
}

func sum(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}

// One node behind a slow, uneven link (50–300 ms a round trip) among three direct ones, on a
// queue with a GlobalLimit: free slots are seen by every node within a poll (a lease is
// released when its job ends, not by the node's next fetch), and no node holds more than its
// share while others wait, so the fleet keeps most of the throughput the direct nodes had
// alone and the slow node cannot take the queue over.
func testGlobalLimitSlotsAreSharedFairlyWithASlowNode(t *testing.T) {
	// Timed (timed_test.go): asserts fairness and throughput between nodes.
	v := newEnv(t)
	const (
		limit   = 4
		jobTime = 30 * time.Millisecond
	)
	phase := 2 * time.Second
	if testutil.Long() {
		phase = 10 * time.Second
	}
	v.enqueueTimed("limited", int(3*phase.Seconds()*limit/jobTime.Seconds()))
	ledger := newNodeLedger(4)
	q := Queue{Name: "limited", Concurrency: 10, GlobalLimit: limit}
	// The slow node comes first and has every slot when the direct nodes start.
	proxy := testutil.NewProxy(v.t, v.rdb.Options().Addr)
	proxy.SetJitter(50*time.Millisecond, 300*time.Millisecond)
	slow := v.start(Options{Redis: v.clientVia(proxy.Addr()), Queues: []Queue{q}, Workers: map[string]Worker{"Timed": ledger.worker(3, jobTime)}})
	testutil.WaitFor(t, "the slow node runs jobs", func() bool { return v.zcard(v.keys.Leases("limited")) == limit })
	for i := 0; i < 3; i++ {
		v.start(Options{Queues: []Queue{q}, Workers: map[string]Worker{"Timed": ledger.worker(i, jobTime)}})
	}
	time.Sleep(time.Second)
	mixed, most := ledger.measure(phase)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	assert.NoError(t, slow.Stop(ctx))
	time.Sleep(300 * time.Millisecond)
	direct, _ := ledger.measure(phase)
	assert.ErrorIs(t, v.rdb.ZScore(context.Background(), v.keys.LeaseWaiters("limited"), slow.NodeID()).Err(), redis.Nil,
		"the stopped node no longer waits for a slot")

	alone, together := float64(sum(direct))/phase.Seconds(), float64(sum(mixed))/phase.Seconds()
	share := int(math.Ceil(float64(limit) / 4))
	t.Logf("GlobalLimit %d, %s jobs: 3 direct nodes alone %.0f jobs/s, jobs per node %v; with a 4th node 50–300 ms away %.0f jobs/s (%.0f %%); "+
		"jobs per node with it %v (the slow one last), most running at once per node %v (share %d)",
		limit, jobTime, alone, direct[:3], together, 100*together/alone, mixed, most, share)
	assert.Greater(t, together, 0.6*alone, "the slow node costs the fleet little throughput")
	for i := 0; i < 3; i++ {
		assert.Greater(t, direct[i], sum(direct)/6, "direct node %d, alone with the others, runs its part of the jobs", i)
		assert.Greater(t, mixed[i], sum(mixed)/6, "direct node %d runs its part of the jobs", i)
		assert.LessOrEqual(t, most[i], share+1, "direct node %d holds about its share", i)
	}
	assert.LessOrEqual(t, most[3], share, "the slow node holds at most its share while the others wait")
}
