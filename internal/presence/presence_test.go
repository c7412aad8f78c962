package presence

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
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

// The presence of node "n" against a real Redis, in a namespace of the test's own. Ticks are
// called directly (no timers): what a tick writes, and when it holds a change back, is decided
// by its kind, the state and the age of the last write, which the tests set.

// view is a node's subscriptions and running jobs as a test sets them.
type view struct {
	mu          sync.Mutex
	subs        []string
	busy        map[string]string
	quieted     bool
	concurrency int
}

func (v *view) Subscriptions() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.subs)
}
func (v *view) InFlight() int    { v.mu.Lock(); defer v.mu.Unlock(); return len(v.busy) }
func (v *view) Concurrency() int { v.mu.Lock(); defer v.mu.Unlock(); return v.concurrency }
func (v *view) Quieted() bool    { v.mu.Lock(); defer v.mu.Unlock(); return v.quieted }
func (v *view) BusyJobs() map[string]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]string, len(v.busy))
	for k, j := range v.busy {
		out[k] = j
	}
	return out
}

func (v *view) set(f func(v *view)) { v.mu.Lock(); defer v.mu.Unlock(); f(v) }

type env struct {
	rdb     *redis.Client
	ns      string
	keys    wire.Keys
	counter *testutil.Counter
	view    *view
	mu      sync.Mutex
	handled []string
	logs    *testutil.LogBuffer
}

func newEnv(t *testing.T) *env {
	t.Parallel()
	rdb, ns := testutil.Redis(t)
	return &env{rdb: rdb, ns: ns, keys: wire.NewKeys(ns), counter: testutil.NewCounter(), logs: &testutil.LogBuffer{},
		view: &view{subs: []string{"q"}, busy: map[string]string{}, concurrency: 5}}
}

// presence returns the presence of node n, on a client whose commands e.counter counts; edit
// changes its parts.
func (e *env) presence(t *testing.T, edit func(*Parts)) *Pinger {
	t.Helper()
	opts := *e.rdb.Options()
	client := redis.NewClient(&opts)
	t.Cleanup(func() { _ = client.Close() })
	client.AddHook(e.counter)
	p := Parts{Store: store.New(client, store.Config{Namespace: e.ns, Node: "n"}), View: e.view,
		Handle:   func(sig string) { e.mu.Lock(); e.handled = append(e.handled, sig); e.mu.Unlock() },
		Stopping: func() bool { return false }, Version: "test", Refresh: time.Second, PingEvery: 5 * time.Second,
		Now: time.Now, Log: slog.New(slog.NewTextHandler(e.logs, nil))}
	if edit != nil {
		edit(&p)
	}
	return New(p)
}

// writes is the number of node-state writes so far (one SADD of the processes set each).
func (e *env) writes() int { return e.counter.Count("sadd") }

func (e *env) hash(t *testing.T) map[string]string {
	t.Helper()
	h, err := e.rdb.HGetAll(context.Background(), e.keys.Node("n")).Result()
	require.NoError(t, err)
	return h
}

// busyLists returns the busy list under both its names (Exq and Sidekiq 6; Sidekiq 7 and 8).
func (e *env) busyLists(t *testing.T) (workers, work map[string]string) {
	t.Helper()
	ctx := context.Background()
	workers, err := e.rdb.HGetAll(ctx, e.keys.Workers("n")).Result()
	require.NoError(t, err)
	work, err = e.rdb.HGetAll(ctx, e.keys.Work("n")).Result()
	require.NoError(t, err)
	return workers, work
}

func (e *env) signal(t *testing.T, sigs ...string) {
	t.Helper()
	for _, s := range sigs {
		require.NoError(t, e.rdb.LPush(context.Background(), e.keys.Signals("n"), s).Err())
	}
}

func (e *env) handledSignals() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.handled)
}

