package exq

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// runLedger counts every run of every job by jid, across the nodes of one process: runs, runs
// of the same jid at the same time, the most jobs of the limited queue running at once, and
// the most jobs of one key of the keyed queue (keyedQueue: a job's key is its first arg)
// running at once.
type runLedger struct {
	mu         sync.Mutex
	runs       map[string]int
	running    map[string]int
	overlaps   map[string]bool // jids that ran on two workers at once
	limitedNow int
	limitedMax int
	keyNow     map[string]int
	keyMax     int
	starts     []time.Time
}

// keyedQueue is the queue whose jobs runLedger counts by key.
const keyedQueue = "keyed"

func newRunLedger() *runLedger {
	return &runLedger{runs: map[string]int{}, running: map[string]int{}, overlaps: map[string]bool{}, keyNow: map[string]int{}}
}

// worker runs a job for d, counting it.
func (l *runLedger) worker(limited string, d time.Duration) Worker {
	return WorkerFunc(func(ctx context.Context, job *Job) error {
		l.mu.Lock()
		l.runs[job.JID]++
		l.starts = append(l.starts, time.Now())
		l.running[job.JID]++
		if l.running[job.JID] > 1 {
			l.overlaps[job.JID] = true
		}
		if job.Queue == limited {
			l.limitedNow++
			l.limitedMax = max(l.limitedMax, l.limitedNow)
		}
		var key string
		if job.Queue == keyedQueue {
			_ = job.Bind(&key)
			l.keyNow[key]++
			l.keyMax = max(l.keyMax, l.keyNow[key])
		}
		l.mu.Unlock()
		time.Sleep(d)
		l.mu.Lock()
		l.running[job.JID]--
		if job.Queue == limited {
			l.limitedNow--
		}
		if job.Queue == keyedQueue {
			l.keyNow[key]--
		}
		l.mu.Unlock()
		return nil
	})
}

// startedBetween counts the runs that started in [from, to).
func (l *runLedger) startedBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.starts {
		if !s.Before(from) && s.Before(to) {
			n++
		}
	}
	return n
}

func (l *runLedger) ran(jid string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[jid]
}

// tally is what the ledger saw of the jobs fed: how many never ran, ran more than once, ran
// twice at the same time.
func (l *runLedger) tally(fed []string) (missing, twice, overlapping int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, jid := range fed {
		switch n := l.runs[jid]; {
		case n == 0:
			missing++
		case n > 1:
			twice++
		}
		if l.overlaps[jid] {
			overlapping++
		}
	}
	return missing, twice, overlapping
}

// isRedisOOM reports whether err says that Redis refused the call for want of memory.
func isRedisOOM(err error) bool { return errors.Is(err, ErrRedisOOM) }

