package exq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// fleetSeqLog is the list the "Seq" jobs of a fleet log their runs to, in the order Redis got
// them: "b <node> <key> <n> <jid>" as a run begins, "e <node> <key> <n> <jid> ok|fail|buried"
// as it ends ("buried": its node was taken for dead and dropped the run, see seqJob); the test
// adds "k <node>" once it killed a node, and "p <node>" once it paused one (SIGSTOP) for longer
// than its heartbeat window.
func fleetSeqLog(ns string) string { return ns + ":test:seqlog" }

// fleetNodeID is this fleet node's id, once started.
var fleetNodeID atomic.Pointer[string]

// seqJob is the fleet's keyed sequence job: args [key, n]; it logs its begin and end.
func seqJob(rdb *redis.Client, c fleetConfig) Worker {
	return WorkerFunc(func(ctx context.Context, job *Job) error {
		var key string
		var n int
		if err := job.Bind(&key, &n); err != nil {
			return err
		}
		node := fleetNodeID.Load()
		for node == nil { // a job may begin before Start returned the id
			time.Sleep(time.Millisecond)
			node = fleetNodeID.Load()
		}
		log := fleetSeqLog(c.Namespace)
		entered := time.Now()
		if err := rdb.RPush(ctx, log, fmt.Sprintf("b %s %s %d %s", *node, key, n, job.JID)).Err(); err != nil {
			return err
		}
		time.Sleep(c.JobDuration)
		fail := c.FailEvery > 0 && n%c.FailEvery == 0 && job.RetryCount == 0
		end := "ok"
		if fail {
			end = "fail"
		}
		if time.Since(entered) > c.Heartbeat && ctx.Err() == nil {
			// Paused during the run (it took over a heartbeat interval, not JobDuration): the
			// node's next beat, right after it woke, tells whether it was taken for dead.
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
		if errors.Is(context.Cause(ctx), errBuried) {
			// Its node was taken for dead while the run was open and dropped it at its next
			// beat: a run begun before a pause, even when the pause came between the node's
			// go-ahead and the "b" above (checkSequences).
			end = "buried"
		}
		rdb.RPush(context.WithoutCancel(ctx), log, fmt.Sprintf("e %s %s %d %s %s", *node, key, n, job.JID, end))
		if fail {
			return fmt.Errorf("planned failure of %s/%d", key, n)
		}
		return nil
	})
}

// checkSequences reads the fleet's run log and reports every breach: two runs of a key at
// once (a killed node's runs end at its kill; a paused node's runs open when it was paused end
// there too: the node is taken for dead and its jobs rescued, and what those runs do once it
// wakes counts for nothing, their outcomes refused as a buried node's; so do the runs it drops
// as buried whose "b" the pause held back), a job that began before its key's previous job
// succeeded, a job that never succeeded. It returns the number of successes counted by jid.
func checkSequences(t *testing.T, events []string, keys, perKey int) (successes, cut int) {
	t.Helper()
	type open struct{ node, jid string }
	running := map[string]*open{}  // key -> the run in progress
	succeeded := map[string]bool{} // jid -> succeeded once
	next := map[string]int{}       // key -> the n of its next job to succeed
	cutOff := map[open]bool{}      // the runs a pause cut off
	// A run its node dropped as buried began before the node was taken for dead: its node's
	// go-ahead (manager.mayBegin) came before the pause, though its "b" may come after "p"
	// when the pause fell between the two. Such a run, its "b" after "p", opens no key.
	buried := map[open]bool{}
	paused := map[string]bool{} // the nodes a "p" was seen for
	for _, ev := range events {
		if f := strings.Fields(ev); f[0] == "e" && f[5] == "buried" {
			buried[open{f[1], f[4]}] = true
		}
	}
	byKey := map[string][]string{} // key -> its events so far, for a breach's report
	breaches := 0
	for _, ev := range events {
		f := strings.Fields(ev)
		if f[0] == "b" || f[0] == "e" {
			byKey[f[2]] = append(byKey[f[2]], ev)
		}
		switch f[0] {
		case "k", "p":
			paused[f[1]] = f[0] == "p"
			if testing.Verbose() {
				t.Logf("%s of %s with %d keys running: %v", map[string]string{"k": "kill", "p": "pause"}[f[0]], f[1], len(running), running)
			}
			for k, r := range running {
				if r.node == f[1] {
					delete(running, k)
					cutOff[*r] = true
					cut++
				}
			}
		case "b":
			node, key, jid := f[1], f[2], f[4]
			if paused[node] && buried[open{node, jid}] {
				cutOff[open{node, jid}] = true
				cut++
				continue
			}
			n, _ := strconv.Atoi(f[3])
			if r := running[key]; r != nil && breaches < 10 {
				t.Errorf("key %s: %s began on %s while %s ran on %s; the key's last events: %q", key, jid, node, r.jid, r.node,
					byKey[key][max(0, len(byKey[key])-8):])
				breaches++
			}
			if n > next[key] && breaches < 10 {
				t.Errorf("key %s: job %d began before job %d succeeded", key, n, next[key])
				breaches++
			}
			running[key] = &open{node, jid}
		case "e":
			key, jid := f[2], f[4]
			if cutOff[open{f[1], jid}] {
				continue // a paused node's run, woken after its job was rescued
			}
			n, _ := strconv.Atoi(f[3])
			delete(running, key)
			if f[5] == "ok" {
				succeeded[jid] = true
				if n == next[key] {
					next[key]++
				}
			}
		}
	}
	for k := 0; k < keys; k++ {
		assert.Equal(t, perKey, next[fmt.Sprintf("k%d", k)], "key k%d: every job succeeded in order", k)
	}
	return len(succeeded), cut
}

// Sequences across 3 node processes, one killed with SIGKILL every so often and replaced:
// per key the jobs run one at a time and strictly in order, a failed job holding its key's
// later ones, and every job succeeds (counted by jid). -long runs the size issue 41 names:
// 1 000 keys × 100 jobs, one node SIGKILLed every second until every job succeeded.
func testFleetKeyedSequencesSurviveKilledNodes(t *testing.T) {
	// Timed (timed_test.go): child processes judged by heartbeat windows.
	if testing.Short() {
		t.Skip("starts child processes")
	}
	v := newEnv(t)
	ctx := context.Background()
	keys, perKey, kills := 10, 20, 2
	cfg := fleetConfig{Queue: Queue{Name: "seq", Concurrency: 8, Keys: KeyPolicy{Sequence: true}},
		Heartbeat: 300 * time.Millisecond, JobDuration: 30 * time.Millisecond, FailEvery: 7}
	long := testutil.Long()
	if long {
		keys, perKey = 1000, 100
		cfg.Queue.Concurrency, cfg.JobDuration = 50, 10*time.Millisecond
	}
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()
	for n := 0; n < perKey; n++ {
		specs := make([]JobSpec, keys)
		for k := range specs {
			key := fmt.Sprintf("k%d", k)
			specs[k] = JobSpec{Queue: "seq", Class: "Seq", Args: []any{key, n}, Options: []EnqueueOption{Key(key)}}
		}
		res, err := c.EnqueueAll(ctx, specs)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			v.dumpKeyed("seq")
		}
	})
	nodes := v.startFleet(3, cfg)
	total := keys * perKey
	succeeded := func() int {
		n := 0
		for _, ev := range v.list(fleetSeqLog(v.ns)) {
			if strings.HasSuffix(ev, " ok") {
				n++
			}
		}
		return n
	}
	kill := func() {
		victim := rand.IntN(len(nodes))
		nodes[victim].kill()
		require.NoError(t, v.rdb.RPush(ctx, fleetSeqLog(v.ns), "k "+nodes[victim].id).Err())
		nodes[victim] = v.startFleet(1, cfg)[0]
	}
	if long {
		kills = 0
		for deadline := time.Now().Add(10 * time.Minute); succeeded() < total; kills++ {
			require.True(t, time.Now().Before(deadline), "every job succeeded within 10 minutes: %d of %d", succeeded(), total)
			time.Sleep(time.Second)
			kill()
		}
	}
	for i := 0; !long && i < kills; i++ {
		target := total * (i + 1) / (kills + 2)
		waitLong(t, 2*time.Minute, fmt.Sprintf("%d jobs succeeded", target), func() bool { return succeeded() >= target })
		kill()
	}
	for deadline := time.Now().Add(3 * time.Minute); !checkSequencesQuiet(v.list(fleetSeqLog(v.ns)), keys, perKey); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Error("timed out waiting until every job succeeded")
			break
		}
	}
	stopFleet(nodes)
	got, cut := checkSequences(t, v.list(fleetSeqLog(v.ns)), keys, perKey)
	assert.Equal(t, total, got, "every job succeeded, counted by jid")
	t.Logf("%d keys × %d jobs over 3 processes, %d SIGKILLs cutting %d runs: %d successes by jid, %d log events",
		keys, perKey, kills, cut, got, len(v.list(fleetSeqLog(v.ns))))
	require.Eventually(t, func() bool {
		n, err := v.rdb.Exists(ctx, v.keys.KeyReady("seq"), v.keys.KeyBlocked("seq"), v.keys.KeyDelayed("seq"), v.keys.KeyHeld("seq")).Result()
		return err == nil && n == 0
	}, 5*time.Second, 20*time.Millisecond, "no per-key state is left")
}

