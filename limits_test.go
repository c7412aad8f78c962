package exq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
)

func TestFetchTakesOnlyWhatTheLimitsAllow(t *testing.T) {
	// Serial: asserts waits to within 50 ms of the starts it just wrote.
	far := float64(time.Now().Add(time.Hour).Unix())
	for _, tc := range []struct {
		name     string
		limits   store.Limits
		leases   []redis.Z // in the leases set before the fetch
		waiters  []redis.Z // in the lease waiters set before the fetch
		paused   bool
		jobs, n  int
		wantTook int
		wantWait func(t *testing.T, w time.Duration)
		waiting  bool // the node is in the waiters set after the fetch
	}{
		{"no limit takes every free slot", store.Limits{}, nil, nil, false, 10, 4, 4, notHeldBack, false},
		{"global limit counts live leases, not lapsed ones", store.Limits{Global: 3},
			[]redis.Z{{Score: far, Member: "other:1"}, {Score: 1, Member: "dead:1"}}, nil, false, 10, 10, 2, heldBackUnknown, true},
		{"global limit full takes nothing", store.Limits{Global: 1}, []redis.Z{{Score: far, Member: "other:1"}}, nil, false, 10, 10, 0, heldBackUnknown, true},
		{"a queue that runs out is not held back", store.Limits{Global: 5}, nil, nil, false, 2, 10, 2, notHeldBack, false},
		{"a fetch that gets what it asked for does not wait", store.Limits{Global: 5}, nil, []redis.Z{{Score: far, Member: "n"}}, false, 10, 3, 3, notHeldBack, false},
		{"paused takes nothing whatever the limits", store.Limits{Global: 5}, nil, nil, true, 10, 10, 0, heldBackUnknown, false},
		{"another node waiting caps the node at its share", store.Limits{Global: 4},
			[]redis.Z{{Score: far, Member: "other:1"}, {Score: far, Member: "n:7"}},
			[]redis.Z{{Score: far, Member: "other"}}, false, 10, 10, 1, heldBackUnknown, true},
		{"the node holds at most one more than the waiting node with fewest", store.Limits{Global: 4},
			[]redis.Z{{Score: far, Member: "other:1"}, {Score: far, Member: "other:2"}, {Score: far, Member: "n:7"}},
			[]redis.Z{{Score: far, Member: "other"}, {Score: far, Member: "third"}}, false, 10, 10, 0, heldBackUnknown, true},
		{"only the node's own leases count as its own", store.Limits{Global: 3},
			[]redis.Z{{Score: far, Member: "n:1:2"}, {Score: far, Member: "n:x"}}, []redis.Z{{Score: far, Member: "other"}}, false, 10, 10, 1, heldBackUnknown, true},
		{"waiters whose patience ran out do not count", store.Limits{Global: 4}, nil,
			[]redis.Z{{Score: 1, Member: "gone"}}, false, 10, 10, 4, heldBackUnknown, true},
		{"a node's own wait does not cap it", store.Limits{Global: 2}, nil,
			[]redis.Z{{Score: far, Member: "n"}}, false, 10, 10, 2, heldBackUnknown, true},
		{"rate takes a paced burst of three, not the window's worth", store.Limits{RateN: 100, RatePer: time.Second}, nil, nil, false, 10, 10, 3,
			func(t *testing.T, w time.Duration) {
				assert.Positive(t, w)
				assert.LessOrEqual(t, w, 15*time.Millisecond, "the next start is one spacing (10 ms) away")
			}, false},
		{"rate with a full window waits for the oldest start to leave it", store.Limits{RateN: 2, RatePer: time.Second}, nil, nil, false, 10, 10, 2,
			func(t *testing.T, w time.Duration) {
				assert.InDelta(t, 1010*time.Millisecond, w, float64(50*time.Millisecond), "the window is Per + 1 %%")
			}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			jq := testStore(v.client, v.keys, "n")
			for i := 0; i < tc.jobs; i++ {
				v.push("q", fmt.Sprintf(`{"class":"W","args":[%d],"queue":"q","jid":"j%d"}`, i, i))
			}
			if len(tc.leases) > 0 {
				require.NoError(t, v.client.ZAdd(ctx, v.keys.Leases("q"), tc.leases...).Err())
			}
			if len(tc.waiters) > 0 {
				require.NoError(t, v.client.ZAdd(ctx, v.keys.LeaseWaiters("q"), tc.waiters...).Err())
			}
			if tc.paused {
				require.NoError(t, jq.Pause(ctx, "q"))
			}
			res, err := jq.Fetch(ctx, []store.FetchReq{{Queue: "q", N: tc.n, Limits: tc.limits, First: 10}}, time.Minute, time.Minute)
			require.NoError(t, err)
			assert.Len(t, res.Jobs[0], tc.wantTook)
			tc.wantWait(t, res.HeldBack(0))
			if tc.limits.Global > 0 {
				live, err := v.client.ZCount(ctx, v.keys.Leases("q"), fmt.Sprint(time.Now().Unix()), "+inf").Result()
				require.NoError(t, err)
				assert.LessOrEqual(t, int(live), tc.limits.Global, "live leases never exceed the limit")
				for i := range tc.wantTook {
					_, err := v.client.ZScore(ctx, v.keys.Leases("q"), jq.LeaseMember(uint64(10+i))).Result()
					assert.NoError(t, err, "job %d holds lease n:%d", i, 10+i)
				}
				score, err := v.client.ZScore(ctx, v.keys.LeaseWaiters("q"), "n").Result()
				if tc.waiting {
					require.NoError(t, err, "the node waits for a slot")
					assert.InDelta(t, float64(time.Now().Add(time.Minute).Unix()), score, 5, "for its patience, by the server's clock")
				} else {
					assert.ErrorIs(t, err, redis.Nil, "the node does not wait")
				}
			}
			if tc.limits.RateN > 0 {
				assert.EqualValues(t, tc.wantTook, v.client.ZCard(ctx, v.keys.Starts("q")).Val(), "every start is logged")
			}
		})
	}
}

