package periodic

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// The runner against a real Redis, in a namespace of the test's own. Evaluate takes the time
// it evaluates at, so the tests choose it (minute ticks of a far-off day): no test waits for a
// tick.

// minute is a tick of the schedule "* * * * *" the tests save.
var minute = time.Date(2031, 3, 4, 12, 0, 0, 0, time.UTC)

type env struct {
	rdb  *redis.Client
	ns   string
	keys wire.Keys
	logs *testutil.LogBuffer

	mu       sync.Mutex
	enqueued []string // jids Enqueued reported
	finished []string // "jid" or "-" (not this node's) or "unknown: …", as Finish heard
}

func newEnv(t *testing.T) *env {
	t.Parallel()
	rdb, ns := testutil.Redis(t)
	return &env{rdb: rdb, ns: ns, keys: wire.NewKeys(ns), logs: &testutil.LogBuffer{}}
}

// save stores schedule name ("* * * * *" on queue q unless spec says otherwise).
func (e *env) save(t *testing.T, name, spec string, disabled bool) {
	t.Helper()
	_, err := store.New(e.rdb, store.Config{Namespace: e.ns}).SaveCron(context.Background(),
		store.CronJob{Name: name, Class: "Tick", Queue: "q", Spec: spec, Args: []byte("[]"), Disabled: disabled}, store.CronUpsert, minute.Add(-time.Hour))
	require.NoError(t, err)
}

// runner returns node's runner on client (e.rdb when nil), with a grace of 30 s.
func (e *env) runner(node string, client *redis.Client) *Runner {
	if client == nil {
		client = e.rdb
	}
	return New(Parts{Store: store.New(client, store.Config{Namespace: e.ns, Node: node}),
		Build: func(_ context.Context, now time.Time, rec store.CronRecord, jid string) (Job, error) {
			doc := fmt.Sprintf(`{"class":%q,"args":[],"queue":%q,"jid":%q,"enqueued_at":%s}`, rec.Class, rec.Queue, jid, wire.FormatTime(now))
			return Job{JID: jid, Doc: doc, Finish: e.finish}, nil
		},
		Hold:     func(string) func() { return func() {} },
		Enqueued: func(_, _, jid string) { e.mu.Lock(); e.enqueued = append(e.enqueued, jid); e.mu.Unlock() },
		Grace:    30 * time.Second, Reload: time.Second, Timeout: 2 * time.Second, Now: time.Now,
		Log: slog.New(slog.NewTextHandler(e.logs, nil))})
}

func (e *env) finish(jid string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case err != nil:
		e.finished = append(e.finished, "unknown: "+err.Error())
	case jid == "":
		e.finished = append(e.finished, "-")
	default:
		e.finished = append(e.finished, jid)
	}
}

func (e *env) heard() (enqueued, finished []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.enqueued...), append([]string(nil), e.finished...)
}

// queued returns the jids in queue q, oldest first.
func (e *env) queued(t *testing.T) []string {
	t.Helper()
	raws, err := e.rdb.LRange(context.Background(), e.keys.Queue("q"), 0, -1).Result()
	require.NoError(t, err)
	var jids []string
	for _, raw := range raws {
		h, err := wire.DecodeHeader(raw)
		require.NoError(t, err)
		jids = append([]string{h.JID}, jids...) // pushed on the left
	}
	return jids
}

// A tick is enqueued when the runner evaluates at or after it, within the grace, once however
// often it evaluates; not before, not past the grace, not while the schedule is disabled; and
// of several missed ticks, only the latest.
func TestEvaluateEnqueuesTheLatestDueTickOnceWithinTheGrace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disabled bool
		at       []time.Time // the evaluations
		want     []time.Time // the ticks enqueued
	}{
		{"just after the tick", false, []time.Time{minute.Add(5 * time.Second)}, []time.Time{minute}},
		{"at the tick, then again", false, []time.Time{minute, minute.Add(time.Second), minute.Add(20 * time.Second)}, []time.Time{minute}},
		{"before the tick", false, []time.Time{minute.Add(-time.Second)}, nil},
		{"past the grace", false, []time.Time{minute.Add(31 * time.Second)}, nil},
		{"before the tick, then past the grace", false, []time.Time{minute.Add(-time.Second), minute.Add(31 * time.Second)}, nil},
		{"disabled", true, []time.Time{minute.Add(5 * time.Second)}, nil},
		{"ticks missed in between: only the latest", false, []time.Time{minute.Add(5 * time.Second), minute.Add(3*time.Minute + 5*time.Second)},
			[]time.Time{minute, minute.Add(3 * time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			e.save(t, "every-minute", "* * * * *", tc.disabled)
			r := e.runner("n", nil)
			r.Reload = time.Hour // Evaluate then returns the next tick, not the next reload
			require.NoError(t, r.Load(ctx))
			for _, at := range tc.at {
				next, err := r.Evaluate(ctx, at)
				require.NoError(t, err)
				assert.Equal(t, at.Truncate(time.Minute).Add(time.Minute), next, "the next tick, evaluating at %s", at)
			}
			var want []string
			for _, tick := range tc.want {
				want = append(want, TickJID("every-minute", tick))
			}
			assert.Equal(t, want, e.queued(t), "the ticks' jobs")
			enqueued, finished := e.heard()
			assert.Equal(t, want, enqueued, "Enqueued heard each once")
			assert.Equal(t, want, finished, "Finish heard each once")
			assert.Zero(t, r.Pending())
		})
	}
}

