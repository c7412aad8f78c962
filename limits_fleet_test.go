package exq

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// waitLong is WaitFor with a deadline of its own, for runs that last longer than WaitFor's.
func waitLong(t *testing.T, d time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", d, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testFleetGlobalLimitCapsRunningJobsAcrossProcesses(t *testing.T) {
	// Timed (timed_test.go): compares the starts per second of child processes with those of a
	// control fleet beside them.
	v, control := newEnv(t), newEnv(t)
	const limit, jobDuration = 5, 20 * time.Millisecond
	jobs := 400
	if testutil.Long() {
		jobs = 2000
	}
	nodes := v.startFleet(3, fleetConfig{Queue: Queue{Name: "limited", Concurrency: 10, GlobalLimit: limit},
		Heartbeat: time.Second, JobDuration: jobDuration})
	// The control runs the same jobs at the same moment on 3 processes whose own concurrency
	// adds up to the limit (2 + 2 + 1) and no GlobalLimit: what this machine starts now when no
	// slot waits on another process. A limit whose freed slot another process learns of only
	// at its next poll starts about half as many.
	free := fleetConfig{Queue: Queue{Name: "free", Concurrency: 2}, Heartbeat: time.Second, JobDuration: jobDuration}
	nodes = append(nodes, control.startFleet(2, free)...)
	free.Queue.Concurrency = 1
	nodes = append(nodes, control.startFleet(1, free)...)
	v.enqueueTimed("limited", jobs)
	control.enqueueTimed("free", jobs)

	waitLong(t, 2*time.Minute, "every job ran", func() bool {
		return v.fleetCount(fleetEnded(v.ns)) == jobs && control.fleetCount(fleetEnded(control.ns)) == jobs
	})
	stopFleet(nodes)

	most := v.fleetCount(fleetMax(v.ns))
	assert.LessOrEqual(t, most, limit, "jobs running at once, across the 3 processes, as the jobs counted them")
	assert.Equal(t, limit, most, "the limit is used in full")
	rate, controlRate := startsPerSecond(t, v, jobs), startsPerSecond(t, control, jobs)
	ideal := float64(limit) / jobDuration.Seconds()
	t.Logf("%d jobs of %s, global limit %d over 3 processes × concurrency 10: most running at once %d; %.0f starts/s, "+
		"the control (concurrency 2+2+1, no global limit) %.0f: %.2f× (ideal %.0f)",
		jobs, jobDuration, limit, most, rate, controlRate, rate/controlRate, ideal)
	assert.Greater(t, rate, 0.75*controlRate, "starts per second close to the control's: a freed slot is taken at once by any process")
	assert.Zero(t, v.rdb.Exists(context.Background(), v.keys.Leases("limited")).Val(), "no lease is left once every node stopped")
}

// startsPerSecond is the rate of the fleet's jobs logged starts from the first to the last.
func startsPerSecond(t *testing.T, v *env, jobs int) float64 {
	t.Helper()
	starts := v.fleetStartTimes()
	require.Len(t, starts, jobs, "each job started once")
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	span := time.Duration(starts[len(starts)-1]-starts[0]) * time.Microsecond
	return float64(jobs-1) / span.Seconds()
}

func testFleetKilledProcessFreesItsSlotsWithinItsHeartbeatWindow(t *testing.T) {
	// Timed (timed_test.go): asserts slots free within a heartbeat window + 500 ms.
	v := newEnv(t)
	const limit = 5
	const heartbeat = 500 * time.Millisecond
	window := heartbeat * (DefaultMissedHeartbeats + 1)
	q := Queue{Name: "limited", Concurrency: 10, GlobalLimit: limit}
	v.enqueueTimed("limited", limit)
	holder := v.startFleet(1, fleetConfig{Queue: q, Heartbeat: heartbeat, JobDuration: -1})[0] // holds its jobs
	testutil.WaitFor(t, "the first node holds every slot", func() bool { return v.fleetCount(fleetRunning(v.ns)) == limit })

	other := v.startFleet(1, fleetConfig{Queue: q, Heartbeat: heartbeat, JobDuration: 100 * time.Millisecond})[0]
	v.enqueueTimed("limited", limit)
	ctx := context.Background()
	assert.EqualValues(t, limit, v.rdb.ZCard(ctx, v.keys.Leases("limited")).Val(), "one lease per running job")
	assert.EqualValues(t, limit, v.rdb.LLen(ctx, v.keys.Queue("limited")).Val(), "the other node waits for a slot")

	holder.kill()
	killed := time.Now()
	testutil.WaitFor(t, "the other node starts jobs", func() bool { return len(v.list(fleetStarts(v.ns))) > limit })
	freedIn := time.Since(killed)
	t.Logf("slots free %s after SIGKILL (heartbeat window %s)", freedIn.Round(time.Millisecond), window)
	assert.LessOrEqual(t, freedIn, window+500*time.Millisecond, "slots free within the killed node's heartbeat window")

	// The other node runs the new jobs and, once it rescued them, the killed node's.
	testutil.WaitFor(t, "every job ran on the other node", func() bool { return v.fleetCount(fleetEnded(v.ns)) == 2*limit })
	other.stop()
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.Leases("limited")).Val(), "no lease is left once every node stopped")
}

