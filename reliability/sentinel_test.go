package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// A node reaches Redis through the sentinels, from a RedisURL in ParseFailoverURL form or
// from the caller's FailoverClient, and runs jobs.
func TestSentinelNodeRunsJobsThroughAFailoverClient(t *testing.T) {
	s := testutil.StartSentinel(t, testutil.SentinelOptions{})
	ctx := context.Background()
	callers := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: testutil.SentinelMaster,
		SentinelAddrs: s.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { _ = callers.Close() })
	for name, o := range map[string]exq.Options{
		"RedisURL":        {RedisURL: s.URL()},
		"caller's client": {Redis: callers},
	} {
		t.Run(name, func(t *testing.T) {
			work := newCounter(nil)
			o.Namespace = "sent-" + name[:4]
			o.Workers = map[string]exq.Worker{"W": work}
			o.WaitReplicas = 1
			e := startNode(t, o)
			var jids []string
			for i := 0; i < 50; i++ {
				jid, err := e.Enqueue(ctx, "default", "W", []any{i})
				require.NoError(t, err, "the replica confirms every enqueue")
				jids = append(jids, jid)
			}
			testutil.WaitFor(t, "every job ran", func() bool { return work.total() == len(jids) })
		})
	}
}

// replicationLag is the replica's delay in TestSentinelFailoverUnderLoad.
const replicationLag = 2 * time.Millisecond

// failoverRun is what one failover under load measured.
type failoverRun struct {
	toPromotion, toFirstWrite, toResume time.Duration // from the SIGKILL
	acked, lost, duplicates             int           // enqueues that returned nil before the kill
}

// TestSentinelFailoverUnderLoad SIGKILLs the master while a producer enqueues and a node runs
// the jobs, and measures kill → promotion → first job run on the promoted replica. With
// WaitReplicas 1 every enqueue that returned nil before the kill must run; without it, the
// acknowledged enqueues that vanished are counted, not failed on: that loss is what
// WaitReplicas is for. Runs are at least once: a fetch or an acknowledgement the replica had
// not received when the master died is undone by the failover, so such a job runs again
// (the test counts those duplicates too). -long repeats each variant 5 times.
//
// The replica reaches the master through a proxy that delays the replication stream by
// replicationLag, as a replica in another zone lags: on plain loopback the replica is never
// more than a write behind, and a failover loses nothing measurable.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	runs := 1
	if testutil.Long() {
		runs = 5
	}
	for _, wait := range []int{0, 1} {
		t.Run(fmt.Sprintf("WaitReplicas=%d", wait), func(t *testing.T) {
			var all []failoverRun
			for i := 0; i < runs; i++ {
				r := failoverOnce(t, wait)
				t.Logf("run %d: kill → promotion %s, → first enqueue returned %s, → first job run on the new master %s (promotion → resume %s); "+
					"acknowledged before the kill %d, lost %d, run twice %d",
					i+1, r.toPromotion.Round(time.Millisecond), r.toFirstWrite.Round(time.Millisecond), r.toResume.Round(time.Millisecond),
					(r.toResume - r.toPromotion).Round(time.Millisecond), r.acked, r.lost, r.duplicates)
				all = append(all, r)
			}
			lost, acked := 0, 0
			for _, r := range all {
				lost += r.lost
				acked += r.acked
			}
			t.Logf("WaitReplicas=%d over %d runs: %d of %d acknowledged enqueues lost", wait, runs, lost, acked)
		})
	}
}

