package exq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// A stall of Redis longer than the keyed leases' life (two heartbeat windows) puts no key over
// its limit and breaks no sequence: the leases of the jobs running through the stall lapse by
// the server's clock while no node can renew them, but until the nodes have had a whole window
// of their own since the stall ended (as for taking a node for dead), a fetch does not take
// them for lapsed, so no waiting job of those keys starts beside them. Every job runs once, each
// key's one at a time and in enqueue order.
func TestARedisStallLongerThanTheKeyedLeasesKeepsEveryKeyWithinItsLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range leaseStalls {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case on a redis-server of its own
			opts, rdb, ns, cl := stallServer(t, tc.args)
			keys := []string{"a", "b", "c", "d", "e", "f"}
			const jobs = 18
			order := enqueueByKey(t, cl, "k", keys, jobs)
			// Windows of 1.5 s: the leases live 3 s; the stall lasts 4 s.
			const interval, stall = 500 * time.Millisecond, 4 * time.Second
			firsts := map[string]bool{}
			for _, jids := range order {
				firsts[jids[0]] = true
			}
			log := newKeyLog()
			w := log.workerFor(func(job *Job) time.Duration {
				if firsts[job.JID] {
					return 2*interval + stall + 2*time.Second // through the stall and past it
				}
				return 20 * time.Millisecond
			}, nil)
			startLeaseFleet(t, rdb, ns, interval, Queue{Name: "k", Concurrency: 6, Keys: KeyPolicy{Sequence: true}}, w)
			testutil.WaitFor(t, "each key's first job started", func() bool {
				log.mu.Lock()
				defer log.mu.Unlock()
				return len(log.starts) == len(keys)
			})
			time.Sleep(2 * interval) // a few beats first
			stallRedis(t, opts, tc.debugSleep, stall)
			testutil.WaitFor(t, "every job succeeded", func() bool { return log.succeeded() == jobs })
			log.assertRanInOrder(t, order)
		})
	}
}

// stallServer starts a redis-server of the test's own with args, and returns its options, a
// client of it (closed after the nodes stop: cleanups run last first), a namespace and an exq
// Client.
func stallServer(t *testing.T, args []string) (*redis.Options, *redis.Client, string, *Client) {
	t.Helper()
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: args})
	opts, err := redis.ParseURL(srv.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	ns := testutil.Namespace(t)
	cl, err := NewClient(context.Background(), ClientOptions{Redis: rdb, Namespace: ns, Logger: testLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return opts, rdb, ns, cl
}

// startLeaseFleet starts two nodes serving q with w, beating every interval (windows of three
// intervals), and stops them when the test ends.
func startLeaseFleet(t *testing.T, rdb *redis.Client, ns string, interval time.Duration, q Queue, w Worker) {
	t.Helper()
	for range 2 {
		e, err := Start(context.Background(), Options{Redis: rdb, Namespace: ns, HeartbeatInterval: interval, MissedHeartbeatsAllowed: 2,
			PollTimeout: 20 * time.Millisecond, DisableScheduler: true, RedisTimeout: 10 * time.Second, Logger: testLogger(),
			Queues: []Queue{q}, Workers: map[string]Worker{"W": w}})
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			assert.NoError(t, e.Stop(ctx))
		})
	}
}

// leaseStalls are the ways a lease test stalls Redis, each on a redis-server of its own.
var leaseStalls = []struct {
	name       string
	args       []string // the redis-server's
	debugSleep bool     // DEBUG SLEEP rather than a busy script
}{
	{"calls wait for a script", nil, false},
	{"calls get BUSY", []string{"--busy-reply-threshold", "500"}, false},
	{"DEBUG SLEEP", []string{"--enable-debug-command", "yes"}, true},
}

