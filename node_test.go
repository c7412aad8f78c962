package exq

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
)

func (v *env) hash(key string) map[string]string {
	v.t.Helper()
	h, err := v.rdb.HGetAll(context.Background(), key).Result()
	require.NoError(v.t, err)
	return h
}

func TestNodeRegistersItsHashWithInfoAndTTL(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	e := v.start(Options{
		Queues: []Queue{{Name: "default", Concurrency: 7}, {Name: "mail", Concurrency: 3}}}, testHooks{pingInterval: 20 * time.Millisecond})
	node := e.NodeID()
	testutil.WaitFor(t, "the node hash", func() bool { return v.rdb.Exists(ctx, v.keys.Node(node)).Val() == 1 })
	assert.True(t, v.rdb.SIsMember(ctx, v.keys.Processes(), node).Val())
	h := v.hash(v.keys.Node(node))
	assert.Equal(t, "0", h["busy"])
	assert.Equal(t, "false", h["quiet"])
	beat, err := strconv.ParseFloat(h["beat"], 64)
	require.NoError(t, err)
	assert.InDelta(t, float64(time.Now().Unix()), beat, 60)
	_, err = strconv.Atoi(h["rtt_us"])
	assert.NoError(t, err)
	rss, err := strconv.Atoi(h["rss"])
	require.NoError(t, err)
	assert.Greater(t, rss, 0)

	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(h["info"]), &info))
	host, _ := os.Hostname()
	assert.Equal(t, host, info["hostname"])
	assert.Equal(t, node, info["identity"])
	assert.EqualValues(t, os.Getpid(), info["pid"])
	assert.Equal(t, filepath.Base(os.Args[0]), info["tag"], "the binary's name by default")
	assert.Equal(t, []any{"exq-go"}, info["labels"])
	assert.Equal(t, []any{"default", "mail"}, info["queues"])
	assert.EqualValues(t, 10, info["concurrency"], "the real concurrency, not Exq's 0")
	assert.EqualValues(t, 0, info["busy"])
	assert.Equal(t, false, info["quiet"])
	assert.InDelta(t, float64(time.Now().Unix()), info["started_at"], 60)

	ttl := v.rdb.TTL(ctx, v.keys.Node(node)).Val()
	assert.Greater(t, ttl, 50*time.Second)
	assert.LessOrEqual(t, ttl, 60*time.Second)
}

func TestBusyJobsAreVisibleWhileTheyRunAndGoneAfter(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	release := make(chan struct{})
	rec := &recorder{fn: func(context.Context, *Job) error { <-release; return nil }}
	e := v.start(Options{Workers: map[string]Worker{"Slow": rec}}, testHooks{pingInterval: 20 * time.Millisecond, statsInterval: 20 * time.Millisecond})
	raw := `{"class":"Slow","args":["slow"],"queue":"default","jid":"busy-1","bid":"x"}`
	v.push("default", raw)
	workers := v.keys.Workers(e.NodeID())
	testutil.WaitFor(t, "the running job is listed", func() bool { return len(v.hash(workers)) == 1 })
	testutil.WaitFor(t, "the node hash says busy 1", func() bool { return v.hash(v.keys.Node(e.NodeID()))["busy"] == "1" })
	for id, val := range v.hash(workers) {
		var w struct {
			Queue   string `json:"queue"`
			Payload string `json:"payload"`
			RunAt   int64  `json:"run_at"`
			Host    string `json:"host"`
			PID     string `json:"pid"`
		}
		require.NoError(t, json.Unmarshal([]byte(val), &w), val)
		assert.Equal(t, "default", w.Queue)
		assert.Equal(t, raw, w.Payload, "the payload is the raw job, as a string")
		assert.InDelta(t, time.Now().Unix(), w.RunAt, 60)
		assert.Equal(t, e.NodeID(), w.Host)
		assert.Equal(t, id, w.PID)
	}
	ttl := v.rdb.TTL(context.Background(), workers).Val()
	assert.Greater(t, ttl, time.Duration(0), "a crashed node's busy list expires")
	close(release)
	testutil.WaitFor(t, "the busy list is empty", func() bool { return len(v.hash(workers)) == 0 })
	testutil.WaitFor(t, "the node hash says busy 0", func() bool { return v.hash(v.keys.Node(e.NodeID()))["busy"] == "0" })
}