func failoverOnce(t *testing.T, wait int) failoverRun {
	t.Helper()
	s := testutil.StartSentinel(t, testutil.SentinelOptions{ReplicationLag: replicationLag})
	ctx := context.Background()
	const ns = "fo"

	var mu sync.Mutex
	ranAt := map[string]time.Time{} // first run of each jid
	work := newCounter(func(ctx context.Context, job *exq.Job) error {
		mu.Lock()
		if _, ok := ranAt[job.JID]; !ok {
			ranAt[job.JID] = time.Now()
		}
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // slower than the producers: a backlog waits in the queue
		return nil
	})
	startNode(t, exq.Options{RedisURL: s.URL(), Namespace: ns, RedisTimeout: time.Second,
		WaitReplicas: wait, WaitTimeout: 200 * time.Millisecond, Concurrency: 4, Workers: map[string]exq.Worker{"W": work}})
	producer, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: s.URL(), Namespace: ns, RedisTimeout: time.Second,
		WaitReplicas: wait, WaitTimeout: 200 * time.Millisecond, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = producer.Close() })

	// The producer enqueues without pause; it notes each job written (nil, or not replicated:
	// the job is on the master) with the time its call returned.
	type written struct {
		jid         string
		started, at time.Time // when the call began and returned
		acked       bool      // returned nil
	}
	var (
		wmu   sync.Mutex
		jobs  []written
		stop  atomic.Bool
		done  = make(chan struct{})
		count atomic.Int64
	)
	// The backlog is kept small (at most maxBacklog jobs written and not yet run), so that a
	// job written after the failover waits behind a bounded queue, however slow the machine.
	const maxBacklog = 200
	produce := func(p int) {
		for i := 0; !stop.Load(); i++ {
			for !stop.Load() && count.Load()-int64(work.total()) > maxBacklog {
				time.Sleep(time.Millisecond)
			}
			started := time.Now()
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			jid, err := producer.Enqueue(cctx, "default", "W", []any{p, i})
			cancel()
			if err == nil || errors.Is(err, exq.ErrNotReplicated) {
				wmu.Lock()
				jobs = append(jobs, written{jid, started, time.Now(), err == nil})
				wmu.Unlock()
				count.Add(1)
			} else {
				time.Sleep(5 * time.Millisecond) // the master is gone: no tight loop
			}
		}
	}
	// Several producers at once, so that at the kill several acknowledged writes may still be
	// on their way to the replica.
	var producers sync.WaitGroup
	for p := 0; p < 4; p++ {
		producers.Add(1)
		go func() { defer producers.Done(); produce(p) }()
	}
	go func() { producers.Wait(); close(done) }()
	testutil.WaitFor(t, "some load", func() bool { return count.Load() >= 300 })

	// The master's host dies: the replication stream in flight goes with it, then the process.
	// Times are measured from killed; jobs are told apart by dead, when the process has ended
	// (Kill waits for it): an enqueue that started in between could still be answered by the
	// dying master, whose replication link is already cut, and be lost as one from before.
	killed := time.Now()
	s.Link.Down()
	s.Master.Kill()
	dead := time.Now()
	promoted := s.WaitPromotion()
	var r failoverRun
	r.toPromotion = promoted.Sub(killed)
	firstAfter := func() (w written, ok bool) {
		wmu.Lock()
		defer wmu.Unlock()
		for _, j := range jobs {
			if j.started.After(dead) {
				return j, true
			}
		}
		return written{}, false
	}
	var first written
	testutil.WaitFor(t, "a job is written on the new master", func() bool {
		var ok bool
		first, ok = firstAfter()
		return ok
	})
	r.toFirstWrite = first.at.Sub(killed)
	// Resume: the first run of a job written after the kill, so through the new master.
	testutil.WaitFor(t, "a job written after the kill runs", func() bool { return work.ran(first.jid) })
	wmu.Lock()
	sofar := append([]written(nil), jobs...) // the producers still append
	wmu.Unlock()
	mu.Lock()
	resumed := time.Now()
	for _, j := range sofar {
		if at, ok := ranAt[j.jid]; ok && j.started.After(dead) && at.Before(resumed) {
			resumed = at
		}
	}
	mu.Unlock()
	r.toResume = resumed.Sub(killed)
	assert.Less(t, resumed.Sub(promoted), 10*time.Second, "processing resumes within 10 s of the promotion")

	time.Sleep(300 * time.Millisecond) // a little load on the new master too
	stop.Store(true)
	<-done

	wmu.Lock()
	var before []string // every enqueue that returned nil: before the kill, or in flight at it
	for _, j := range jobs {
		if j.acked && j.started.Before(dead) {
			before = append(before, j.jid)
		}
	}
	all := append([]written(nil), jobs...)
	wmu.Unlock()
	r.acked = len(before)

	// Every job written after the kill runs (the new master has them); the ones acknowledged
	// before it run unless the failover took them.
	for _, j := range all {
		if j.started.After(dead) {
			jid := j.jid
			testutil.WaitFor(t, "every job written after the kill runs", func() bool { return work.ran(jid) })
		}
	}
	missing := func() []string {
		var out []string
		for _, jid := range before {
			if !work.ran(jid) {
				out = append(out, jid)
			}
		}
		return out
	}
	if wait > 0 {
		if !testutil.Within(func() bool { return len(missing()) == 0 }) {
			rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: testutil.SentinelMaster, SentinelAddrs: s.Addrs()})
			defer rdb.Close()
			t.Fatalf("%d of %d enqueues acknowledged with WaitReplicas before the kill never ran:\n%s", len(missing()), len(before),
				locateJobs(ctx, rdb, ns, missing(), 20*time.Second))
		}
	} else {
		// Wait until nothing more comes: the queue and the node's work are drained.
		last, quiet := -1, 0
		for quiet < 20 {
			n := len(missing())
			if n == last {
				quiet++
			} else {
				quiet, last = 0, n
			}
			time.Sleep(50 * time.Millisecond)
		}
		r.lost = last
	}
	for _, n := range work.snapshot() {
		if n > 1 {
			r.duplicates++
		}
	}
	return r
}
