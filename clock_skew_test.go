package exq

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// fleetSkews are the node clocks of the skewed fleets: one right, two 10 s off, two 10 min off.
var fleetSkews = []time.Duration{0, 10 * time.Second, -10 * time.Second, 10 * time.Minute, -10 * time.Minute}

// skewedClock is a node's own clock, off the real one (and the Redis server's) by skew.
func skewedClock(skew time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(skew) }
}

// serverTime reads the Redis server's clock.
func (v *env) serverTime() time.Time {
	v.t.Helper()
	t, err := v.rdb.Time(context.Background()).Result()
	require.NoError(v.t, err)
	return t
}

// startSkewed starts one node per skew of fleetSkews, each with its own clock, all with o.
func (v *env) startSkewed(o Options) []*Exq {
	v.t.Helper()
	o.PollTimeout, o.SchedulerPollTimeout = 100*time.Millisecond, 100*time.Millisecond
	nodes := make([]*Exq, len(fleetSkews))
	for i, skew := range fleetSkews {
		nodes[i] = v.start(o, testHooks{now: skewedClock(skew)})
	}
	return nodes
}

// runLog records when each jid ran, by the real clock (the Redis server's: it runs here).
type runLog struct {
	mu   sync.Mutex
	runs map[string][]time.Time
}

func (l *runLog) worker(fail bool) Worker {
	return WorkerFunc(func(_ context.Context, job *Job) error {
		l.mu.Lock()
		if l.runs == nil {
			l.runs = map[string][]time.Time{}
		}
		l.runs[job.JID] = append(l.runs[job.JID], time.Now())
		l.mu.Unlock()
		if fail {
			return fmt.Errorf("fails on purpose")
		}
		return nil
	})
}

func (l *runLog) of(jid string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.runs[jid]...)
}

// Five nodes whose clocks are 0, ±10 s and ±10 min off, one Redis: a per-second schedule runs
// one job per tick, one tick per second, none from before the schedule was created, none from
// the future, none from a window in which it was disabled.
func TestSkewedFleetRunsEachPeriodicTickOnceAndOnlyWhileEnabled(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	// The node 10 s behind evaluates a tick 10 s after it happened: the run must outlast the
	// disabled window by that much (and a few seconds) to show whether it fires the window's ticks.
	disableAt, enableAt, end := 3*time.Second, 8*time.Second, 22*time.Second
	if testutil.Long() {
		end = 2 * time.Minute
	}
	spec := []PeriodicJob{{Name: "every-second", Spec: "* * * * * *", Class: "Tick", Queue: "cron"}}
	created := v.serverTime().Truncate(time.Second)
	v.startSkewed(Options{Queues: []Queue{{Name: "idle"}}, Periodic: spec})
	api := NewAPIForTest(t, v)

	sleepUntil := func(d time.Duration) { time.Sleep(time.Until(created.Add(d))) }
	sleepUntil(disableAt)
	require.NoError(t, api.DisablePeriodic(ctx, "every-second"))
	disabled := v.serverTime()
	sleepUntil(enableAt)
	enabling := v.serverTime()
	require.NoError(t, api.EnablePeriodic(ctx, "every-second"))
	sleepUntil(end)
	// The nodes go on running: the queue is read first and the server's time after it, so that
	// a tick enqueued between the two (at its time) is not taken for one from the future (a
	// loaded run counted one).
	queued := v.list(v.keys.Queue("cron"))
	stopped := v.serverTime()

	// Which tick each jid is: every second from 11 min before creation to 11 min after the end.
	tickOf := map[string]time.Time{}
	for at := created.Add(-11 * time.Minute); at.Before(stopped.Add(11 * time.Minute)); at = at.Add(time.Second) {
		tickOf[tickJID("every-second", at)] = at
	}
	perTick := map[time.Time]int{}
	var before, future, inWindow, unknown int
	for _, raw := range queued {
		jid, _ := decode(t, raw)["jid"].(string)
		tick, ok := tickOf[jid]
		switch {
		case !ok:
			unknown++
			continue
		case tick.Before(created):
			before++
		case tick.After(stopped):
			future++
		case tick.After(disabled) && tick.Before(enabling.Add(-2*time.Second)):
			inWindow++ // (a tick just before the enable may be claimed just after it)
		}
		perTick[tick]++
	}
	twice, inRun := 0, 0
	for tick, n := range perTick {
		if n > 1 {
			twice++
		}
		if !tick.Before(created) && !tick.After(stopped) {
			inRun++
		}
	}
	seconds := stopped.Sub(created).Seconds()
	t.Logf("skews %v, %.0f s: %d jobs (%.1f per second), %d ticks twice, %d before creation, %d from the future, %d in the disabled window, %d unknown",
		fleetSkews, seconds, len(perTick), float64(len(perTick))/seconds, twice, before, future, inWindow, unknown)
	assert.Zero(t, twice, "ticks enqueued twice")
	assert.Zero(t, before, "ticks from before the schedule was created")
	assert.Zero(t, future, "ticks from the future")
	assert.Zero(t, inWindow, "ticks from the disabled window")
	assert.Zero(t, unknown, "jobs that are no tick")
	// One job per second while enabled: the run's seconds less the disabled window, ±2 for
	// the edges.
	want := seconds - enabling.Sub(disabled).Seconds()
	assert.InDelta(t, want, float64(inRun), 3, "jobs of the run's ticks")
}