func TestStopRemovesTheNodeFromProcessesAndHeartbeats(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	e, err := start(ctx, Options{Redis: v.rdb, Namespace: v.ns, Logger: testLogger()}, testHooks{pingInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	testutil.WaitFor(t, "registered", func() bool { return v.rdb.SIsMember(ctx, v.keys.Processes(), e.NodeID()).Val() })
	_, err = v.rdb.ZScore(ctx, v.keys.Heartbeats(), e.NodeID()).Result()
	require.NoError(t, err, "the node beat before it fetched anything")
	require.NoError(t, e.Stop(ctx))
	assert.False(t, v.rdb.SIsMember(ctx, v.keys.Processes(), e.NodeID()).Val())
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.Workers(e.NodeID())).Val())
	assert.Equal(t, redis.Nil, v.rdb.ZScore(ctx, v.keys.Heartbeats(), e.NodeID()).Err(), "a cleanly stopped node leaves nothing to rescue")
}

func TestPruneRemovesExpiredNodesAndOnlyTheirBusyLists(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	e := v.start(Options{})
	// "ghost" crashed: its hash expired, its busy list is stale. "alive" pings.
	// (The hash comes before the set member, as a pinger writes them: the node's own pinger
	// may prune at any moment.)
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Node("alive"), "info", "{}", "busy", "1").Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Workers("alive"), "b", "{}").Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Workers("ghost"), "a", "{}").Err())
	require.NoError(t, v.rdb.SAdd(ctx, v.keys.Processes(), "ghost", "alive").Err())
	_, err := e.jq.Prune(ctx, e.log)
	require.NoError(t, err)
	members := v.rdb.SMembers(ctx, v.keys.Processes()).Val()
	assert.NotContains(t, members, "ghost")
	assert.Contains(t, members, "alive")
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.Workers("ghost")).Val())
	assert.Equal(t, map[string]string{"b": "{}"}, v.hash(v.keys.Workers("alive")), "a live node's busy list is left alone")
}

func TestNodeInfoCarriesTagAndLabelsForSidekiqsBusyPage(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{Tag: "billing", Labels: []string{"eu-west", "canary"}})
	var info map[string]any
	testutil.WaitFor(t, "the node hash", func() bool {
		return json.Unmarshal([]byte(v.hash(v.keys.Node(e.NodeID()))["info"]), &info) == nil
	})
	assert.Equal(t, "billing", info["tag"])
	assert.Equal(t, []any{"exq-go", "eu-west", "canary"}, info["labels"], "exq-go first, always")
}

func TestTagAndLabelsAreValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opts   Options
		field  string
		tag    string
		labels []string
	}{
		{name: "defaults", tag: filepath.Base(os.Args[0]), labels: []string{"exq-go"}},
		{name: "given", opts: Options{Tag: "api", Labels: []string{"blue"}}, tag: "api", labels: []string{"exq-go", "blue"}},
		{name: "markup in the tag", opts: Options{Tag: "<b>api</b>"}, field: "Tag: "},
		{name: "a newline in the tag", opts: Options{Tag: "a\nb"}, field: "Tag: "},
		{name: "a blank tag", opts: Options{Tag: "  "}, field: "Tag: "},
		{name: "an empty label", opts: Options{Labels: []string{"ok", ""}}, field: "Labels[1]: "},
		{name: "a quote in a label", opts: Options{Labels: []string{`say "hi"`}}, field: "Labels[0]: "},
		{name: "a repeated label", opts: Options{Labels: []string{"a", "a"}}, field: "Labels[1]: "},
		{name: "exq-go given again", opts: Options{Labels: []string{"exq-go"}}, field: "Labels[0]: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := tc.opts.withDefaults(testHooks{})
			if tc.field != "" {
				require.ErrorIs(t, err, ErrInvalidOptions)
				assert.Contains(t, err.Error(), tc.field)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.tag, o.Tag)
			assert.Equal(t, tc.labels, o.Labels)
		})
	}
}

