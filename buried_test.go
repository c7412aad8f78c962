package exq

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// A node paused (SIGSTOP, a long GC, a VM migration) past its heartbeat window is taken for
// dead: its in-flight jobs go back to their queue. When it resumes, it must find out at its next
// beat, drop those runs (cancelled, outcomes not written, leases not renewed) and join again,
// and no late outcome of theirs may remove the backup entry of a run it fetched since: killed
// then, the new runs must come back too.
func testFleetANodePausedPastItsWindowDropsItsOldRunsAndLosesNoJob(t *testing.T) {
	// Timed (timed_test.go): pauses a child process for set times against its heartbeat window.
	v := newEnv(t)
	ctx := context.Background()
	const interval = 200 * time.Millisecond
	const long, short = 3000, 400 // ms
	fed := append(v.enqueueRuns("q", 1, long), v.enqueueRuns("q", 1, short)...)
	jidLong, jidShort := fed[0], fed[1]
	node := v.startRunNode(runNodeConfig{Heartbeat: interval, Queues: []Queue{{Name: "q", Concurrency: 3, GlobalLimit: 3}}})
	testutil.WaitFor(t, "the node runs both jobs", func() bool { return v.runs().runsOn(node.id) == 2 })
	began := time.Now()
	node.pause()
	// A live node working on another queue only buries the paused one.
	v.start(Options{HeartbeatInterval: interval, Queues: []Queue{{Name: "other", Concurrency: 1}},
		Workers: map[string]Worker{"Run": runJob(v.rdb, v.ns, "rescuer")}})
	testutil.WaitFor(t, "the paused node is buried and its jobs are back in their queue", func() bool {
		return v.rdb.ZScore(ctx, v.keys.Heartbeats(), node.id).Err() == redis.Nil && len(v.list(v.keys.Queue("q"))) == 2
	})
	// Stopped for a second at least: the short run's time is up meanwhile, and the long job's
	// run after the resume ends no earlier than 4 s after the pause, well after the test looks
	// (below, 3.5 s after the pause, past the end of its run from before).
	for time.Since(began) < time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	node.resume()
	testutil.WaitFor(t, "the resumed node beats again and runs both jobs again", func() bool {
		return v.rdb.ZScore(ctx, v.keys.Heartbeats(), node.id).Err() == nil && v.runs().runsOn(node.id) == 4
	})
	// Wait past the end of the long job's first run: had it completed, its acknowledgement
	// would have been written by now.
	for time.Since(began) < long*time.Millisecond+500*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
	// The short job's run since the resume ends (400 ms after it began, later on a loaded
	// machine) and is acknowledged: wait for that rather than for a time, or the kill can fall
	// inside that run and the backup list hold two entries.
	testutil.WaitFor(t, "the short job's run since the resume is acknowledged", func() bool {
		for _, raw := range v.list(v.keys.Backup(node.id, "q")) {
			if strings.Contains(raw, jidShort) {
				return false
			}
		}
		return true
	})
	runs := v.runs()
	require.Len(t, runs.started[jidLong], 2, "the long job's second run is still running")
	// Its first run, left to go on, would have completed by now, beside the second.
	oldDone := len(runs.done[jidLong])
	backup := v.list(v.keys.Backup(node.id, "q"))
	leases := v.zcard(v.keys.Leases("q"))
	node.kill()

	// The jobs that ran on the killed node when it died must run again: those whose entries it
	// held at the kill, read after the kill, when the dead process can change nothing more, in
	// its backup list or, if a rescue moved them already, in the queue (the other live node
	// works on another queue). One read of both lists in a transaction sees each entry once: a
	// rescue moves it in one script. The run log cannot tell: a run from before the burial that
	// was cancelled logs no end, so a job whose new run completed would count as running. (Read
	// before the kill, a run that completed in between would count as killed too.) A run that
	// completed but was killed before its acknowledgement runs again, explained by the kill.
	var held, queued *redis.StringSliceCmd
	_, err := v.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		held = p.LRange(ctx, v.keys.Backup(node.id, "q"), 0, -1)
		queued = p.LRange(ctx, v.keys.Queue("q"), 0, -1)
		return nil
	})
	require.NoError(t, err)
	var killedRuns []string
	for _, jid := range fed {
		for _, raw := range append(held.Val(), queued.Val()...) {
			if strings.Contains(raw, jid) {
				killedRuns = append(killedRuns, jid)
				break
			}
		}
	}
	assert.Contains(t, killedRuns, jidLong, "the long job's run since the resume was running at the kill")
	// A node that works on the queue runs what came back.
	v.start(Options{HeartbeatInterval: interval, Queues: []Queue{{Name: "q", Concurrency: 3}},
		Workers: map[string]Worker{"Run": runJob(v.rdb, v.ns, "finisher")}})
	settled := testutil.Within(func() bool { return v.runs().runsOn("finisher") >= len(killedRuns) })
	runs = v.runs()
	missing := 0
	for _, jid := range killedRuns {
		if last := runs.started[jid]; last[len(last)-1] != "finisher" {
			missing++
		}
	}
	failed := v.zcard(v.keys.Retry()) + v.zcard(v.keys.Dead())
	t.Logf("fed 2 jobs to a node, paused it past its window, resumed it, killed it 3.5 s later: "+
		"its backup list held %d entries for its 2 runs since the resume (leases held %d), the long job's run from before the pause completed %d times, "+
		"%d of the %d jobs running at the kill did not run again (settled: %v), %d runs failed; runs by jid: %v, completed: %v",
		len(backup), leases, oldDone, missing, len(killedRuns), settled, failed, runs.started, runs.done)
	assert.Len(t, backup, 1, "the long job's new run keeps its backup entry (the short one's ended)")
	assert.Zero(t, missing, "every job running on the killed node runs again")
	assert.Zero(t, failed, "no run failed (a run is cancelled only when its node was buried, and then writes no outcome)")
	assert.Zero(t, oldDone, "a run from before the burial is cancelled at the node's first beat after the resume")
	assert.LessOrEqual(t, leases, 1, "only the new run's lease counts against the limit")
}