// A ping always writes; a refresh or a change writes only a changed state (or handled signals),
// and a changed state only once the last write is a refresh interval old: otherwise the change
// stays pending for the next tick. Only pings and refreshes read the signals.
func TestATickWritesWhenItMustAndHoldsBackAChangeWithinTheRefreshInterval(t *testing.T) {
	const gap = time.Second
	for _, tc := range []struct {
		name        string
		kind        int
		change      bool
		lastWriteAt time.Duration // before now
		signal      bool
		writes      bool
		pending     bool
	}{
		{"a ping, nothing changed", tickPing, false, 0, false, true, false},
		{"a refresh, nothing changed", tickRefresh, false, 2 * gap, false, false, false},
		{"a refresh, a change after a calm spell", tickRefresh, true, 2 * gap, false, true, false},
		{"a refresh, a change right after a write", tickRefresh, true, 0, false, false, true},
		{"a change after a calm spell", tickChange, true, 2 * gap, false, true, false},
		{"a change right after a write", tickChange, true, 0, false, false, true},
		{"a refresh with a signal, nothing changed", tickRefresh, false, 0, true, true, false},
		{"a change tick leaves the signals to the refresh", tickChange, false, 2 * gap, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			p := e.presence(t, nil)
			require.NoError(t, p.tick(ctx, tickPing, gap))
			require.Equal(t, 1, e.writes())
			if tc.change {
				e.view.set(func(v *view) { v.busy["run-1"] = `{"queue":"q","payload":"{}","run_at":1}` })
			}
			if tc.signal {
				e.signal(t, "TSTP")
			}
			p.lastWrite = time.Now().Add(-tc.lastWriteAt)
			require.NoError(t, p.tick(ctx, tc.kind, gap))

			assert.Equal(t, map[bool]int{true: 2, false: 1}[tc.writes], e.writes(), "writes")
			assert.Equal(t, tc.pending, p.pending, "change pending")
			if tc.signal {
				left, err := e.rdb.LLen(ctx, e.keys.Signals("n")).Result()
				require.NoError(t, err)
				read := tc.kind != tickChange
				assert.Equal(t, read, slices.Equal(e.handledSignals(), []string{"TSTP"}), "signal handled")
				assert.Equal(t, map[bool]int64{true: 0, false: 1}[read], left, "signals left")
			}
			if tc.writes && tc.change {
				assert.Equal(t, "1", e.hash(t)["busy"])
			}
		})
	}
}

// The hash's busy count and the busy list (under both its names) are written together, from
// one snapshot; when only a job's progress changed, only that job's entry is written (no DEL).
func TestTheBusyCountAndTheBusyListAreWrittenTogether(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.presence(t, nil)
	e.view.set(func(v *view) { v.busy = map[string]string{"r1": `{"p":0}`, "r2": `{"p":0}`} })
	require.NoError(t, p.tick(ctx, tickPing, 0))
	workers, work := e.busyLists(t)
	assert.Equal(t, "2", e.hash(t)["busy"])
	assert.Equal(t, map[string]string{"r1": `{"p":0}`, "r2": `{"p":0}`}, workers)
	assert.Equal(t, workers, work)

	dels := e.counter.Count("del")
	e.view.set(func(v *view) { v.busy["r2"] = `{"p":50}` })
	require.NoError(t, p.tick(ctx, tickRefresh, 0))
	workers, work = e.busyLists(t)
	assert.Equal(t, map[string]string{"r1": `{"p":0}`, "r2": `{"p":50}`}, workers, "the progress written")
	assert.Equal(t, workers, work)
	assert.Equal(t, dels, e.counter.Count("del"), "progress alone rewrites no list")

	e.view.set(func(v *view) { delete(v.busy, "r1") })
	require.NoError(t, p.tick(ctx, tickChange, 0))
	workers, work = e.busyLists(t)
	assert.Equal(t, "1", e.hash(t)["busy"])
	assert.Equal(t, map[string]string{"r2": `{"p":50}`}, workers)
	assert.Equal(t, workers, work)
}

// What the node hash says: its info (with the subscriptions and concurrency), quiet when the
// node is quieted, has no subscriptions or is stopping; with stats disabled, the busy count is
// the number of jobs in flight and no busy list is written.
func TestTheNodeHashSaysWhatTheNodeIs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		quieted       bool
		subs          []string
		stopping      bool
		statsDisabled bool
		quiet         string
	}{
		{"running", false, []string{"a", "b"}, false, false, "false"},
		{"quieted", true, []string{"a"}, false, false, "true"},
		{"without subscriptions", false, []string{}, false, false, "true"},
		{"stopping", false, []string{"a"}, true, false, "true"},
		{"stats disabled", false, []string{"a"}, false, true, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.view.set(func(v *view) {
				v.quieted, v.subs, v.concurrency = tc.quieted, tc.subs, 7
				v.busy = map[string]string{"r1": "{}"}
			})
			p := e.presence(t, func(p *Parts) {
				p.Stopping = func() bool { return tc.stopping }
				p.StatsDisabled = tc.statsDisabled
				p.Tag, p.Labels = "tag", []string{"l1"}
			})
			require.NoError(t, p.tick(context.Background(), tickPing, 0))
			h := e.hash(t)
			assert.Equal(t, tc.quiet, h["quiet"])
			assert.Equal(t, "1", h["busy"])
			assert.Equal(t, "7", h["concurrency"])
			var info struct {
				Identity    string   `json:"identity"`
				Queues      []string `json:"queues"`
				Concurrency int      `json:"concurrency"`
				Quiet       bool     `json:"quiet"`
				Tag         string   `json:"tag"`
				Labels      []string `json:"labels"`
			}
			require.NoError(t, json.Unmarshal([]byte(h["info"]), &info), h["info"])
			assert.Equal(t, "n", info.Identity)
			assert.Equal(t, tc.subs, info.Queues)
			assert.Equal(t, 7, info.Concurrency)
			assert.Equal(t, tc.quiet == "true", info.Quiet)
			assert.Equal(t, "tag", info.Tag)
			assert.Equal(t, []string{"l1"}, info.Labels)
			workers, _ := e.busyLists(t)
			if tc.statsDisabled {
				assert.Empty(t, workers, "no busy list with stats disabled")
			} else {
				assert.Len(t, workers, 1)
			}
			member, err := e.rdb.SIsMember(context.Background(), e.keys.Processes(), "n").Result()
			require.NoError(t, err)
			assert.True(t, member)
		})
	}
}