// NewAPIForTest opens an API on the env's Redis and namespace.
func NewAPIForTest(t *testing.T, v *env) *API {
	t.Helper()
	api, err := NewAPI(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	return api
}

// Every node of a skewed fleet enqueues a job with EnqueueIn(12 s), and a keyed one (which
// waits in its queue's delayed set, docs/keys.md): none runs before 12 s have passed on the
// server's clock, and none much later.
func TestSkewedFleetRunsEnqueueInJobsNeitherEarlyNorLate(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	const delay = 12 * time.Second // more than the 10 s skews: a due time from a node clock is off by all of one
	log := &runLog{}
	nodes := v.startSkewed(Options{Queues: []Queue{{Name: "in", Concurrency: 10, Keys: KeyPolicy{Sequence: true}}},
		Workers: map[string]Worker{"W": log.worker(false)}})
	type call struct {
		jid         string
		skew        time.Duration
		from, until time.Time
	}
	var calls []call
	for i, e := range nodes {
		for _, opts := range [][]EnqueueOption{nil, {Key(fmt.Sprintf("k%d", i))}} {
			from := v.serverTime()
			jid, err := e.EnqueueIn(ctx, "in", "W", delay, nil, opts...)
			require.NoError(t, err)
			calls = append(calls, call{jid, fleetSkews[i], from, v.serverTime()})
		}
	}
	deadline := time.Now().Add(delay + 15*time.Second)
	for time.Now().Before(deadline) {
		all := true
		for _, c := range calls {
			all = all && len(log.of(c.jid)) > 0
		}
		if all {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	early, late, never := 0, 0, 0
	for _, c := range calls {
		runs := log.of(c.jid)
		switch {
		case len(runs) == 0:
			never++
			t.Logf("enqueued by the node %v off: never ran", c.skew)
		case runs[0].Before(c.from.Add(delay - 250*time.Millisecond)):
			early++
			t.Logf("enqueued by the node %v off: ran %s early", c.skew, c.from.Add(delay).Sub(runs[0]))
		case runs[0].After(c.until.Add(delay + 6*time.Second)):
			late++
			t.Logf("enqueued by the node %v off: ran %s late", c.skew, runs[0].Sub(c.until.Add(delay)))
		}
		assert.LessOrEqual(t, len(runs), 1, "jid %s ran twice", c.jid)
	}
	t.Logf("EnqueueIn(%s) on nodes %v off: %d early, %d late, %d never ran", delay, fleetSkews, early, late, never)
	assert.Zero(t, early+late+never, "jobs run early, late or never")
}

// Every node of a skewed fleet runs a job that always fails, with a backoff of 3 s, and a keyed
// one (a sequence, whose retry waits in its queue's delayed set and holds its key): the runs of
// each job are 3 s apart on the server's clock, however far off the node clocks are.
func TestSkewedFleetSpacesRetriesAsTheBackoffSays(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	const backoff, retries = 3 * time.Second, 3
	log := &runLog{}
	o := Options{Backoff: func(int, *Job) time.Duration { return backoff }, Workers: map[string]Worker{"W": log.worker(true)}}
	var jids []string
	for i := range fleetSkews {
		o.Queues = append(o.Queues, Queue{Name: fmt.Sprintf("fail%d", i), Keys: KeyPolicy{Sequence: true}})
	}
	nodes := v.startSkewed(o)
	for i, e := range nodes {
		// Each node has every queue; the job's runs go to whichever node fetches it.
		for _, opts := range [][]EnqueueOption{{MaxRetries(retries)}, {MaxRetries(retries), Key("k")}} {
			jid, err := e.Enqueue(ctx, fmt.Sprintf("fail%d", i), "W", nil, opts...)
			require.NoError(t, err)
			jids = append(jids, jid)
		}
	}
	deadline := time.Now().Add(retries*(backoff+6*time.Second) + 5*time.Second)
	for time.Now().Before(deadline) {
		all := true
		for _, jid := range jids {
			all = all && len(log.of(jid)) == retries+1
		}
		if all {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var gaps []time.Duration
	short, long, missing := 0, 0, 0
	for _, jid := range jids {
		runs := log.of(jid)
		missing += retries + 1 - len(runs)
		for i := 1; i < len(runs); i++ {
			g := runs[i].Sub(runs[i-1])
			gaps = append(gaps, g.Round(10*time.Millisecond))
			switch {
			case g < backoff-250*time.Millisecond:
				short++
			case g > backoff+6*time.Second:
				long++
			}
		}
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	t.Logf("backoff %s, %d jobs × %d retries on nodes %v off: %d gaps shorter, %d longer, %d runs missing; gaps %v",
		backoff, len(jids), retries, fleetSkews, short, long, missing, gaps)
	assert.Zero(t, short, "retries sooner than the backoff")
	assert.Zero(t, long, "retries much later than the backoff")
	assert.Zero(t, missing, "runs missing")
}