// Every outcome of a run carries the incarnation of the node it ran on: once that incarnation
// is gone (the node joined again after a burial, or another runtime's monitor removed its
// heartbeat), none of them touches the backup list, where another run of the same job may
// sit; the fetch and the beat of the old incarnation are refused too.
func TestOutcomesOfABuriedIncarnationLeaveTheBackupListAlone(t *testing.T) {
	t.Parallel()
	raw := `{"class":"W","args":[],"queue":"q","jid":"j1","unique_token":"tok","unique_until":"success"}`
	outcomes := []struct {
		name  string
		write func(jq *store.Store, epoch string) error
	}{
		{"ack", func(jq *store.Store, epoch string) error {
			_, err := jq.AckMany(context.Background(), []store.AckReq{{Queue: "q", Raw: raw, Epoch: epoch}})
			return err
		}},
		{"unique ack", func(jq *store.Store, epoch string) error {
			return jq.Ack(context.Background(), "q", raw, "tok", "j1", epoch)
		}},
		{"retry", func(jq *store.Store, epoch string) error {
			_, err := jq.Retry(context.Background(), "q", raw, raw, time.Now().Add(time.Hour), epoch)
			return err
		}},
		{"dead", func(jq *store.Store, epoch string) error {
			_, err := jq.Dead(context.Background(), "q", raw, raw, time.Now(), time.Hour, 10, "tok", "j1", epoch)
			return err
		}},
	}
	for _, how := range []string{"joined again", "heartbeat removed"} {
		for _, o := range outcomes {
			t.Run(how+", "+o.name, func(t *testing.T) {
				v := newEnv(t)
				ctx := context.Background()
				jq := testStore(v.client, v.keys, "n")
				_, err := jq.Join(ctx, time.Minute, nil, "old")
				require.NoError(t, err)
				require.NoError(t, v.rdb.LPush(ctx, v.keys.Backup("n", "q"), raw).Err())
				require.NoError(t, v.rdb.Set(ctx, v.keys.Unique("tok"), "j1", time.Hour).Err())
				current := "old"
				if how == "joined again" {
					current = "new"
					_, err = jq.Join(ctx, time.Minute, nil, current)
					require.NoError(t, err)
				} else {
					require.NoError(t, v.rdb.ZRem(ctx, v.keys.Heartbeats(), "n").Err())
				}
				require.NoError(t, o.write(jq, "old"))
				assert.Equal(t, []string{raw}, v.list(v.keys.Backup("n", "q")), "the entry stays")
				assert.Zero(t, v.zcard(v.keys.Retry())+v.zcard(v.keys.Dead()), "no outcome written")
				assert.Equal(t, "j1", v.rdb.Get(ctx, v.keys.Unique("tok")).Val(), "the lock stays")
				alive, _, err := jq.Beat(ctx, time.Minute, nil, "old", 0)
				require.NoError(t, err)
				assert.False(t, alive, "the old incarnation's beat is refused")
				jq.SetEpoch(current)
				if how == "joined again" {
					require.NoError(t, v.rdb.LPush(ctx, v.keys.Queue("q"), raw).Err())
					old := "old"
					jq.SetEpoch(old)
					_, err := jq.Fetch(ctx, []store.FetchReq{{Queue: "q", N: 1}}, time.Minute, 0)
					assert.ErrorIs(t, err, errBuried, "the old incarnation fetches nothing")
					assert.Len(t, v.list(v.keys.Queue("q")), 1)
					require.NoError(t, o.write(jq, current))
					assert.Empty(t, v.list(v.keys.Backup("n", "q")), "the current incarnation's outcome is written")
				}
			})
		}
	}
}