// Signals are handled oldest first and removed once handled; a signal sent while the node
// handles the others stays for the next refresh.
func TestSignalsAreHandledOldestFirstAndOnlyHandledOnesRemoved(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.signal(t, "TSTP", "CANCEL j1")
	p := e.presence(t, func(p *Parts) {
		p.Handle = func(sig string) {
			e.mu.Lock()
			e.handled = append(e.handled, sig)
			e.mu.Unlock()
			if sig == "TSTP" {
				require.NoError(t, e.rdb.LPush(ctx, e.keys.Signals("n"), "TERM").Err())
			}
		}
	})
	require.NoError(t, p.tick(ctx, tickRefresh, 0))
	assert.Equal(t, []string{"TSTP", "CANCEL j1"}, e.handledSignals())
	left, err := e.rdb.LRange(ctx, e.keys.Signals("n"), 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"TERM"}, left, "the signal sent meanwhile")
	require.NoError(t, p.tick(ctx, tickRefresh, 0))
	assert.Equal(t, []string{"TSTP", "CANCEL j1", "TERM"}, e.handledSignals())
}

// Run pings at once: it writes the node, prunes the nodes whose hash expired (and their busy
// lists), hands OnPing the nodes left, writes a change within the refresh interval, and
// returns when its context ends. Unregister then takes the node out of the processes set.
func TestRunPingsPrunesWritesChangesAndStops(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.rdb.SAdd(ctx, e.keys.Processes(), "gone", "alive").Err())
	require.NoError(t, e.rdb.HSet(ctx, e.keys.Workers("gone"), "r", "{}").Err())
	require.NoError(t, e.rdb.HSet(ctx, e.keys.Node("alive"), "info", "{}").Err())
	var mu sync.Mutex
	var pinged [][]string
	p := e.presence(t, func(p *Parts) {
		p.Refresh, p.PingEvery = 10*time.Millisecond, time.Hour
		p.OnPing = func(_ context.Context, nodes []string) error {
			mu.Lock()
			defer mu.Unlock()
			pinged = append(pinged, slices.Sorted(slices.Values(nodes)))
			return nil
		}
	})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(rctx) }()
	defer func() { cancel(); <-done }()

	testutil.WaitFor(t, "the first ping", func() bool { mu.Lock(); defer mu.Unlock(); return len(pinged) == 1 })
	mu.Lock()
	assert.Equal(t, []string{"alive", "n"}, pinged[0], "the nodes left after the prune")
	mu.Unlock()
	members, err := e.rdb.SMembers(ctx, e.keys.Processes()).Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"alive", "n"}, members)
	assert.Zero(t, e.rdb.Exists(ctx, e.keys.Workers("gone")).Val(), "the pruned node's busy list")

	e.view.set(func(v *view) { v.busy["r1"] = "{}" })
	testutil.WaitFor(t, "the change written", func() bool { return e.hash(t)["busy"] == "1" })
	cancel()
	<-done

	require.NoError(t, p.Unregister(ctx))
	member, err := e.rdb.SIsMember(ctx, e.keys.Processes(), "n").Result()
	require.NoError(t, err)
	assert.False(t, member)
	workers, work := e.busyLists(t)
	assert.Empty(t, workers)
	assert.Empty(t, work)
	assert.NotEmpty(t, e.hash(t), "the hash is left to expire, as Sidekiq does")
}