// nodeView reads the node hash's busy and quiet and the busy list's length in one MULTI, as a
// UI page would see them at one moment.
func (v *env) nodeView(node string) (busy string, quiet string, listed int64) {
	v.t.Helper()
	ctx := context.Background()
	var h *redis.SliceCmd
	var n *redis.IntCmd
	_, err := v.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		h = p.HMGet(ctx, v.keys.Node(node), "busy", "quiet")
		n = p.HLen(ctx, v.keys.Workers(node))
		return nil
	})
	require.NoError(v.t, err)
	busy, _ = h.Val()[0].(string)
	quiet, _ = h.Val()[1].(string)
	return busy, quiet, n.Val()
}

// withinASecond waits for cond and fails if it took more than a second (plus a margin for a
// loaded machine) after since.
func withinASecond(t *testing.T, what string, since time.Time, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, cond)
	took := time.Since(since)
	t.Logf("%s after %s", what, took.Round(time.Millisecond))
	assert.Less(t, took, 1800*time.Millisecond, "%s took longer than a second", what)
}

// The node hash's busy count and the busy list are written together, within a second of a
// change, not at the 5 s ping (set to an hour here): Sidekiq's header and process table then
// agree with its table of running jobs.
func testBusyCountAndBusyListChangeTogetherWithinASecond(t *testing.T) {
	// Timed (timed_test.go): asserts writes within a second.
	v := newEnv(t)
	started := make(chan time.Time, 4)
	release := make(chan struct{})
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started <- time.Now()
		<-release
		return nil
	})
	e := v.start(Options{Workers: map[string]Worker{"Slow": w}}, testHooks{pingInterval: time.Hour})
	node := e.NodeID()
	testutil.WaitFor(t, "the first ping", func() bool { b, _, _ := v.nodeView(node); return b == "0" })

	var mu sync.Mutex
	var disagreements []string
	watch := func() bool { // every view must agree
		b, _, n := v.nodeView(node)
		if b != strconv.FormatInt(n, 10) {
			mu.Lock()
			disagreements = append(disagreements, "busy "+b+", listed "+strconv.FormatInt(n, 10))
			mu.Unlock()
		}
		return true
	}
	v.push("default", `{"class":"Slow","args":[1],"queue":"default","jid":"b1"}`)
	v.push("default", `{"class":"Slow","args":[2],"queue":"default","jid":"b2"}`)
	at := <-started
	<-started
	withinASecond(t, "busy 2 in the hash and 2 jobs listed", at, func() bool {
		watch()
		b, _, n := v.nodeView(node)
		return b == "2" && n == 2
	})
	close(release)
	ended := time.Now()
	withinASecond(t, "busy 0 and no job listed", ended, func() bool {
		watch()
		b, _, n := v.nodeView(node)
		return b == "0" && n == 0
	})
	assert.Empty(t, disagreements, "the busy count and the busy list disagreed")
}

// Quiet(), a TSTP signal and UnsubscribeAll reach the node hash (and its info) within a second.
func testQuietReachesRedisWithinASecond(t *testing.T) {
	// Timed (timed_test.go): asserts writes within a second.
	for _, tc := range []struct {
		name  string
		quiet func(v *env, e *Exq)
	}{
		{"Quiet()", func(_ *env, e *Exq) { e.Quiet() }},
		{"a TSTP signal", func(v *env, e *Exq) { v.signal(e.NodeID(), "TSTP") }},
		{"a TERM signal", func(v *env, e *Exq) { v.signal(e.NodeID(), "TERM") }},
		{"UnsubscribeAll", func(_ *env, e *Exq) { require.NoError(t, e.UnsubscribeAll()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			e := v.start(Options{}, testHooks{pingInterval: time.Hour})
			node := e.NodeID()
			testutil.WaitFor(t, "the first ping", func() bool { _, q, _ := v.nodeView(node); return q == "false" })
			at := time.Now()
			tc.quiet(v, e)
			withinASecond(t, `quiet "true" in the hash and in its info`, at, func() bool {
				h := v.hash(v.keys.Node(node))
				var info struct {
					Quiet bool `json:"quiet"`
				}
				_ = json.Unmarshal([]byte(h["info"]), &info)
				return h["quiet"] == "true" && info.Quiet
			})
		})
	}
}

// signalsFault is a go-redis hook that, the first time a MULTI touches the node's signals
// list, runs it in Redis and then does what a broken connection does to its reply.
type signalsFault struct {
	key   string
	once  sync.Once
	fault func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error
}

func (f *signalsFault) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *signalsFault) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (f *signalsFault) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		touches := slices.ContainsFunc(cmds, func(c redis.Cmder) bool {
			return slices.Contains(c.Args(), any(f.key))
		})
		if !touches {
			return next(ctx, cmds)
		}
		err := errors.New("not faulted")
		hit := false
		f.once.Do(func() { hit = true; err = f.fault(ctx, cmds, next) })
		if !hit {
			return next(ctx, cmds)
		}
		return err
	}
}

