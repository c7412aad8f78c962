package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// clusterRun is what one cluster failover under load measured.
type clusterRun struct {
	toPromotion  time.Duration // from the CLUSTER FAILOVER or the SIGKILL to the replica saying role:master
	toFirstWrite time.Duration // to the first enqueue returning nil after that
	toResume     time.Duration // to the first run of a job enqueued after the event
	writeGap     time.Duration // the longest time between two enqueues returning nil
	acked, lost  int           // enqueues that returned nil before the event, and of them never run
	ackedAfter   int           // enqueues that returned nil after the event (all must run)
	duplicates   int           // jobs run more than once
}

func (r clusterRun) String() string {
	return fmt.Sprintf("→ promotion %s, → first enqueue %s, → first new job run %s (promotion → resume %s), longest enqueue gap %s; "+
		"acknowledged before %d (lost %d), after %d, run twice %d",
		r.toPromotion.Round(time.Millisecond), r.toFirstWrite.Round(time.Millisecond), r.toResume.Round(time.Millisecond),
		(r.toResume - r.toPromotion).Round(time.Millisecond), r.writeGap.Round(time.Millisecond), r.acked, r.lost, r.ackedAfter, r.duplicates)
}

// TestClusterFailoverUnderLoad fails over the master that holds the namespace's slot of a
// 3-master cluster (one replica each, cluster-node-timeout 1 s) while producers enqueue and a
// node runs the jobs, both through the cluster client exq builds from a ?cluster=true URL:
// a manual CLUSTER FAILOVER on its replica (nothing may be lost: the replica takes over only
// once in sync), and a SIGKILL of the master (acknowledged enqueues the replica had not
// received are lost; the test counts them and does not fail on them). Processing must resume
// within 15 s of the promotion. -long repeats each twice and adds a caller's client with
// go-redis' default 60 s slot-map reload, to measure what the short interval buys.
func TestClusterFailoverUnderLoad(t *testing.T) {
	runs := 1
	if testutil.Long() {
		runs = 2
	}
	for _, kill := range []bool{false, true} {
		name := "CLUSTER FAILOVER"
		if kill {
			name = "SIGKILL"
		}
		t.Run(name, func(t *testing.T) {
			for i := 0; i < runs; i++ {
				// A subtest per run: its cleanups (clients closed, the wait for go-redis to stop
				// redialling the killed master) end that run before the next starts.
				t.Run(fmt.Sprintf("run %d", i+1), func(t *testing.T) {
					r := clusterFailoverOnce(t, kill, 0, nil)
					t.Logf("%s run %d: %s", name, i+1, r)
					require.Less(t, r.toResume-r.toPromotion, 15*time.Second, "processing resumes within 15 s of the promotion")
					if !kill {
						require.Zero(t, r.lost, "a manual failover loses nothing")
					}
				})
			}
		})
	}
	// With WaitReplicas, an enqueue that returned nil is on the replica: nothing acknowledged is
	// lost when the master is SIGKILLed. (After the kill no replica is left, so later enqueues
	// return ErrNotReplicated and are not counted as acknowledged.)
	t.Run("SIGKILL, WaitReplicas 1", func(t *testing.T) {
		for i := 0; i < runs; i++ {
			t.Run(fmt.Sprintf("run %d", i+1), func(t *testing.T) {
				r := clusterFailoverOnce(t, true, 1, nil)
				t.Logf("SIGKILL with WaitReplicas 1, run %d: %s", i+1, r)
				require.Less(t, r.toResume-r.toPromotion, 15*time.Second, "processing resumes within 15 s of the promotion")
				require.Zero(t, r.lost, "nothing acknowledged with WaitReplicas is lost")
			})
		}
	})
	if !testutil.Long() {
		return
	}
	t.Run("SIGKILL, caller's client with the default 60 s reload", func(t *testing.T) {
		r := clusterFailoverOnce(t, true, 0, func(addrs []string) *redis.ClusterClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1, ReadTimeout: time.Second,
				WriteTimeout: time.Second, DialTimeout: time.Second})
		})
		t.Logf("default reload interval: %s", r)
	})
}