func notHeldBack(t *testing.T, w time.Duration)     { assert.Negative(t, w, "not held back") }
func heldBackUnknown(t *testing.T, w time.Duration) { assert.Zero(t, w, "held back, no time known") }

// peak counts the jobs of a test running at once and the most ever.
type peak struct{ now, most atomic.Int64 }

func (p *peak) enter() {
	n := p.now.Add(1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
}

func (p *peak) leave() { p.now.Add(-1) }

func TestLeasesAreReleasedAsJobsEndNotWhenTheyLapse(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	const jobs, limit = 30, 2
	var p peak
	var ran atomic.Int64
	work := WorkerFunc(func(ctx context.Context, job *Job) error {
		p.enter()
		defer p.leave()
		time.Sleep(2 * time.Millisecond)
		ran.Add(1)
		return nil
	})
	en := v.enqueuer(time.Now)
	for i := 0; i < jobs; i++ {
		_, err := en.enqueue(context.Background(), "limited", "W", []any{i}, nil)
		require.NoError(t, err)
	}
	// Leases live a minute unless renewed: only their release can free the slots in time.
	v.start(Options{Queues: []Queue{{Name: "limited", Concurrency: 10, GlobalLimit: limit}}, Workers: map[string]Worker{"W": work},
		HeartbeatInterval: 15 * time.Second})
	testutil.WaitFor(t, "every job ran", func() bool { return ran.Load() == jobs })
	assert.EqualValues(t, limit, p.most.Load(), "at most the limit ran at once, and the limit was used")
	testutil.WaitFor(t, "the last lease is released", func() bool { return v.zcard(v.keys.Leases("limited")) == 0 })
}

// A job's lease goes as soon as the job ends, whatever its outcome, without waiting for its
// node's next fetch: here the node fetches no more (it unsubscribed), and the leases live a
// minute unless released.
func TestALeaseIsReleasedWhenItsJobEndsWithoutAnotherFetch(t *testing.T) {
	t.Parallel()
	for _, outcome := range []string{"done", "failed", "snoozed"} {
		t.Run(outcome, func(t *testing.T) {
			v := newEnv(t)
			release := make(chan struct{})
			started := make(chan struct{}, 1)
			hold := WorkerFunc(func(ctx context.Context, job *Job) error {
				started <- struct{}{}
				<-release
				switch outcome {
				case "failed":
					return errors.New("boom")
				case "snoozed":
					return Snooze(time.Hour)
				}
				return nil
			})
			e := v.start(Options{Queues: []Queue{{Name: "limited", Concurrency: 2, GlobalLimit: 2}}, Workers: map[string]Worker{"W": hold},
				HeartbeatInterval: 15 * time.Second})
			_, err := e.Enqueue(context.Background(), "limited", "W", nil)
			require.NoError(t, err)
			<-started
			require.Equal(t, 1, v.zcard(v.keys.Leases("limited")), "the running job holds a lease")
			require.NoError(t, e.UnsubscribeAll())
			close(release)
			testutil.WaitFor(t, "the lease is released", func() bool { return v.zcard(v.keys.Leases("limited")) == 0 })
		})
	}
}

func TestHeartbeatRenewsTheLeasesOfRunningJobs(t *testing.T) {
	// Serial: heartbeat windows of 200 ms; CPU load from parallel tests lets a lease lapse.
	v := newEnv(t)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	hold := WorkerFunc(func(ctx context.Context, job *Job) error {
		started <- struct{}{}
		<-release
		return nil
	})
	v.push("limited", `{"class":"W","args":[],"queue":"limited","jid":"j1"}`)
	v.start(Options{Queues: []Queue{{Name: "limited", Concurrency: 10, GlobalLimit: 1}}, Workers: map[string]Worker{"W": hold},
		HeartbeatInterval: 100 * time.Millisecond, MissedHeartbeatsAllowed: 1})
	<-started
	leases := v.zset(v.keys.Leases("limited"))
	require.Len(t, leases, 1)
	first := leases[0]
	// The lease lives 200 ms unless renewed; the job holds it for much longer.
	testutil.WaitFor(t, "the lease is renewed past three windows", func() bool {
		l := v.zset(v.keys.Leases("limited"))
		return len(l) == 1 && l[0].Member == first.Member && l[0].Score > first.Score+0.6
	})
	close(release)
	testutil.WaitFor(t, "the lease is released", func() bool { return v.zcard(v.keys.Leases("limited")) == 0 })
}

func TestALostFetchReplyOnALimitedQueueLeavesNoLease(t *testing.T) {
	t.Parallel()
	for _, tc := range lostFetchClients {
		t.Run(tc.name, func(t *testing.T) {
			c := newCutter(t)
			const jobs = 12
			want := c.enqueueN("limited", jobs)
			cut := c.cutScript(scripts.FetchLimited, 1)
			rec := &recorder{}
			o := tc.opts(c)
			// Leases live a minute: a lease the node does not know of would hold a slot that long.
			o.Queues = []Queue{{Name: "limited", Concurrency: 5, GlobalLimit: 3}}
			o.Workers = map[string]Worker{"W": rec}
			o.DisableScheduler = true
			o.HeartbeatInterval = 15 * time.Second
			c.start(o)
			waitCut(t, cut)
			testutil.WaitFor(t, "every job ran", func() bool { return rec.count() >= jobs })
			ranOnce(t, rec, want)
			testutil.WaitFor(t, "no lease is left", func() bool { return c.zcard(c.keys.Leases("limited")) == 0 })
		})
	}
}

func TestQueueStatesReportPausedLimitsAndUse(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	release := make(chan struct{})
	var started atomic.Int64
	hold := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Add(1)
		<-release
		return nil
	})
	for i := 0; i < 5; i++ {
		v.push("limited", fmt.Sprintf(`{"class":"W","args":[],"queue":"limited","jid":"j%d"}`, i))
	}
	// A rate per hour: Started counts the starts within the rate's window, and a loaded run
	// once took more than a second from the starts to the read (Started 0).
	v.start(Options{Queues: []Queue{{Name: "limited", Concurrency: 10, GlobalLimit: 3, Rate: Rate{N: 50, Per: time.Hour}}},
		Workers: map[string]Worker{"W": hold}})
	defer close(release)
	testutil.WaitFor(t, "the limit is in use", func() bool { return started.Load() == 3 })
	a, _ := v.api()
	require.NoError(t, a.PauseQueue(context.Background(), "later"))

	states, err := a.QueueStates(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []QueueState{
		{Name: "later", Paused: true},
		{Name: "limited", Size: 2, GlobalLimit: 3, InUse: 3, Rate: Rate{N: 50, Per: time.Hour}, Started: 3},
	}, states)
}

