package exq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// expiredEvents collects the JobExpired events of a node, by jid.
type expiredEvents struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (x *expiredEvents) listen(ev Event) {
	if ev.Kind != JobExpired {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.at == nil {
		x.at = map[string]time.Time{}
	}
	x.at[ev.JID] = ev.At
}

func (x *expiredEvents) count() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.at)
}

// expiringDoc is a job as a Sidekiq Pro producer writes one with expires_in: expires_at in
// float seconds.
func expiringDoc(jid string, at time.Time) string {
	return fmt.Sprintf(`{"class":"W","args":[],"queue":"q","jid":%q,"retry":true,"expires_at":%s}`,
		jid, strconv.FormatFloat(float64(at.UnixMicro())/1e6, 'f', 6, 64))
}

// On a node whose own clock is off by up to ten minutes, a job that expired five minutes ago
// by the Redis server's clock is not run, and one that expires in five minutes is: the
// node judges by the server's clock, never its own.
func TestExpiryIsJudgedByTheRedisServersClockOnASkewedNode(t *testing.T) {
	t.Parallel()
	for _, skew := range fleetSkews {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			server := v.serverTime()
			const n = 5
			var expired, live []string
			for i := 0; i < n; i++ {
				expired = append(expired, fmt.Sprintf("expired-%d", i))
				live = append(live, fmt.Sprintf("live-%d", i))
				v.push("q", expiringDoc(expired[i], server.Add(-5*time.Minute)))
				v.push("q", expiringDoc(live[i], server.Add(5*time.Minute)))
			}
			rec := &recorder{}
			var events expiredEvents
			e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 4}}, Workers: map[string]Worker{"W": rec},
				Listeners: []Listener{events.listen}}, testHooks{now: skewedClock(skew)})
			testutil.WaitFor(t, "every job ran or expired", func() bool { return rec.count() == n && events.count() == n })
			ranOnce(t, rec, live)
			for _, jid := range expired {
				assert.Contains(t, events.at, jid, "job %s is reported expired", jid)
			}
			testutil.WaitFor(t, "the expired jobs are counted and gone", func() bool {
				got, err := e.API().ExpiredJobs(ctx)
				return err == nil && got == n && v.rdb.LLen(ctx, v.keys.Queue("q")).Val() == 0
			})
			assert.Zero(t, v.zcard(v.keys.Dead()), "dropped, not dead, without KeepExpiredJobs")
		})
	}
}

// With Options.KeepExpiredJobs an expired job goes to the dead set, saying why.
func TestAnExpiredJobIsKeptDeadWithItsReason(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	at := v.serverTime().Add(-time.Second)
	v.push("q", expiringDoc("old", at))
	rec := &recorder{}
	var events expiredEvents
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 1}}, Workers: map[string]Worker{"W": rec},
		KeepExpiredJobs: true, Listeners: []Listener{events.listen}})
	testutil.WaitFor(t, "the job is dead", func() bool { return v.zcard(v.keys.Dead()) == 1 })
	rec2, err := e.API().Find(ctx, DeadSet, "old")
	require.NoError(t, err)
	doc := decode(t, rec2.Raw)
	assert.Equal(t, ExpiredErrorClass, doc["error_class"])
	assert.Contains(t, doc["error_message"], "Expired at "+at.UTC().Format("2006-01-02T15:04:05"))
	assert.Zero(t, rec.count(), "never run")
	testutil.WaitFor(t, "the expiry is reported and counted", func() bool {
		n, err := e.API().ExpiredJobs(ctx)
		return events.count() == 1 && err == nil && n == 1
	})
	assert.WithinDuration(t, at, events.at["old"], time.Millisecond)
}

// The expiry is the job's, whenever it would run (as Sidekiq Pro): a job that failed before it
// expired is not retried after. (The node's view of the server's clock is a settable one: the
// first run moves it past the expiry before it fails.)
func TestARetryDueAfterTheJobsExpiryIsNotRun(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	clock := &fixedClock{t: v.serverTime()}
	rec := &recorder{fn: func(context.Context, *Job) error {
		clock.add(2 * time.Minute)
		return errors.New("fails")
	}}
	var events expiredEvents
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 1}}, Workers: map[string]Worker{"W": rec},
		Backoff: noBackoff, Listeners: []Listener{events.listen}}, testHooks{serverNow: clock.now})
	jid, err := e.Enqueue(ctx, "q", "W", nil, ExpiresIn(time.Minute))
	require.NoError(t, err)
	testutil.WaitFor(t, "the retry came due and expired", func() bool { return events.count() == 1 })
	assert.Equal(t, []string{jid}, rec.jids(), "ran once, before it expired")
	assert.Zero(t, v.zcard(v.keys.Retry())+v.zcard(v.keys.Dead()), "not retried, not dead")
}

