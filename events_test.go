package exq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// eventLog is a Listener that keeps every event.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) listen(ev Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

// of lists the events about job jid (or, with jid "", about no job), in order.
func (l *eventLog) of(jid string) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, ev := range l.events {
		if ev.JID == jid {
			out = append(out, ev)
		}
	}
	return out
}

func kinds(evs []Event) []EventKind {
	out := make([]EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

func TestEveryJobPathFiresItsEventsInOrder(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		work    WorkerFunc
		opts    []EnqueueOption
		want    []EventKind
		atLater bool // the last event's At is in the future
		err     bool // the last event carries the error
	}{
		{"success", func(context.Context, *Job) error { return nil }, nil, []EventKind{JobEnqueued, JobStarted, JobSucceeded}, false, false},
		{"failure with retries left", func(context.Context, *Job) error { return boom }, nil, []EventKind{JobEnqueued, JobStarted, JobRetried}, true, true},
		{"failure without retries", func(context.Context, *Job) error { return boom }, []EnqueueOption{MaxRetries(0)}, []EventKind{JobEnqueued, JobStarted, JobDied}, false, true},
		{"panic", func(context.Context, *Job) error { panic("oops") }, []EnqueueOption{MaxRetries(0)}, []EventKind{JobEnqueued, JobStarted, JobDied}, false, true},
		{"snooze", func(context.Context, *Job) error { return Snooze(time.Hour) }, nil, []EventKind{JobEnqueued, JobStarted, JobSnoozed}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			log := &eventLog{}
			e := v.start(Options{Queues: []Queue{{Name: "ev"}}, Workers: map[string]Worker{"W": tc.work}, Listeners: []Listener{log.listen}})
			jid, err := e.Enqueue(context.Background(), "ev", "W", []any{1}, tc.opts...)
			require.NoError(t, err)
			testutil.WaitFor(t, "the outcome's event", func() bool { return len(log.of(jid)) == len(tc.want) })
			evs := log.of(jid)
			assert.Equal(t, tc.want, kinds(evs))
			for _, ev := range evs {
				assert.Equal(t, "ev", ev.Queue)
				assert.Equal(t, "W", ev.Class)
				assert.Equal(t, e.NodeID(), ev.Node)
				assert.False(t, ev.Time.IsZero())
			}
			last := evs[len(evs)-1]
			assert.Positive(t, last.Duration, "the run's length")
			assert.Equal(t, tc.atLater, last.At.After(time.Now()), "At: %v", last.At)
			assert.Equal(t, tc.err, last.Err != nil, "Err: %v", last.Err)
		})
	}
}

// A retry due at once (Backoff 0) can be fetched and started on the same node before the
// failed run's JobRetried is reported: the next JobStarted waits for it, as does a job's first
// JobStarted for the JobEnqueued of the enqueue that wrote it, across many jobs at once.
func TestEventsOfAJobStayInOrderWhenItsNextRunStartsAtOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	log := &eventLog{}
	const jobs, retries = 20, 2
	e := v.start(Options{Queues: []Queue{{Name: "ev", Concurrency: jobs}}, Backoff: func(int, *Job) time.Duration { return 0 },
		Workers:   map[string]Worker{"W": WorkerFunc(func(context.Context, *Job) error { return errors.New("boom") })},
		Listeners: []Listener{log.listen}})
	want := []EventKind{JobEnqueued}
	for i := 0; i < retries; i++ {
		want = append(want, JobStarted, JobRetried)
	}
	want = append(want, JobStarted, JobDied)
	var jids []string
	for i := 0; i < jobs; i++ {
		jid, err := e.Enqueue(context.Background(), "ev", "W", []any{i}, MaxRetries(retries))
		require.NoError(t, err)
		jids = append(jids, jid)
	}
	testutil.WaitFor(t, "every job died", func() bool {
		for _, jid := range jids {
			if len(log.of(jid)) < len(want) {
				return false
			}
		}
		return true
	})
	disordered := 0
	for _, jid := range jids {
		if got := kinds(log.of(jid)); !assert.Equal(t, want, got, "events of %s", jid) {
			disordered++
		}
	}
	t.Logf("%d jobs failing %d times with no backoff: %d with their events out of order", jobs, retries+1, disordered)
}