func TestSubscribeResizingAQueueKeepsItsLimits(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{Queues: []Queue{{Name: "limited", Concurrency: 1, GlobalLimit: 2, Rate: Rate{N: 5, Per: time.Second}}}})
	require.NoError(t, e.Subscribe("limited", 7))
	assert.Equal(t, []Queue{{Name: "limited", Concurrency: 7, GlobalLimit: 2, Rate: Rate{N: 5, Per: time.Second}}}, e.Subscriptions())
}

func TestRateStringDropsZeroUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate Rate
		want string
	}{
		{Rate{}, ""},
		{Rate{N: 200, Per: time.Second}, "200/1s"},
		{Rate{N: 10, Per: time.Minute}, "10/1m"},
		{Rate{N: 5, Per: time.Hour}, "5/1h"},
		{Rate{N: 5, Per: 90 * time.Minute}, "5/1h30m"},
		{Rate{N: 3, Per: 1500 * time.Millisecond}, "3/1.5s"},
	} {
		assert.Equal(t, tc.want, tc.rate.String())
	}
}

func TestANodeWithOtherLimitsIsWarnedAbout(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.start(Options{Queues: []Queue{{Name: "limited", GlobalLimit: 5}}})
	for _, tc := range []struct {
		name  string
		queue Queue
		warn  bool
	}{
		{"same limits", Queue{Name: "limited", GlobalLimit: 5}, false},
		{"other limit", Queue{Name: "limited", GlobalLimit: 3}, true},
		{"no limit at all", Queue{Name: "limited"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			var mu sync.Mutex
			e := v.start(Options{Queues: []Queue{tc.queue}, Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))})
			require.NoError(t, e.Stop(context.Background()))
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.warn, strings.Contains(logs.String(), "other limits"), logs.String())
			// Put the first node's limits back for the next case.
			_, err := testStore(v.client, v.keys, "").PublishLimits(context.Background(), []store.QueueLimits{{Name: "limited", Limits: store.Limits{Global: 5}}})
			require.NoError(t, err)
		})
	}
}

