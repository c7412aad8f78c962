package exq

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// pickupLog records, per jid, how long after its push each job started.
type pickupLog struct {
	mu     sync.Mutex
	pushed map[string]time.Time
	waits  map[string][]time.Duration
}

func newPickupLog() *pickupLog {
	return &pickupLog{pushed: map[string]time.Time{}, waits: map[string][]time.Duration{}}
}

func (l *pickupLog) push(jid string) {
	l.mu.Lock()
	l.pushed[jid] = time.Now()
	l.mu.Unlock()
}

func (l *pickupLog) worker() Worker {
	return WorkerFunc(func(ctx context.Context, job *Job) error {
		now := time.Now()
		l.mu.Lock()
		l.waits[job.JID] = append(l.waits[job.JID], now.Sub(l.pushed[job.JID]))
		l.mu.Unlock()
		return nil
	})
}

func (l *pickupLog) started() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waits)
}

// sorted returns the first-run waits, sorted, and the jids that ran more than once.
func (l *pickupLog) sorted() (waits []time.Duration, twice []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for jid, ws := range l.waits {
		waits = append(waits, ws[0])
		if len(ws) > 1 {
			twice = append(twice, jid)
		}
	}
	slices.Sort(waits)
	return waits, twice
}

// quantile of sorted waits (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Jobs pushed as Sidekiq's client writes them (LPUSH + SADD queues, no wake-up), one at a time
// at random gaps onto three queues of an idle node with the default PollTimeout (whose poll
// back-off alone lets such a job wait up to 5 s), start within milliseconds: the blocking idle
// wait sees the push. Each runs once.
func testForeignPushesStartWithinMillisecondsOnAnIdleNode(t *testing.T) {
	// Timed (timed_test.go): asserts p99 pickup of 100 ms.
	v := newEnv(t)
	l := newPickupLog()
	queues := []string{"a", "b", "c"}
	v.start(Options{PollTimeout: DefaultPollTimeout,
		Queues:  []Queue{{Name: "a", Concurrency: 2}, {Name: "b", Concurrency: 2}, {Name: "c", Concurrency: 2}},
		Workers: map[string]Worker{"W": l.worker()}})
	time.Sleep(time.Second) // idle: the poll has backed off
	// 100 jobs, so that the p99 is not the maximum: one pause of the host (a GC, the race
	// detector, a Redis Cluster's node on a loaded 2-core machine) is one sample, not the p99.
	const jobs = 100
	for i := range jobs {
		time.Sleep(time.Duration(30+rand.IntN(90)) * time.Millisecond)
		q := queues[rand.IntN(len(queues))]
		jid := fmt.Sprintf("foreign-%d", i)
		l.push(jid)
		v.push(q, fmt.Sprintf(`{"class":"W","args":[],"queue":%q,"jid":%q,"retry":true,"enqueued_at":%s}`, q, jid, wire.FormatTime(time.Now())))
	}
	testutil.WaitFor(t, "every pushed job started", func() bool { return l.started() == jobs })
	waits, twice := l.sorted()
	p50, p99 := quantile(waits, 0.5), quantile(waits, 0.99)
	t.Logf("plain LPUSH+SADD → exq, %d jobs: p50 %s, p99 %s, max %s", jobs, p50, p99, waits[len(waits)-1])
	assert.Empty(t, twice, "jobs that ran twice")
	assert.LessOrEqual(t, p50, 20*time.Millisecond, "median pickup of a foreign push")
	assert.LessOrEqual(t, p99, 100*time.Millisecond, "p99 pickup of a foreign push")
}

// The blocking wait leaves a queue as it was: a paused queue keeps its jobs in their order, the
// node does not spin on it (a paused queue is not empty, so its BLMOVE answers at once), and
// the jobs run once it is resumed.
func TestBlockingIdleWaitLeavesAPausedQueueAloneAndInOrder(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	l := newPickupLog()
	e := v.start(Options{PollTimeout: DefaultPollTimeout, Queues: []Queue{{Name: "q", Concurrency: 5}},
		Workers: map[string]Worker{"W": l.worker()}})
	api, err := NewAPI(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, api.PauseQueue(ctx, "q"))
	time.Sleep(300 * time.Millisecond) // the node polled the queue empty: armed
	for i := range 3 {
		jid := fmt.Sprintf("p%d", i)
		l.push(jid)
		v.push("q", fmt.Sprintf(`{"class":"W","args":[],"queue":"q","jid":%q}`, jid))
	}
	before := v.list(v.keys.Queue("q"))
	polls := e.mgr.polls.Load()
	time.Sleep(2 * time.Second)
	assert.Equal(t, 0, l.started(), "a paused queue gives no job")
	assert.Equal(t, before, v.list(v.keys.Queue("q")), "the queue holds the same jobs in the same order")
	assert.LessOrEqual(t, e.mgr.polls.Load()-polls, uint64(8), "fetches in 2 s while a paused queue holds jobs: no spinning")
	require.NoError(t, api.ResumeQueue(ctx, "q"))
	testutil.WaitFor(t, "the jobs run after resume", func() bool { return l.started() == 3 })
}

// Stop is not held by a BLMOVE blocked on an idle queue (it blocks for 5 s with the default
// PollTimeout), and jobs pushed while the node stops are either run once or still in the
// queue: the blocking wait never takes a job out of it.
func TestStopIsNotHeldByABlockedIdleWaitAndLosesNoPush(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	l := newPickupLog()
	e := v.start(Options{PollTimeout: DefaultPollTimeout, Queues: []Queue{{Name: "q", Concurrency: 3}, {Name: "r", Concurrency: 3}},
		Workers: map[string]Worker{"W": l.worker()}})
	testutil.WaitFor(t, "both queues armed", func() bool {
		return slices.Equal(e.mgr.idle.ArmedQueues(), []string{"q", "r"})
	})
	time.Sleep(200 * time.Millisecond) // the BLMOVEs are blocked

	pushed := make(chan []string)
	go func() {
		var jids []string
		for i := range 200 {
			jid := fmt.Sprintf("s%d", i)
			q := []string{"q", "r"}[i%2]
			l.push(jid)
			v.push(q, fmt.Sprintf(`{"class":"W","args":[],"queue":%q,"jid":%q}`, q, jid))
			jids = append(jids, jid)
			time.Sleep(time.Millisecond)
		}
		pushed <- jids
	}()
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(ctx))
	assert.Less(t, time.Since(t0), 3*time.Second, "Stop with blocked idle waits")
	jids := <-pushed

	_, twice := l.sorted()
	assert.Empty(t, twice, "jobs that ran twice")
	left := map[string]bool{}
	for _, q := range []string{"q", "r"} {
		for _, raw := range v.list(v.keys.Queue(q)) {
			j, err := wire.DecodeHeader(raw)
			require.NoError(t, err)
			assert.False(t, left[j.JID], "jid %s twice in the queues", j.JID)
			left[j.JID] = true
		}
		assert.Empty(t, v.list(v.keys.Backup(e.opts.NodeID, q)), "backup list of %s after Stop", q)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, jid := range jids {
		_, ran := l.waits[jid]
		assert.True(t, ran != left[jid], "jid %s: ran %v, still queued %v (exactly one)", jid, ran, left[jid])
	}
}