// A Redis that reaches maxmemory (noeviction) for longer than the heartbeat window, while three
// nodes run jobs of an unlimited, a GlobalLimit and a keyed queue (sequences): enqueues fail
// with ErrRedisOOM and write nothing, and nothing else changes. The nodes keep beating, so none
// takes another for dead and no job is rescued, runs twice or is lost; the limit holds and no
// key runs two jobs at once; fetches, acks and the scheduler keep working, so the queues drain
// (which is what frees memory).
func TestOutOfMemoryRefusesEnqueuesAndChangesNothingElse(t *testing.T) {
	t.Parallel() // on a Redis of its own, with windows of 2 s that a node beside seven other tests keeps
	srv := testutil.MemoryLimited(t, 24)
	ns := testutil.Namespace(t)
	const (
		heartbeat = 400 * time.Millisecond
		missed    = 4 // window 2 s, half the outage
		limit     = 2
		jobTime   = 2500 * time.Millisecond // longer than the window: jobs are in flight throughout
	)
	oomFor := 4 * time.Second
	work, limited := 72, 12
	if testutil.Long() {
		oomFor, work, limited = 15*time.Second, 200, 30
	}
	ledger := newRunLedger()
	var mu sync.Mutex
	rescued := 0
	listen := func(ev Event) {
		if ev.Kind == JobsRescued {
			mu.Lock()
			rescued += ev.Count
			mu.Unlock()
		}
	}
	opts := Options{RedisURL: srv.URL(), Namespace: ns, HeartbeatInterval: heartbeat, MissedHeartbeatsAllowed: missed,
		Queues: []Queue{{Name: "limited", Concurrency: 4, GlobalLimit: limit}, {Name: "work", Concurrency: 4},
			{Name: keyedQueue, Concurrency: 4, Keys: KeyPolicy{Sequence: true}}},
		Workers:   map[string]Worker{"T": ledger.worker("limited", jobTime)},
		Listeners: []Listener{listen}, PollTimeout: 20 * time.Millisecond, SchedulerPollTimeout: 20 * time.Millisecond,
		Logger: testLogger()}
	// Each node lists its queues in another order (or has only one): a fetch's first write
	// depends on it.
	orders := [][]Queue{opts.Queues, {opts.Queues[2], opts.Queues[1], opts.Queues[0]}, {opts.Queues[1]}}
	var nodes []*Exq
	for i := 0; i < 3; i++ {
		o := opts
		o.Queues = orders[i]
		e, err := Start(context.Background(), o)
		require.NoError(t, err)
		nodes = append(nodes, e)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			assert.NoError(t, e.Stop(ctx))
		})
	}
	ctx := context.Background()
	var fed []string
	feed := func(q string, n int) {
		specs := make([]JobSpec, n)
		for i := range specs {
			specs[i] = JobSpec{Queue: q, Class: "T"}
		}
		res, err := nodes[0].EnqueueAll(ctx, specs)
		require.NoError(t, err)
		for _, r := range res {
			fed = append(fed, r.JID)
		}
	}
	feed("work", work)
	feed("limited", limited)
	keyed := func(i int) JobSpec {
		k := "k" + strconv.Itoa(i%4)
		return JobSpec{Queue: keyedQueue, Class: "T", Args: []any{k}, Options: []EnqueueOption{Key(k)}}
	}
	specs := make([]JobSpec, limited)
	for i := range specs {
		specs[i] = keyed(i)
	}
	res, err := nodes[0].EnqueueAll(ctx, specs)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
		fed = append(fed, r.JID)
	}
	// A few scheduled jobs fall due during the outage: the scheduler moves them then.
	for i := 0; i < 10; i++ {
		jid, err := nodes[1].EnqueueIn(ctx, "work", "T", time.Second+time.Duration(i)*200*time.Millisecond, nil)
		require.NoError(t, err)
		fed = append(fed, jid)
	}
	testutil.WaitFor(t, "jobs of both queues run", func() bool { return ledger.ran(fed[0]) > 0 && ledger.ran(fed[work]) > 0 })

	end := srv.OutOfMemory(t)
	began := time.Now()
	refused, written, other := 0, 0, 0
	var refusedJIDs []string
	var otherErr error
	for i := 0; time.Since(began) < oomFor; i++ {
		jid := "oom-" + strconv.Itoa(i)
		var err error
		switch i % 4 {
		case 0:
			_, err = nodes[i%3].Enqueue(ctx, "work", "T", nil, JID(jid))
		case 1:
			_, err = nodes[i%3].EnqueueIn(ctx, "work", "T", time.Millisecond, nil, JID(jid))
		case 2:
			_, err = nodes[i%3].EnqueueAll(ctx, []JobSpec{{Queue: "limited", Class: "T", Options: []EnqueueOption{JID(jid)}}})
		default:
			spec := keyed(i)
			_, err = nodes[i%3].Enqueue(ctx, spec.Queue, spec.Class, spec.Args, append(spec.Options, JID(jid))...)
		}
		switch {
		case err == nil:
			written++
			fed = append(fed, jid)
		case isRedisOOM(err):
			refused++
			refusedJIDs = append(refusedJIDs, jid)
		default:
			other++
			otherErr = err
		}
		time.Sleep(50 * time.Millisecond)
	}
	end()
	ended := time.Now()
	feed("work", 20) // enqueues work again at once

	done := testutil.Within(func() bool {
		missing, _, _ := ledger.tally(fed)
		return missing == 0
	})
	time.Sleep(2 * heartbeat * (missed + 1)) // a late rescue would show now
	missing, twice, overlapping := ledger.tally(fed)
	ranRefused := 0
	for _, jid := range refusedJIDs {
		if ledger.ran(jid) > 0 {
			ranRefused++
		}
	}
	mu.Lock()
	rescuedJobs := rescued
	mu.Unlock()
	ledger.mu.Lock()
	limitedMax, keyMax := ledger.limitedMax, ledger.keyMax
	ledger.mu.Unlock()
	startedDuring := ledger.startedBetween(began, ended)
	t.Logf("out of memory for %s with 3 nodes (heartbeat window %s): %d jobs fed; enqueues during it: %d refused with ErrRedisOOM, %d written, %d other errors (%v); "+
		"refused jobs that ran %d; jobs started during it %d; rescued %d; ran twice %d (at the same time %d); missing %d; most limited jobs at once %d (limit %d); most of one key at once %d",
		oomFor, heartbeat*(missed+1), len(fed), refused, written, other, otherErr, ranRefused, startedDuring, rescuedJobs, twice, overlapping, missing, limitedMax, limit, keyMax)
	assert.True(t, done, "every job fed ran")
	assert.Positive(t, refused, "enqueues during the outage fail with ErrRedisOOM")
	assert.Zero(t, other, "no enqueue fails with another error: %v", otherErr)
	assert.Zero(t, ranRefused, "a refused enqueue wrote nothing")
	assert.Positive(t, startedDuring, "the nodes keep fetching and running jobs")
	assert.Zero(t, rescuedJobs, "no live node is taken for dead")
	assert.Zero(t, twice, "no job runs twice")
	assert.Zero(t, missing, "no job is lost")
	assert.LessOrEqual(t, limitedMax, limit, "the GlobalLimit holds")
	assert.Equal(t, 1, keyMax, "each key's sequence ran one job at a time")
}