// stallRedis holds the server of opts for d from another client (which waits as long as it
// takes): with DEBUG SLEEP, or a script that keeps it busy.
func stallRedis(t *testing.T, opts *redis.Options, debugSleep bool, d time.Duration) {
	t.Helper()
	sopts := *opts
	sopts.ReadTimeout = d + 5*time.Second
	staller := redis.NewClient(&sopts)
	defer staller.Close()
	ctx := context.Background()
	if debugSleep {
		require.NoError(t, staller.Do(ctx, "DEBUG", "SLEEP", d.Seconds()).Err())
	} else {
		require.NoError(t, busyScript.Run(ctx, staller, nil, d.Microseconds()).Err())
	}
}

// A stall of Redis longer than a GlobalLimit's leases' life (one heartbeat window) puts the
// queue over its limit on no node: the leases of the jobs running through the stall still
// count until their nodes have beaten since (which renews them). Every job runs once, never
// more than the limit at a time across the fleet.
func TestARedisStallLongerThanAGlobalLimitsLeasesKeepsTheLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range leaseStalls {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts, rdb, ns, cl := stallServer(t, tc.args)
			ctx := context.Background()
			const jobs, limit = 8, 2
			var fed []string
			for i := range jobs {
				jid, err := cl.Enqueue(ctx, "g", "W", []any{i})
				require.NoError(t, err)
				fed = append(fed, jid)
			}
			// Windows of 1.5 s: the leases live 1.5 s; the stall lasts 3 s.
			const interval, stall = 500 * time.Millisecond, 3 * time.Second
			var mu sync.Mutex
			running, most, started := 0, 0, 0
			ran := map[string]int{}
			w := WorkerFunc(func(_ context.Context, job *Job) error {
				mu.Lock()
				running++
				most = max(most, running)
				started++
				long := started <= limit
				ran[job.JID]++
				mu.Unlock()
				if long {
					time.Sleep(2*interval + stall + 2*time.Second) // through the stall and past it
				} else {
					time.Sleep(20 * time.Millisecond)
				}
				mu.Lock()
				running--
				mu.Unlock()
				return nil
			})
			startLeaseFleet(t, rdb, ns, interval, Queue{Name: "g", Concurrency: 4, GlobalLimit: limit}, w)
			testutil.WaitFor(t, "the long jobs started", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return started >= limit
			})
			time.Sleep(2 * interval)
			stallRedis(t, opts, tc.debugSleep, stall)
			testutil.WaitFor(t, "every job ran", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(ran) == jobs && running == 0
			})
			mu.Lock()
			defer mu.Unlock()
			assert.LessOrEqual(t, most, limit, "never more than the limit running across the fleet")
			for _, jid := range fed {
				assert.Equal(t, 1, ran[jid], "job %s runs once", jid)
			}
		})
	}
}

// The lease sets of a GlobalLimit and of a key's Concurrency outlive their members by an hour,
// at a fetch and at a beat: their TTL counts on through a stall of Redis, and a set that
// expired during one would drop every lease of the queue or key at once.
func TestLeaseSetsOutliveTheirLeasesByAnHour(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Enqueue(ctx, "limited", "W", nil)
	require.NoError(t, err)
	_, err = c.Enqueue(ctx, "keyed", "W", nil, Key("a"))
	require.NoError(t, err)
	release := make(chan struct{})
	defer close(release)
	const interval = 100 * time.Millisecond
	v.start(Options{HeartbeatInterval: interval,
		Queues:  []Queue{{Name: "limited", Concurrency: 1, GlobalLimit: 1}, {Name: "keyed", Concurrency: 1, Keys: KeyPolicy{Sequence: true}}},
		Workers: map[string]Worker{"W": WorkerFunc(func(context.Context, *Job) error { <-release; return nil })}})
	for _, set := range []string{v.keys.Leases("limited"), v.keys.KeyLeases("keyed", "a")} {
		testutil.WaitFor(t, set+" holds a lease", func() bool { return v.zcard(set) == 1 })
		// Past a few beats, which renew the leases and set the TTL again.
		for range 2 {
			time.Sleep(2 * interval)
			ttl, err := v.rdb.PTTL(ctx, set).Result()
			require.NoError(t, err)
			assert.Greater(t, ttl, time.Hour, set)
			assert.Less(t, ttl, time.Hour+time.Minute, set)
		}
	}
}