func testFleetRateSpreadsStartsEvenlyAcrossProcesses(t *testing.T) {
	// Timed (timed_test.go): asserts starts per second of child processes.
	v := newEnv(t)
	const perSecond = 200
	seconds := 3
	if testutil.Long() {
		seconds = 10
	}
	// The start log holds each start's server time for a window; read it often enough that no
	// start leaves it unseen, so the limit is checked on the clock that enforces it.
	logged := v.watchStartLog("paced")
	nodes := v.startFleet(3, fleetConfig{Queue: Queue{Name: "paced", Concurrency: 10, Rate: Rate{N: perSecond, Per: time.Second}},
		Heartbeat: time.Second, JobDuration: 2 * time.Millisecond})
	// Enqueued once every process runs: the first second is not one process's alone while the
	// others still start (a -race binary takes a while to start on a loaded machine).
	v.enqueueTimed("paced", perSecond*(seconds+2))
	waitLong(t, time.Duration(seconds+30)*time.Second, "the run lasted long enough", func() bool {
		return v.fleetCount(fleetEnded(v.ns)) >= perSecond*(seconds+1)
	})
	stopFleet(nodes)
	byServer := logged()
	assert.LessOrEqual(t, mostInAWindow(byServer, 1e6), perSecond, "no window of a second of the server's clock holds more starts than the rate")

	starts := v.fleetStartTimes()
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	first := starts[0]
	perSec := make([]int, seconds)
	for _, s := range starts {
		if k := (s - first) / 1e6; k < int64(seconds) {
			perSec[k]++
		}
	}
	// Any window of a second, not only those from the first start on.
	most := mostInAWindow(starts, 1e6)
	t.Logf("rate %d/s over 3 processes: starts in each full second %v; most in any window of 1 s: %d as the jobs saw it, %d by the server's clock",
		perSecond, perSec, most, mostInAWindow(byServer, 1e6))
	for k, n := range perSec {
		// The pace spreads starts one every Per/N: a second well below the rate means it
		// bunched them (or the host could not keep up, which a loaded 2-core machine shows as
		// up to ~20 % fewer).
		assert.GreaterOrEqual(t, n, perSecond*3/4, "second %d: the rate is reached (within 25 %%)", k)
	}
	// A job begins a moment after the fetch that took it (and the window is Per + 1 % for
	// that): on a loaded host that moment varies by more, so the jobs' own clocks may see a
	// window a few starts over; the limit itself is the server's, checked above.
	assert.LessOrEqual(t, most, perSecond*102/100, "no window of a second, as the jobs saw it, holds more than 2 %% over the rate")
}

// mostInAWindow is the most of the sorted times ts (µs) that fall in any window of width µs.
func mostInAWindow(ts []int64, width int64) int {
	most, j := 0, 0
	for i := range ts {
		for ts[i]-ts[j] >= width {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// watchStartLog reads queue q's start log (the server time of each start within its rate
// window) every 100 ms until the returned function is called, which returns every start seen,
// in µs of the server's clock, sorted.
func (v *env) watchStartLog(q string) func() []int64 {
	v.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	seen := map[string]float64{}
	done := make(chan struct{})
	key := wire.NewKeys(v.ns).Starts(q)
	read := func() {
		zs, err := v.rdb.ZRangeWithScores(context.Background(), key, 0, -1).Result()
		if err != nil {
			return
		}
		for _, z := range zs {
			seen[z.Member.(string)] = z.Score
		}
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			read()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	var out []int64
	stop := func() []int64 {
		once.Do(func() {
			cancel()
			<-done
			for _, s := range seen {
				out = append(out, int64(s*1e6))
			}
			sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		})
		return out
	}
	v.t.Cleanup(func() { stop() })
	return stop
}
