package exq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
)

// A keyed fetch whose reply is lost strands no job and breaks no sequence. The jobs it took sit
// in the backup list with their keys' leases, held by no worker. The node's next fetch (or, for
// exq's own client, the failed fetch's error) makes it hand them back to the heads of their
// keys' lists, and they run once their keys are free, each key's jobs one at a time, in enqueue
// order, each once:
//   - exq's own client reports the error: the node knows the lease numbers the failed fetch
//     was given, and releases them on the handed-back jobs' keys at once, so the keys are free
//     well before the leases would lapse (two windows of 5 s here);
//   - a caller's client sends the fetch again: the second run finds those keys at their limit,
//     the node sees no error and cannot tell which leases the first run took, so they lapse
//     (two windows of 0.4 s here) and go at the fetch after the node's next beat.
func TestAKeyedFetchWhoseReplyIsLostStrandsNothingAndKeepsEachKeysOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range lostFetchClients {
		t.Run(tc.name, func(t *testing.T) {
			c := newCutter(t)
			ctx := context.Background()
			cl, err := NewClient(ctx, ClientOptions{Redis: c.client, Namespace: c.ns, Logger: testLogger()})
			require.NoError(t, err)
			defer cl.Close()
			const jobs = 15
			order := enqueueByKey(t, cl, "k", []string{"a", "b", "c"}, jobs)
			cut := c.cutScript(scripts.FetchKeyed, 1)
			log := newKeyLog()
			o := tc.opts(c)
			o.Queues = []Queue{{Name: "k", Concurrency: 5, Keys: KeyPolicy{Sequence: true}}}
			o.Workers = map[string]Worker{"W": log.worker(5*time.Millisecond, nil)}
			o.DisableScheduler = true
			reported := tc.name == lostFetchClients[1].name
			if reported {
				// A window of 5 s: the leases would lapse 10 s after the lost fetch.
				o.HeartbeatInterval, o.MissedHeartbeatsAllowed = time.Second, 4
			} else {
				// A window of 0.4 s: the stray jobs' leases lapse 0.8 s after the lost fetch.
				o.HeartbeatInterval, o.MissedHeartbeatsAllowed = 200*time.Millisecond, 1
			}
			o.ForeignHeartbeatWindow = time.Second
			e := c.start(o)
			waitCut(t, cut)
			cutAt := time.Now()
			testutil.WaitFor(t, "every job succeeded", func() bool { return log.succeeded() == jobs })
			took := time.Since(cutAt)
			testutil.WaitFor(t, "the backup list is empty", func() bool {
				return len(c.list(c.keys.Backup(e.NodeID(), "k"))) == 0
			})
			log.assertRanInOrder(t, order)
			assert.Empty(t, c.list(c.keys.Queue("k")), "no keyed job went to the queue's list")
			t.Logf("every job succeeded %s after the lost reply", took.Round(time.Millisecond))
			if reported {
				assert.Less(t, took, 5*time.Second, "the keys were freed at the hand-back, not when their leases lapsed (10 s)")
			}
		})
	}
}

// A queue deleted while its keyed jobs run (API.RemoveQueue, as Sidekiq Web's Delete: the
// queue's list and its name in queues) loses none of them and breaks no sequence: keyed jobs
// wait in their keys' lists, which the deletion does not touch, and the running ones release
// their keys as usual. Every job runs once, each key's one at a time and in enqueue order.
func TestKeyedJobsOfAQueueDeletedWhileTheyRunAllRunOnceInOrder(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	api, err := NewAPI(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer api.Close()
	cl, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer cl.Close()
	const jobs = 30
	order := enqueueByKey(t, cl, "k", []string{"a", "b", "c"}, jobs)
	log := newKeyLog()
	v.start(Options{Queues: []Queue{{Name: "k", Concurrency: 6, Keys: KeyPolicy{Sequence: true}}},
		Workers: map[string]Worker{"W": log.worker(20*time.Millisecond, nil)}})
	testutil.WaitFor(t, "some jobs ran", func() bool { return log.succeeded() >= 3 })
	require.NoError(t, api.RemoveQueue(ctx, "k"))
	assert.Less(t, log.succeeded(), jobs, "the queue was deleted while its jobs ran")
	testutil.WaitFor(t, "every job succeeded", func() bool { return log.succeeded() == jobs })
	log.assertRanInOrder(t, order)
}

// enqueueByKey enqueues n jobs of class W on q, keyed by keys in turn, each with its key as its
// arg (keyLog's worker reads it), and returns each key's jids in enqueue order.
func enqueueByKey(t *testing.T, cl *Client, q string, keys []string, n int) map[string][]string {
	t.Helper()
	order := map[string][]string{}
	for i := range n {
		k := keys[i%len(keys)]
		jid, err := cl.Enqueue(context.Background(), q, "W", []any{k}, Key(k))
		require.NoError(t, err)
		order[k] = append(order[k], jid)
	}
	return order
}

// assertRanInOrder asserts that each key of order ran one job at a time, each of its jobs once,
// in the order given.
func (l *keyLog) assertRanInOrder(t *testing.T, order map[string][]string) {
	t.Helper()
	l.checkOrder(t, order, false)
}

// assertRanInOrderWithRetries asserts that each key of order ran one job at a time and its
// jobs in enqueue order, a failed job running again before its key's next one (its jid
// repeats in place).
func (l *keyLog) assertRanInOrderWithRetries(t *testing.T, order map[string][]string) {
	t.Helper()
	l.checkOrder(t, order, true)
}

// checkOrder is assertRanInOrder, or with retries assertRanInOrderWithRetries.
func (l *keyLog) checkOrder(t *testing.T, order map[string][]string, retries bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.wrongKey, "each job's Job.Key is its key")
	for k, jids := range order {
		assert.Equal(t, 1, l.most[k], "key %s ran one job at a time", k)
		starts := l.starts[k]
		if retries {
			starts = nil
			for _, jid := range l.starts[k] {
				if len(starts) == 0 || starts[len(starts)-1] != jid {
					starts = append(starts, jid)
				}
			}
		}
		assert.Equal(t, jids, starts, "key %s ran each of its jobs in enqueue order (retries folded: %v)", k, retries)
	}
}
