package reliability_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// TestChaosNoJobIsLost runs 20 000 jobs on three worker processes while one of them is
// SIGKILLed and replaced every 2 s and Redis itself is killed and restarted (AOF, fsync
// always) once. Every job must complete at least once; duplicates may only come from the
// jobs that were running in a killed process.
func TestChaosNoJobIsLost(t *testing.T) {
	const (
		jobs        = 20000
		procs       = 3
		concurrency = 20
		heartbeat   = 500 * time.Millisecond
		missed      = exq.DefaultMissedHeartbeats
		chaosFor    = 20 * time.Second
	)
	srv := testutil.StartServer(t, testutil.ServerOptions{AOF: true})
	ns := "chaos"
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer rdb.Close()

	enq, err := exq.NewClient(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns})
	require.NoError(t, err)
	want := make(map[string]bool, jobs)
	for start := 0; start < jobs; start += 1000 {
		batch := make([]exq.JobSpec, 1000)
		for i := range batch {
			batch[i] = exq.JobSpec{Queue: "chaos", Class: "Sleep", Args: []any{1 + rand.IntN(40)}}
		}
		res, err := enq.EnqueueAll(ctx, batch)
		require.NoError(t, err)
		for _, r := range res {
			want[r.JID] = true
		}
	}

	workers := make([]*child, procs)
	for i := range workers {
		workers[i] = startChild(t, srv.URL(), ns, concurrency, heartbeat)
	}
	done := func() int64 {
		n, _ := rdb.HLen(ctx, doneKey(ns)).Result()
		return n
	}

	// Watch each killed node until a live one has rescued its backup list.
	var mu sync.Mutex
	var rescueTimes []time.Duration
	var watchers sync.WaitGroup
	watchRescue := func(node string, killedAt time.Time) {
		defer watchers.Done()
		deadline := killedAt.Add(testutil.WaitTimeout)
		for time.Now().Before(deadline) {
			n, err := rdb.LLen(ctx, ns+":queue:backup::"+node+"::chaos").Result()
			if err == nil && n == 0 {
				mu.Lock()
				rescueTimes = append(rescueTimes, time.Since(killedAt))
				mu.Unlock()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	kills, inFlightAtKills := 0, int64(0)
	restartedRedis := false
	start := time.Now()
	for time.Since(start) < chaosFor && done() < jobs {
		time.Sleep(2 * time.Second)
		if !restartedRedis && time.Since(start) > 4*time.Second {
			srv.Kill() // harsher than a clean shutdown; fsync always keeps every write
			srv.Start()
			restartedRedis = true
			t.Logf("%5.1fs: Redis killed and restarted", time.Since(start).Seconds())
			continue
		}
		victim := rand.IntN(procs)
		node := workers[victim].node
		inFlight, _ := rdb.LLen(ctx, ns+":queue:backup::"+node+"::chaos").Result()
		workers[victim].kill()
		killedAt := time.Now()
		kills++
		inFlightAtKills += inFlight
		watchers.Add(1)
		go watchRescue(node, killedAt)
		workers[victim] = startChild(t, srv.URL(), ns, concurrency, heartbeat)
		t.Logf("%5.1fs: SIGKILLed %s with %d jobs in flight, %d jobs done", time.Since(start).Seconds(), node, inFlight, done())
	}
	window := heartbeat*time.Duration(missed+1) + heartbeat
	// Every wanted jid done, by identity. On a timeout, say where each missing job is while the
	// workers still run (stopping them hands their jobs back and would hide where they were).
	notDone := func() []string {
		counts, err := rdb.HGetAll(ctx, doneKey(ns)).Result()
		if err != nil {
			return []string{"(HGETALL " + doneKey(ns) + ": " + err.Error() + ")"}
		}
		var missing []string
		for jid := range want {
			if counts[jid] == "" {
				missing = append(missing, jid)
			}
		}
		sort.Strings(missing)
		return missing
	}
	completed := testutil.Within(func() bool { return done() >= jobs && len(notDone()) == 0 })
	elapsed := time.Since(start)
	whereMissing := ""
	if !completed {
		whereMissing = locateJobs(ctx, rdb, ns, notDone(), window)
	}
	for _, w := range workers {
		w.stop()
	}
	watchers.Wait()

	counts, err := rdb.HGetAll(ctx, doneKey(ns)).Result()
	require.NoError(t, err)
	lost, duplicates := 0, 0
	for jid := range want {
		switch n := counts[jid]; n {
		case "":
			lost++
		case "1":
		default:
			k, err := strconv.Atoi(n)
			require.NoError(t, err, "done count of %s", jid)
			duplicates += k - 1
		}
	}
	var slowest time.Duration
	for _, d := range rescueTimes {
		slowest = max(slowest, d)
	}
	t.Logf("chaos: %d jobs in %s, %d SIGKILLs (%d jobs in flight at the kills), Redis restarted: %v; lost %d, duplicates %d; "+
		"orphans back after at most %s (heartbeat window %s)",
		jobs, elapsed.Round(time.Millisecond), kills, inFlightAtKills, restartedRedis, lost, duplicates, slowest.Round(time.Millisecond), window)
	if !completed {
		t.Errorf("not every job completed within %s of the end of the chaos; while the workers still ran, %s", testutil.WaitTimeout, whereMissing)
	}
	assert.Zero(t, lost, "no job is ever lost")
	assert.LessOrEqual(t, int64(duplicates), inFlightAtKills, "duplicates only from jobs running in a killed process")
	assert.Len(t, rescueTimes, kills, "every killed node's jobs were rescued")
	assert.LessOrEqual(t, slowest, window+time.Second, "orphans come back within the heartbeat window")
	assert.GreaterOrEqual(t, kills, 3)
	assert.True(t, restartedRedis)
	left, err := rdb.Keys(ctx, ns+":queue:backup::*").Result()
	require.NoError(t, err)
	assert.Empty(t, left, "no backup list is left behind")
}