// clusterFailoverOnce runs one failover on a fresh cluster (a replica refuses a second
// failover for a while). With callers set, node and producer use the client it returns.
// With wait > 0, node and producer use WaitReplicas: wait.
func clusterFailoverOnce(t *testing.T, kill bool, wait int, callers func(addrs []string) *redis.ClusterClient) clusterRun {
	t.Helper()
	// Registered first, so it runs last: after the clients are closed, go-redis' redial loop
	// for the killed master notices within a second that its pool is closed.
	t.Cleanup(func() {
		testutil.WaitFor(t, "go-redis stops redialling the killed master", func() bool {
			buf := make([]byte, 1<<20)
			return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "pool.(*ConnPool).tryDial")
		})
	})
	c := testutil.StartCluster(t, testutil.ClusterOptions{Masters: 3, Replicas: 1})
	ctx := context.Background()
	const ns = "{exqfo}"
	master, replica, err := c.MasterAndReplicaOf(ctx, c.Addrs()[0], ns+":queues")
	require.NoError(t, err)
	require.NotEmpty(t, replica, "the namespace's master has a replica")

	var mu sync.Mutex
	ranAt := map[string]time.Time{} // first run of each jid
	work := newCounter(func(ctx context.Context, job *exq.Job) error {
		mu.Lock()
		if _, ok := ranAt[job.JID]; !ok {
			ranAt[job.JID] = time.Now()
		}
		mu.Unlock()
		return nil
	})
	no := exq.Options{RedisURL: c.URL(), Namespace: ns, RedisTimeout: time.Second, Concurrency: 20,
		Workers: map[string]exq.Worker{"W": work}, WaitReplicas: wait}
	po := exq.ClientOptions{RedisURL: c.URL(), Namespace: ns, RedisTimeout: time.Second, Logger: quietLogger(),
		WaitReplicas: wait}
	if callers != nil {
		cc := callers(c.Addrs())
		t.Cleanup(func() { _ = cc.Close() })
		no.Redis, po.Redis = cc, cc
	}
	startNode(t, no)
	producer, err := exq.NewClient(ctx, po)
	require.NoError(t, err)
	t.Cleanup(func() { _ = producer.Close() })

	type written struct {
		jid   string
		at    time.Time
		acked bool // returned nil (with WaitReplicas: replicated); else ErrNotReplicated, written on the master
	}
	var (
		wmu  sync.Mutex
		jobs []written
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				jid, err := producer.Enqueue(cctx, "default", "W", []any{p, i})
				cancel()
				if err == nil || errors.Is(err, exq.ErrNotReplicated) {
					wmu.Lock()
					jobs = append(jobs, written{jid, time.Now(), err == nil})
					wmu.Unlock()
				} else {
					time.Sleep(5 * time.Millisecond) // no tight loop while the master is gone
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	testutil.WaitFor(t, "jobs run before the failover", func() bool { return work.total() > 200 })

	rc := client(t, replica)
	event := time.Now()
	if kill {
		c.Server(master).Kill()
		event = time.Now() // Kill waits for the process to end: enqueues in flight returned before
	} else {
		require.NoError(t, rc.Do(ctx, "CLUSTER", "FAILOVER").Err())
	}
	var promoted time.Time
	deadline := time.Now().Add(60 * time.Second)
	for promoted.IsZero() {
		if strings.Contains(rc.Info(ctx, "replication").Val(), "role:master") {
			promoted = time.Now()
		}
		require.True(t, time.Now().Before(deadline), "the replica was promoted")
		time.Sleep(5 * time.Millisecond)
	}
	var resumed time.Time
	deadline = time.Now().Add(90 * time.Second)
	for resumed.IsZero() {
		wmu.Lock()
		var after []string
		for _, w := range jobs {
			if w.at.After(promoted) {
				after = append(after, w.jid)
			}
		}
		wmu.Unlock()
		mu.Lock()
		for _, jid := range after {
			if at, ok := ranAt[jid]; ok && (resumed.IsZero() || at.Before(resumed)) {
				resumed = at
			}
		}
		mu.Unlock()
		require.True(t, time.Now().Before(deadline), "processing resumed after the failover")
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // a little more load on the new master
	stop.Store(true)
	wg.Wait()

	r := clusterRun{toPromotion: promoted.Sub(event), toResume: resumed.Sub(event)}
	var before, after []string
	var last time.Time
	for _, w := range jobs {
		if w.at.After(event) {
			after = append(after, w.jid)
			if r.toFirstWrite == 0 {
				r.toFirstWrite = w.at.Sub(event)
			}
		} else if w.acked {
			before = append(before, w.jid)
		}
		if !last.IsZero() && w.at.Sub(last) > r.writeGap {
			r.writeGap = w.at.Sub(last)
		}
		last = w.at
	}
	r.acked, r.ackedAfter = len(before), len(after)
	// Every job acknowledged after the event is on the new master and must run; the ones from
	// before either run or were lost with the old master. Wait for the former, then give the
	// latter a moment (jobs in a dead node's backup list need no rescue: the node is alive).
	testutil.WaitFor(t, "every job enqueued after the failover ran", func() bool {
		for _, jid := range after {
			if !work.ran(jid) {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second)
	runs := work.snapshot()
	for _, jid := range before {
		if runs[jid] == 0 {
			r.lost++
		}
	}
	for _, n := range runs {
		if n > 1 {
			r.duplicates++
		}
	}
	return r
}