// Nodes evaluating the same tick enqueue its job once: the first claim wins, and the other
// node's hooks hear that the tick was not theirs.
func TestNodesEvaluatingTheSameTickEnqueueItOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.save(t, "every-minute", "* * * * *", false)
	a, b := e.runner("a", nil), e.runner("b", nil)
	require.NoError(t, a.Load(ctx))
	require.NoError(t, b.Load(ctx))
	_, err := a.Evaluate(ctx, minute.Add(time.Second))
	require.NoError(t, err)
	_, err = b.Evaluate(ctx, minute.Add(2*time.Second))
	require.NoError(t, err)
	jid := TickJID("every-minute", minute)
	assert.Equal(t, []string{jid}, e.queued(t))
	enqueued, finished := e.heard()
	assert.Equal(t, []string{jid}, enqueued)
	assert.Equal(t, []string{jid, "-"}, finished)
}

// A schedule exq cannot read is reported once, however often it is loaded, and never
// enqueued; the readable schedules beside it still are.
func TestAnUnreadableScheduleIsReportedOnceAndSkipped(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.save(t, "good", "* * * * *", false)
	require.NoError(t, e.rdb.HSet(ctx, e.keys.CronJob("bad"), "name", "bad", "klass", "Tick", "cron", "not a cron line",
		"message", `{"queue":"q","class":"Tick","args":[]}`).Err())
	require.NoError(t, e.rdb.SAdd(ctx, e.keys.CronJobs(), wire.CronMember("bad")).Err())
	r := e.runner("n", nil)
	require.NoError(t, r.Load(ctx))
	require.NoError(t, r.Load(ctx))
	_, err := r.Evaluate(ctx, minute.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(e.logs.String(), "periodic job cannot be read"), e.logs.String())
	assert.Contains(t, e.logs.String(), "name=bad")
	assert.Equal(t, []string{TickJID("good", minute)}, e.queued(t))
}

// A tick whose enqueue Redis did not answer stays pending and is sent again, the same job
// under the same claim, until Redis answers: its job is written once, and its hooks hear of it
// once. One still pending when the runner stops and Redis does not answer is reported as
// unknown.
func TestAPendingTickIsSentAgainUntilRedisAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		back    bool // Redis answers again before the runner stops
		queued  int
		outcome string
	}{
		{"Redis back", true, 1, "jid"},
		{"Redis still down when the runner stops", false, 0, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			e.save(t, "every-minute", "* * * * *", false)
			proxy := testutil.NewProxy(t, e.rdb.Options().Addr)
			opts := *e.rdb.Options()
			opts.Addr, opts.MaxRetries = proxy.Addr(), -1
			client := redis.NewClient(&opts)
			t.Cleanup(func() { _ = client.Close() })
			r := e.runner("n", client)
			require.NoError(t, r.Load(ctx))

			proxy.Down()
			_, err := r.Evaluate(ctx, minute.Add(time.Second))
			require.Error(t, err)
			assert.Equal(t, 1, r.Pending())
			_, err = r.Evaluate(ctx, minute.Add(2*time.Second))
			require.Error(t, err, "sent again, unanswered")
			assert.Equal(t, 1, r.Pending(), "pending once")
			_, finished := e.heard()
			assert.Empty(t, finished, "no answer yet")

			if tc.back {
				proxy.Up()
				_, err = r.Evaluate(ctx, minute.Add(3*time.Second))
				require.NoError(t, err)
			}
			r.Settle()
			assert.Zero(t, r.Pending())
			assert.Len(t, e.queued(t), tc.queued)
			_, finished = e.heard()
			require.Len(t, finished, 1, "the hooks hear once")
			if tc.outcome == "jid" {
				assert.Equal(t, TickJID("every-minute", minute), finished[0])
			} else {
				assert.Contains(t, finished[0], "whether its job was written is unknown")
			}
		})
	}
}

// Run loads the schedules, enqueues a due tick by its clock, and returns when its context ends.
func TestRunEnqueuesByItsClockAndStopsWithItsContext(t *testing.T) {
	e := newEnv(t)
	e.save(t, "every-minute", "* * * * *", false)
	r := e.runner("n", nil)
	r.Now = func() time.Time { return minute.Add(time.Second) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	testutil.WaitFor(t, "the tick's job", func() bool { return len(e.queued(t)) == 1 })
	cancel()
	select {
	case <-done:
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("Run did not return after its context ended")
	}
	assert.Equal(t, []string{TickJID("every-minute", minute)}, e.queued(t))
}