// Sequences across 3 node processes, one paused (SIGSTOP) past its heartbeat window while it
// runs jobs, then woken (SIGCONT): the others take it for dead and rescue its jobs to the heads
// of their keys' lists, removing its leases; the rescued jobs run before their keys' next ones;
// the woken node's runs from before are cut off (their outcomes refused: it was buried), and it
// joins again and runs jobs of a second round. Per key one job at a time, in order, every job
// succeeding (counted by jid) once the pause is detected.
func testFleetKeyedSequencesSurviveAPausedNode(t *testing.T) {
	// Timed (timed_test.go): child processes judged by heartbeat windows.
	if testing.Short() {
		t.Skip("starts child processes")
	}
	v := newEnv(t)
	ctx := context.Background()
	const keys, perKey = 10, 20
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()
	// enqueue writes jobs from to to-1 of every key.
	enqueue := func(from, to int) {
		for n := from; n < to; n++ {
			specs := make([]JobSpec, keys)
			for k := range specs {
				key := fmt.Sprintf("k%d", k)
				specs[k] = JobSpec{Queue: "seq", Class: "Seq", Args: []any{key, n}, Options: []EnqueueOption{Key(key)}}
			}
			_, err := c.EnqueueAll(ctx, specs)
			require.NoError(t, err)
		}
	}
	enqueue(0, perKey)
	cfg := fleetConfig{Queue: Queue{Name: "seq", Concurrency: 8, Keys: KeyPolicy{Sequence: true}},
		Heartbeat: 300 * time.Millisecond, JobDuration: 30 * time.Millisecond, FailEvery: 7}
	t.Cleanup(func() {
		if t.Failed() {
			v.dumpKeyed("seq")
		}
	})
	nodes := v.startFleet(3, cfg)
	log := func() []string { return v.list(fleetSeqLog(v.ns)) }
	succeeded := func() int { return strings.Count(strings.Join(log(), "\n"), " ok") }
	total := keys * perKey
	waitLong(t, time.Minute, "a third of the jobs succeeded", func() bool { return succeeded() >= total/3 })
	// Paused while it runs jobs: SIGSTOP first, then the mark, so no run of it begins between.
	paused := nodes[0]
	running := func() int {
		n := 0
		for _, ev := range log() {
			if strings.HasPrefix(ev, "b "+paused.id+" ") {
				n++
			} else if strings.HasPrefix(ev, "e "+paused.id+" ") {
				n--
			}
		}
		return n
	}
	// Its runs may all end between the look and the stop: then it goes on at once, stopped for
	// far less than its window, and the next try waits for runs again.
	cutRuns := 0
	for try := 1; cutRuns == 0; try++ {
		require.LessOrEqual(t, try, 100, "the node to pause was stopped with runs open")
		waitLong(t, time.Minute, "the node to pause runs jobs", func() bool { return running() > 0 })
		paused.pause()
		if cutRuns = running(); cutRuns == 0 {
			paused.resume()
		}
	}
	require.NoError(t, v.rdb.RPush(ctx, fleetSeqLog(v.ns), "p "+paused.id).Err())
	waitLong(t, time.Minute, "the paused node is taken for dead", func() bool {
		return v.rdb.ZScore(ctx, v.keys.Heartbeats(), paused.id).Err() == redis.Nil
	})
	// The two others run every job, the paused node's rescued ones first in their keys.
	waitLong(t, 2*time.Minute, "every job succeeded", func() bool { return checkSequencesQuiet(log(), keys, perKey) })
	paused.resume()
	waitLong(t, time.Minute, "the woken node joins again", func() bool {
		return v.rdb.ZScore(ctx, v.keys.Heartbeats(), paused.id).Err() == nil
	})
	// A second round of every key's jobs, the woken node among those running them.
	enqueue(perKey, 2*perKey)
	waitLong(t, 2*time.Minute, "every job of the second round succeeded", func() bool {
		return checkSequencesQuiet(log(), keys, 2*perKey)
	})
	stopFleet(nodes)
	woken := 0
	ev := log()
	mark := slices.Index(ev, "p "+paused.id)
	for _, e := range ev[mark+1:] {
		if strings.HasPrefix(e, "b "+paused.id+" ") {
			woken++
		}
	}
	got, cut := checkSequences(t, ev, keys, 2*perKey)
	assert.Equal(t, 2*total, got, "every job succeeded, counted by jid")
	assert.Positive(t, cutRuns, "the pause cut runs off")
	assert.Positive(t, woken, "the woken node ran jobs again")
	t.Logf("%d keys × %d jobs over 3 processes, one paused past its window with %d runs open (%d cut off, %d of them dropped by it as buried), then %d jobs begun by it once woken: %d successes by jid",
		keys, 2*perKey, cutRuns, cut, strings.Count(strings.Join(ev, "\n"), " buried"), woken, got)
}