func TestARestartedNodeWithAFixedIDDropsTheLeasesItsCrashLeft(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	far := float64(time.Now().Add(time.Hour).Unix())
	// What a crash of node "fixed" left: its leases, and a lease of node "fixed:2" (another
	// node whose id starts the same way), which stays.
	require.NoError(t, v.client.ZAdd(ctx, v.keys.Leases("limited"),
		redis.Z{Score: far, Member: "fixed:1"}, redis.Z{Score: far, Member: "fixed:7"}, redis.Z{Score: far, Member: "fixed:2:3"}).Err())
	v.start(Options{NodeID: "fixed", Queues: []Queue{{Name: "limited", GlobalLimit: 3}}})
	members, err := v.client.ZRange(ctx, v.keys.Leases("limited"), 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"fixed:2:3"}, members)
}

func TestQueueLatenciesAreTheAgeOfEachOldestJob(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	old := time.Now().Add(-90 * time.Second)
	v.push("slow", fmt.Sprintf(`{"class":"W","args":[],"queue":"slow","jid":"a","enqueued_at":%d.0}`, old.Unix()))
	v.push("slow", fmt.Sprintf(`{"class":"W","args":[],"queue":"slow","jid":"b","enqueued_at":%d.0}`, time.Now().Unix()))
	require.NoError(t, v.client.SAdd(context.Background(), v.keys.Queues(), "slow", "empty").Err())
	a, _ := v.api()
	got, err := a.QueueLatencies(context.Background())
	require.NoError(t, err)
	assert.InDelta(t, 90*time.Second, got["slow"], float64(3*time.Second), "the oldest job's age")
	assert.Zero(t, got["empty"])
}

// A node counts as waiting for a GlobalLimit's slot for twice its poll interval and round trip,
// and never less than minPatience: a short pause of the node or of Redis must not drop it from
// the waiters, or a node whose fetch arrives first after the pause takes more than its share.
func TestAWaitingNodesPatienceOutlastsAShortPause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		poll, rtt time.Duration
		want      time.Duration
	}{
		{"a fast poll on a fast link waits the least patience", 20 * time.Millisecond, time.Millisecond, minPatience},
		{"a slow link doubles poll and round trip", 100 * time.Millisecond, 300 * time.Millisecond, 800 * time.Millisecond},
		{"a slow poll doubles it", time.Second, 0, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &manager{managerParts: managerParts{pollTimeout: tc.poll}, rtt: tc.rtt}
			assert.Equal(t, tc.want, m.patience())
		})
	}
	assert.GreaterOrEqual(t, minPatience, 500*time.Millisecond, "longer than a GC pause or a short Redis stall")
}