// A node is never buried while one of its backup lists holds a job, or while its set of
// backup queues names a queue the rescue did not cover.
func TestBuryRefusesANodeWithJobsLeft(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	stale := v.staleBackup("dead", "seen", 1)
	jq := testStore(v.client, v.keys, "monitor")
	res, err := jq.Bury(ctx, stale, []string{"seen"})
	require.NoError(t, err)
	assert.Equal(t, store.BuryJobsLeft, res, "a list holds a job")
	_, err = jq.RescueBackup(ctx, stale, "seen", time.Second)
	require.NoError(t, err)
	require.NoError(t, v.rdb.SAdd(ctx, v.keys.BackupQueues("dead"), "seen", "unseen").Err())
	res, err = jq.Bury(ctx, stale, []string{"seen"})
	require.NoError(t, err)
	assert.Equal(t, store.BuryJobsLeft, res, "the set names a queue the rescue did not look at")
	res, err = jq.Bury(ctx, stale, []string{"seen", "unseen"})
	require.NoError(t, err)
	assert.Equal(t, store.BuryDone, res)
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.BackupQueues("dead")).Val(), "its set goes with it")
}

// pausingDequeuer holds the poll loop in Fetched, between a fetch and the start of its runs,
// until released: a node paused (SIGSTOP) just after its fetch ran, as seen from Redis.
type pausingDequeuer struct {
	fetched, release chan struct{}
}

func (d *pausingDequeuer) Available(_ string, free int) int { return free }
func (d *pausingDequeuer) Fetched(string, int) {
	select {
	case d.fetched <- struct{}{}:
		<-d.release
	default:
	}
}
func (d *pausingDequeuer) Finished(string) {}
func (d *pausingDequeuer) Stopped()        {}