// dumpKeyed logs the keyed state of queue q, for a failed test.
func (v *env) dumpKeyed(q string) {
	ctx := context.Background()
	keys, _ := v.rdb.Keys(ctx, v.ns+":*").Result()
	for _, k := range keys {
		typ := v.rdb.Type(ctx, k).Val()
		var val any
		switch typ {
		case "list":
			val = v.rdb.LRange(ctx, k, 0, 5).Val()
		case "zset":
			val = v.rdb.ZRangeWithScores(ctx, k, 0, 5).Val()
		case "hash":
			val = v.rdb.HGetAll(ctx, k).Val()
		case "set":
			val = v.rdb.SMembers(ctx, k).Val()
		default:
			val = v.rdb.Get(ctx, k).Val()
		}
		if !strings.HasSuffix(k, "seqlog") && !strings.Contains(k, ":stat") {
			v.t.Logf("%s %s %v", typ, k, val)
		}
	}
	now, _ := v.rdb.Time(ctx).Result()
	v.t.Logf("server time %.3f", float64(now.UnixMicro())/1e6)
}

// checkSequencesQuiet reports whether every key's jobs all succeeded.
func checkSequencesQuiet(events []string, keys, perKey int) bool {
	next := map[string]int{}
	open := map[string]string{} // "<node> <jid>" -> key, the runs in progress
	cutOff := map[string]bool{} // the runs a pause cut off
	for _, ev := range events {
		f := strings.Fields(ev)
		switch f[0] {
		case "b":
			open[f[1]+" "+f[4]] = f[2]
		case "p":
			for run := range open {
				if strings.HasPrefix(run, f[1]+" ") {
					cutOff[run] = true
				}
			}
		}
		if f[0] == "e" {
			delete(open, f[1]+" "+f[4])
			if cutOff[f[1]+" "+f[4]] {
				continue
			}
		}
		if f[0] == "e" && f[5] == "ok" {
			if n, _ := strconv.Atoi(f[3]); n == next[f[2]] {
				next[f[2]]++
			}
		}
	}
	for k := 0; k < keys; k++ {
		if next[fmt.Sprintf("k%d", k)] != perKey {
			return false
		}
	}
	return true
}