// Start on a Redis that is out of memory fails with an error matching ErrRedisOOM and writes
// nothing, also for a NodeID whose earlier process left its heartbeat behind: the first beat is
// a join, which Redis refuses then, whatever is already there.
func TestStartOnARedisOutOfMemoryFailsWithErrRedisOOM(t *testing.T) {
	t.Parallel()
	srv := testutil.MemoryLimited(t, 8)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	ctx := context.Background()
	nss := map[string]string{}
	for _, name := range []string{"plain", "fixed", "restarted", "periodic", "limits"} {
		nss[name] = testutil.Namespace(t)
	}
	// A process with NodeID "restarted" died a moment ago: its heartbeat and a backup entry are
	// still there.
	restarted := keysFor(nss["restarted"])
	require.NoError(t, c.ZAdd(ctx, restarted.Heartbeats(), redis.Z{Score: float64(time.Now().Unix()), Member: "restarted"}).Err())
	require.NoError(t, c.RPush(ctx, restarted.Backup("restarted", "default"), `{"class":"T","args":[],"queue":"default","jid":"j1"}`).Err())
	snapshot := func(ns string) map[string]string {
		keys, err := c.Keys(ctx, ns+":*").Result()
		require.NoError(t, err)
		out := map[string]string{}
		for _, k := range keys {
			out[k] = c.Dump(ctx, k).Val()
		}
		return out
	}
	before := map[string]map[string]string{}
	for name, ns := range nss {
		before[name] = snapshot(ns)
	}
	srv.OutOfMemory(t)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"plain", Options{}},
		{"fixed", Options{NodeID: "fixed"}},
		{"restarted", Options{NodeID: "restarted"}},
		{"periodic", Options{Periodic: []PeriodicJob{{Name: "p", Spec: "* * * * *", Class: "T", Queue: "default"}}}},
		{"limits", Options{Queues: []Queue{{Name: "default", Concurrency: 2, GlobalLimit: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.RedisURL, o.Namespace, o.Logger = srv.URL(), nss[tc.name], testLogger()
			e, err := Start(ctx, o)
			if e != nil {
				_ = e.Stop(ctx)
			}
			require.Error(t, err)
			assert.True(t, isRedisOOM(err), "errors.Is(err, ErrRedisOOM): %v", err)
			assert.Contains(t, err.Error(), "exq: start", "an exq error naming the call")
			if tc.name != "restarted" {
				// The restarted node put its old backup entry back on its queue first, as it
				// would have anyway (that moves a job, which Redis allows): Start failing later
				// loses nothing.
				assert.Equal(t, before[tc.name], snapshot(nss[tc.name]), "Start wrote nothing")
			}
		})
	}
	assert.Equal(t, []string{`{"class":"T","args":[],"queue":"default","jid":"j1"}`},
		c.LRange(ctx, restarted.Queue("default"), 0, -1).Val(), "the restarted node's job is back on its queue, once")
}