// faultyNode starts a node whose client suffers fault on the first MULTI touching its signals
// list; jobs of class "Long" run until cancelled.
func faultyNode(t *testing.T, v *env, node string, fault func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error) (*Exq, chan string) {
	opts := *v.rdb.Options()
	c := redis.NewClient(&opts)
	t.Cleanup(func() { _ = c.Close() })
	c.AddHook(&signalsFault{key: v.keys.Signals(node), fault: fault})
	started := make(chan string, 8)
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started <- job.JID
		<-ctx.Done()
		return ctx.Err()
	})
	e := v.start(Options{Redis: c, NodeID: node,
		Workers: map[string]Worker{"Long": w}}, testHooks{pingInterval: 20 * time.Millisecond, statsInterval: 20 * time.Millisecond})
	return e, started
}

// A reply lost after Redis took the signals (the connection cut before the reply came back)
// must not lose them: they are handled before they are removed.
func TestSignalsAreNotLostWithALostReply(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	node := "lost-reply-node"
	v.signal(node, "TSTP") // waiting before the node starts, so its first read sees it
	e, _ := faultyNode(t, v, node, func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
		if err := next(ctx, cmds); err != nil {
			return err
		}
		return io.ErrUnexpectedEOF // Redis ran it; the reply is lost
	})
	testutil.WaitFor(t, "the node is quiet", func() bool { return e.mgr.quiet.Load() })
	testutil.WaitFor(t, "the signal is removed", func() bool { return len(v.list(v.keys.Signals(node))) == 0 })
}

// A replayed removal (go-redis sends a MULTI again after a broken connection) must not remove
// a signal that arrived between the two runs.
func TestSignalsAreNotLostWhenTheRemovalIsReplayed(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	node := "replay-node"
	ctx := context.Background()
	e, started := faultyNode(t, v, node, func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
		if err := next(ctx, cmds); err != nil {
			return err
		}
		// A newer signal arrives, then the client replays the MULTI.
		if err := v.rdb.LPush(ctx, v.keys.Signals(node), `CANCEL:{"jid":"j2"}`).Err(); err != nil {
			return err
		}
		return next(ctx, cmds)
	})
	v.push("default", `{"class":"Long","args":[],"queue":"default","jid":"j1","retry":5}`)
	v.push("default", `{"class":"Long","args":[],"queue":"default","jid":"j2","retry":5}`)
	<-started
	<-started
	v.signal(node, `CANCEL:{"jid":"j1"}`)
	testutil.WaitFor(t, "both jobs are cancelled and dead", func() bool { return v.zcard(v.keys.Dead()) == 2 })
	testutil.WaitFor(t, "the signals are removed", func() bool { return v.rdb.LLen(ctx, v.keys.Signals(node)).Val() == 0 })
	testutil.WaitFor(t, "both slots are free", func() bool { return e.mgr.inFlight() == 0 })
}

// The removal script takes exactly the handled signals off the right end, and nothing when the
// right end no longer holds them (a replay after newer signals came, or after they went).
func TestSignalsDoneRemovesOnlyTheHandledSignals(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	key := v.keys.Signals("n")
	done := func(sigs ...any) int64 {
		n, err := scripts.SignalsDone.Run(ctx, v.rdb, []string{key}, sigs...).Int64()
		require.NoError(t, err)
		return n
	}
	require.NoError(t, v.rdb.LPush(ctx, key, "TSTP", "CANCEL:a", "TERM").Err()) // TERM is the newest
	got := v.list(key)
	require.Equal(t, []string{"TERM", "CANCEL:a", "TSTP"}, got)
	assert.EqualValues(t, 2, done("CANCEL:a", "TSTP"))
	assert.Equal(t, []string{"TERM"}, v.list(key))
	assert.EqualValues(t, 0, done("CANCEL:a", "TSTP"), "a replay removes nothing")
	assert.Equal(t, []string{"TERM"}, v.list(key))
	assert.EqualValues(t, 1, done("TERM"))
	assert.Zero(t, v.rdb.Exists(ctx, key).Val())
	assert.EqualValues(t, 0, done("TERM"), "a replay on an empty list removes nothing")
}