func TestNodeEventsFollowItsLife(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	log := &eventLog{}
	started := make(chan struct{})
	hold := WorkerFunc(func(ctx context.Context, job *Job) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	o := Options{Namespace: v.ns, Redis: v.client, Logger: testLogger(), Queues: []Queue{{Name: "ev"}}, Workers: map[string]Worker{"W": hold},
		ShutdownTimeout: 50 * time.Millisecond, Listeners: []Listener{log.listen}}
	e, err := Start(context.Background(), o)
	require.NoError(t, err)
	jid, err := e.Enqueue(context.Background(), "ev", "W", nil)
	require.NoError(t, err)
	<-started
	e.Quiet()
	e.Quiet() // once only
	require.NoError(t, e.Stop(context.Background()))

	assert.Equal(t, []EventKind{NodeStarted, NodeQuiet, NodeStopping, NodeStopped}, kinds(log.of("")))
	assert.Equal(t, []EventKind{JobEnqueued, JobStarted, JobHandedBack}, kinds(log.of(jid)))
}

func TestAnUndecodableJobFiresJobDied(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	log := &eventLog{}
	v.push("ev", `{"class": nope`)
	v.start(Options{Queues: []Queue{{Name: "ev"}}, Listeners: []Listener{log.listen}})
	testutil.WaitFor(t, "the poison's event", func() bool {
		for _, ev := range log.of("") {
			if ev.Kind == JobDied {
				return ev.Queue == "ev" && ev.Err != nil
			}
		}
		return false
	})
}

func TestRescuingADeadNodesJobsFiresJobsRescued(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	log := &eventLog{}
	v.staleBackup("gone", "ev", 3)
	// "gone" publishes no window: a 1 s ForeignHeartbeatWindow, not 6 min, as a stall seen on a
	// loaded run gives every node a whole window again (TestMonitorRescuesOnlyStaleNodesAndNeverItself).
	v.start(Options{Queues: []Queue{{Name: "other"}}, HeartbeatInterval: 100 * time.Millisecond, ForeignHeartbeatWindow: time.Second,
		Listeners: []Listener{log.listen}})
	testutil.WaitFor(t, "the rescue's event", func() bool {
		for _, ev := range log.of("") {
			if ev.Kind == JobsRescued {
				return ev.Queue == "ev" && ev.Count == 3 && ev.From == "gone"
			}
		}
		return false
	})
}

func TestLosingRedisFiresRedisLostThenRedisBack(t *testing.T) {
	t.Parallel()
	c := newCutter(t)
	log := &eventLog{}
	c.start(Options{RedisURL: c.url(), RedisTimeout: 2 * time.Second, Queues: []Queue{{Name: "ev"}}, Listeners: []Listener{log.listen}})
	c.proxy.Down()
	testutil.WaitFor(t, "redis_lost", func() bool { return len(kindsOf(log, RedisLost)) == 1 })
	c.proxy.Up()
	testutil.WaitFor(t, "redis_back", func() bool { return len(kindsOf(log, RedisBack)) == 1 })
	back := kindsOf(log, RedisBack)[0]
	assert.Positive(t, back.Duration)
	assert.Error(t, kindsOf(log, RedisLost)[0].Err)
}

func kindsOf(l *eventLog, k EventKind) []Event {
	var out []Event
	for _, ev := range l.of("") {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func TestAClientReportsItsEnqueuesAndAPanickingListenerIsSkipped(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	log := &eventLog{}
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger(),
		Listeners: []Listener{func(Event) { panic("listener bug") }, log.listen}})
	require.NoError(t, err)
	defer c.Close()
	at := time.Now().Add(time.Hour)
	jid, err := c.EnqueueAt(context.Background(), "ev", "W", at, nil)
	require.NoError(t, err)
	res, err := c.EnqueueAll(context.Background(), []JobSpec{{Queue: "a", Class: "X"}, {Queue: "b", Class: "Y"}})
	require.NoError(t, err)
	evs := log.of(jid)
	require.Len(t, evs, 1)
	assert.Equal(t, JobEnqueued, evs[0].Kind)
	assert.WithinDuration(t, at, evs[0].At, time.Second)
	for i, r := range res {
		got := log.of(r.JID)
		require.Len(t, got, 1)
		assert.Equal(t, fmt.Sprint([]string{"a", "b"}[i]), got[0].Queue)
	}
	_, err = NewClient(context.Background(), ClientOptions{Redis: v.client, Listeners: []Listener{nil}})
	assert.ErrorContains(t, err, "Listeners[0]: is nil")
}

func TestEventKindsHaveNames(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "job_succeeded", JobSucceeded.String())
	assert.Equal(t, "redis_back", RedisBack.String())
	assert.Equal(t, "EventKind(99)", EventKind(99).String())
}