// A node paused after its fetch ran and before the job's run began, past its window, is
// buried and the job rescued and run by another node. When it wakes, it must not begin that
// run: it cannot tell whether it was buried, so it waits for its next beat, which finds it
// buried and drops the run. Begun at once (as it was), the job ran twice, the second time
// beside whatever its key or limit had started since.
func TestANodeWokenAfterItsFetchWasRescuedDoesNotBeginTheRescuedJob(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	jid := v.enqueueN("q", 1)[0]
	var mu sync.Mutex
	runs := map[string]int{}
	worker := func(node string) Worker {
		return WorkerFunc(func(context.Context, *Job) error {
			mu.Lock()
			runs[node]++
			mu.Unlock()
			return nil
		})
	}
	proxy := testutil.NewProxy(t, v.rdb.Options().Addr)
	d := &pausingDequeuer{fetched: make(chan struct{}), release: make(chan struct{})}
	const interval = 100 * time.Millisecond
	paused := v.start(Options{Redis: v.clientVia(proxy.Addr()), HeartbeatInterval: interval, MissedHeartbeatsAllowed: 1,
		Dequeuer: d, Queues: []Queue{{Name: "q", Concurrency: 1}}, Workers: map[string]Worker{"W": worker("paused")}})
	select {
	case <-d.fetched:
	case <-time.After(10 * time.Second):
		t.Fatal("the node fetched no job")
	}
	// Paused: no beat gets through either.
	proxy.Down()
	v.start(Options{HeartbeatInterval: interval, Queues: []Queue{{Name: "q", Concurrency: 1}},
		Workers: map[string]Worker{"W": worker("rescuer")}})
	testutil.WaitFor(t, "the paused node is buried and its job run elsewhere", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return runs["rescuer"] == 1 && v.rdb.ZScore(ctx, v.keys.Heartbeats(), paused.NodeID()).Err() == redis.Nil
	})
	// Woken: its poll loop goes on first, before any beat of it has got through.
	close(d.release)
	time.Sleep(5 * interval) // time enough for a run that needs no beat to begin
	proxy.Up()
	testutil.WaitFor(t, "the woken node joins again", func() bool {
		return v.rdb.ZScore(ctx, v.keys.Heartbeats(), paused.NodeID()).Err() == nil
	})
	testutil.WaitFor(t, "the woken node's run ended", func() bool {
		paused.mgr.mu.Lock()
		defer paused.mgr.mu.Unlock()
		return len(paused.mgr.running) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"rescuer": 1}, runs, "job %s ran once, on the node that rescued it", jid)
	assert.Empty(t, v.list(v.keys.Queue("q")))
	assert.Empty(t, v.list(v.keys.Backup(paused.NodeID(), "q")))
}

// mayBegin lets a run begin only while the node knows it is alive and still the incarnation
// that fetched the run; a run of a buried incarnation is orphaned (its lease dropped, its
// context cancelled with errBuried), and a node that cannot tell waits for the next verdict.
func TestMayBeginAsksTheHeartbeatAndTheIncarnation(t *testing.T) {
	t.Parallel()
	verdict := make(chan struct{})
	for _, tc := range []struct {
		name        string
		alive       bool
		epoch       string // the node's incarnation now; the run was fetched as "old"
		begins      bool
		orphaned    bool
		wakeVerdict bool // the node cannot tell until a verdict, then knows it is alive
	}{
		{"alive, same incarnation", true, "old", true, false, false},
		{"alive, joined again since the fetch", true, "new", false, true, false},
		{"no heartbeat", true, "", true, false, false},
		{"cannot tell, then alive", false, "old", true, false, true},
		{"cannot tell, then buried and joined again", false, "new", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(managerParts{}, nil)
			calls := 0
			m.alive = func() (bool, <-chan struct{}) {
				calls++
				if tc.alive || calls > 1 {
					return true, nil
				}
				return false, verdict
			}
			m.epoch = func() string { return tc.epoch }
			r := &run{epoch: "old", lease: "n:1"}
			if tc.epoch == "" {
				r.epoch = ""
			}
			if tc.wakeVerdict {
				go func() { verdict <- struct{}{} }()
			}
			assert.Equal(t, tc.begins, m.mayBegin(r))
			assert.Equal(t, tc.orphaned, r.orphaned())
			if tc.orphaned {
				assert.Empty(t, r.lease, "the lease lapsed with the burial")
				assert.ErrorIs(t, context.Cause(&r.ctx), errBuried)
			}
		})
	}
}