// Exq writes its node's pid as a JSON string; the API reads it as well as Sidekiq's number.
func TestProcessesReadsAPIDWrittenAsAString(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	a, _ := v.api()
	for id, info := range map[string]string{
		"exq-elixir": `{"hostname":"h","identity":"exq-elixir","started_at":1796010418.2,"pid":"4242","queues":["default"],"labels":[],"tag":"","busy":0,"concurrency":0,"quiet":false}`,
		"sidekiq-rb": `{"hostname":"h","started_at":1796010418.2,"pid":13122,"tag":"","concurrency":2,"queues":["default"],"labels":[],"identity":"sidekiq-rb"}`,
	} {
		require.NoError(t, v.rdb.HSet(ctx, v.keys.Node(id), "info", info, "busy", "0", "beat", "1796010458.3", "quiet", "false").Err())
		require.NoError(t, v.rdb.SAdd(ctx, v.keys.Processes(), id).Err())
	}
	procs, err := a.Processes(ctx)
	require.NoError(t, err)
	pids, runtimes := map[string]int{}, map[string]string{}
	for _, p := range procs {
		pids[p.Identity] = p.PID
		runtimes[p.Identity] = p.Runtime
	}
	assert.Equal(t, map[string]int{"exq-elixir": 4242, "sidekiq-rb": 13122}, pids)
	assert.Equal(t, map[string]string{"exq-elixir": "Exq", "sidekiq-rb": "Sidekiq"}, runtimes)
}

// A node of this library reports itself as exq in Processes (cancel works only on those).
func TestProcessesTellsAnExqNode(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{}, testHooks{})
	a, _ := v.api()
	testutil.WaitFor(t, "the node is listed", func() bool {
		procs, err := a.Processes(context.Background())
		return err == nil && len(procs) == 1 && procs[0].Identity == e.NodeID() && procs[0].Runtime == "exq"
	})
}

// A change after a calm spell is written at once (at the next check, a tenth of the refresh
// interval), not at the next refresh.
func testAChangeAfterACalmSpellIsWrittenAtOnce(t *testing.T) {
	// Timed (timed_test.go): asserts a write within 700 ms.
	v := newEnv(t)
	e := v.start(Options{}, testHooks{pingInterval: time.Hour})
	node := e.NodeID()
	testutil.WaitFor(t, "the first ping", func() bool { _, q, _ := v.nodeView(node); return q == "false" })
	time.Sleep(1200 * time.Millisecond) // a calm spell longer than the refresh interval
	at := time.Now()
	e.Quiet()
	testutil.WaitFor(t, "quiet in the hash", func() bool { _, q, _ := v.nodeView(node); return q == "true" })
	took := time.Since(at)
	t.Logf("written after %s", took.Round(time.Millisecond))
	assert.Less(t, took, 700*time.Millisecond)
}

// However busy the node, its state is written at most once per refresh interval (1 s) between
// pings.
func TestNodeStateIsWrittenAtMostOnceASecond(t *testing.T) {
	t.Parallel() // counts its own client's writes; a starved node writes less, never more than once a second
	v := newEnv(t)
	client, counter := v.countingClient()
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		time.Sleep(time.Duration(rand.IntN(80)) * time.Millisecond)
		return nil
	})
	e := v.start(Options{Redis: client, DisableScheduler: true, DisableHeartbeat: true,
		Workers: map[string]Worker{"W": w}}, testHooks{pingInterval: time.Hour})
	testutil.WaitFor(t, "the first ping", func() bool { _, q, _ := v.nodeView(e.NodeID()); return q == "false" })
	before := counter.Count("sadd") // one per write of the node state
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		v.push("default", `{"class":"W","args":[],"queue":"default","jid":"x"}`)
		time.Sleep(10 * time.Millisecond)
	}
	writes := counter.Count("sadd") - before
	t.Logf("%d writes in %s of steady churn", writes, time.Since(start).Round(time.Millisecond))
	assert.GreaterOrEqual(t, writes, 2, "a changing state is written")
	assert.LessOrEqual(t, writes, 4, "at most once a second")
}