// ExpiresIn writes expires_at as Sidekiq Pro does: float seconds, counted from the job's due
// time (a scheduled job's time), so a Sidekiq Pro node honours it too.
func TestExpiresInWritesSidekiqProsFieldFromTheJobsDueTime(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	e := v.start(Options{Queues: []Queue{{Name: "unused", Concurrency: 1}}})
	now := v.serverTime()
	_, err := e.Enqueue(ctx, "q", "W", nil, ExpiresIn(time.Hour))
	require.NoError(t, err)
	_, err = e.EnqueueIn(ctx, "q", "W", 2*time.Hour, nil, ExpiresIn(time.Hour))
	require.NoError(t, err)
	now2 := v.serverTime()
	jobs := v.list(v.keys.Queue("q"))
	require.Len(t, jobs, 1)
	sched := v.zset(v.keys.Schedule())
	require.Len(t, sched, 1)
	for _, tc := range []struct {
		doc  string
		from time.Duration
	}{{jobs[0], time.Hour}, {sched[0].Member.(string), 3 * time.Hour}} {
		h, err := wire.DecodeHeader(tc.doc)
		require.NoError(t, err)
		require.True(t, h.ExpiresAt.OK && !h.ExpiresAt.Int, "expires_at is float seconds: %s", tc.doc)
		// The node's view of the server's clock (internal/serverclock) is a sample plus its own
		// elapsed time: right to within the sample's round trip, which a loaded machine (or a
		// Cluster's other master) stretches to a good part of a second.
		got := h.ExpiresAt.Expiry()
		assert.True(t, !got.Before(now.Add(tc.from).Add(-time.Second)) && !got.After(now2.Add(tc.from).Add(time.Second)),
			"expires_at %s, from %s", got, now.Add(tc.from))
	}
}

// An expiry that has passed, is not after the job's time, or is past year 9999 is refused at
// enqueue, and nothing is written.
func TestExpiryOptionsRefuseBadInput(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	e := v.start(Options{Queues: []Queue{{Name: "unused", Concurrency: 1}}})
	now := v.serverTime()
	for _, tc := range []struct {
		name string
		in   time.Duration // EnqueueIn, 0: Enqueue
		opt  EnqueueOption
		want string
	}{
		{"ExpiresIn zero", 0, ExpiresIn(0), "must be positive"},
		{"ExpiresIn negative", 0, ExpiresIn(-time.Second), "must be positive"},
		{"ExpiresAt zero", 0, ExpiresAt(time.Time{}), "zero time"},
		{"ExpiresAt past", 0, ExpiresAt(now.Add(-time.Minute)), "not after now"},
		{"ExpiresAt after year 9999", 0, ExpiresAt(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)), "after year 9999"},
		{"ExpiresAt before the job's time", time.Hour, ExpiresAt(now.Add(30 * time.Minute)), "would never run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.in > 0 {
				_, err = e.EnqueueIn(ctx, "q", "W", tc.in, nil, tc.opt)
			} else {
				_, err = e.Enqueue(ctx, "q", "W", nil, tc.opt)
			}
			require.ErrorIs(t, err, ErrInvalidJob)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.Zero(t, v.rdb.LLen(ctx, v.keys.Queue("q")).Val()+v.rdb.ZCard(ctx, v.keys.Schedule()).Val(), "nothing written")
}

// An expired job of a batch counts as a success when dropped (as Sidekiq Pro's batches count
// it), as a death when kept dead (Options.KeepExpiredJobs): the batch's callbacks say so.
func TestAnExpiredBatchJobCountsAsASuccessOrWhenKeptAsADeath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		keep bool
		want []string // the callbacks that ran, sorted
	}{
		{"dropped", false, []string{"complete", "success"}},
		{"kept dead", true, []string{"complete", "death"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			var mu sync.Mutex
			var fired []string
			callbacks := WorkerFunc(func(_ context.Context, job *Job) error {
				var event string
				if err := job.Bind(&event); err != nil {
					return err
				}
				mu.Lock()
				fired = append(fired, event)
				mu.Unlock()
				return nil
			})
			// The producer runs only the callbacks: the batch's jobs wait until the worker
			// node starts, after one of them expired.
			producer := v.start(Options{Queues: []Queue{{Name: "cb", Concurrency: 1}}, Workers: map[string]Worker{"Callback": callbacks}})
			_, jids, err := producer.NewBatch(ctx, callbackSpecs(), []JobSpec{
				{Queue: "q", Class: "W", Args: []any{1}},
				{Queue: "q", Class: "W", Args: []any{2}, Options: []EnqueueOption{ExpiresIn(100 * time.Millisecond)}},
			})
			require.NoError(t, err)
			expiry := v.serverTime().Add(100 * time.Millisecond)
			testutil.WaitFor(t, "the second job expired", func() bool { return v.serverTime().After(expiry) })
			rec := &recorder{}
			v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 2}}, Workers: map[string]Worker{"W": rec}, KeepExpiredJobs: tc.keep})
			testutil.WaitFor(t, "the batch completed", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(fired) == 2
			})
			ranOnce(t, rec, jids[:1])
			mu.Lock()
			defer mu.Unlock()
			assert.ElementsMatch(t, tc.want, fired)
		})
	}
}
