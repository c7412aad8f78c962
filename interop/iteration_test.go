package interop_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// Iterable jobs shared with Sidekiq 7.3 (docs/interop.md): both keep an iterable job's state in
// the hash it-<jid> (ex, c, rt, cancelled), so either side resumes the other's interrupted
// iteration from its cursor and honours the other's cancellation. IterWalk (ruby/iterable_jobs.rb
// on the Ruby side, iterWalk here) walks items 0..n-1 with the index of the next item as its
// cursor, and counts each item it processes in the hash itest:items.

// needIterable skips the test unless the Ruby side runs Sidekiq 7.3 or later (Sidekiq 6.4, which
// CI runs, has no iterable jobs).
func (p *peer) needIterable() {
	p.t.Helper()
	p.needSidekiq(7)
	parts := strings.SplitN(sidekiqVersion, ".", 3)
	if minor, _ := strconv.Atoi(parts[1]); sidekiqMajor == 7 && minor < 3 {
		p.t.Skipf("iterable jobs need Sidekiq 7.3 or later; the Ruby side runs Sidekiq %s", sidekiqVersion)
	}
}

// iterWalk is the Go side of IterWalk: each item counted in itest:items, pace apart, and its
// hooks logged in itest:hooks as "<hook> <jid> <cursor>".
func (p *peer) iterWalk(pace, saveEvery time.Duration) exq.Iteration[int, int] {
	hook := func(name string) func(context.Context, *exq.Job, int, int) {
		return func(ctx context.Context, job *exq.Job, _ int, cursor int) {
			p.rdb.RPush(context.WithoutCancel(ctx), "itest:hooks", name+" "+job.JID+" "+strconv.Itoa(cursor))
		}
	}
	return exq.Iteration[int, int]{
		SaveEvery: saveEvery,
		Each: func(ctx context.Context, job *exq.Job, n, cursor int) (int, bool, error) {
			if err := p.rdb.HIncrBy(ctx, "itest:items", strconv.Itoa(cursor), 1).Err(); err != nil {
				return cursor, false, err
			}
			time.Sleep(pace)
			return cursor + 1, cursor+1 >= n, nil
		},
		OnStart: hook("on_start"), OnResume: hook("on_resume"), OnStop: hook("on_stop"),
		OnCancel: hook("on_cancel"), OnComplete: hook("on_complete"),
	}
}

// items reads how often each item was processed.
func (p *peer) items() map[int]int {
	p.t.Helper()
	out := map[int]int{}
	for k, v := range p.rdb.HGetAll(context.Background(), "itest:items").Val() {
		i, err := strconv.Atoi(k)
		require.NoError(p.t, err)
		n, err := strconv.Atoi(v)
		require.NoError(p.t, err)
		out[i] = n
	}
	return out
}

func (p *peer) hooks() []string {
	return p.rdb.LRange(context.Background(), "itest:hooks", 0, -1).Val()
}

// sidekiqState is the state as Sidekiq's fetch_previous_iteration_state reads it (iterable.rb state).
type sidekiqState struct {
	Ex        int             `json:"ex"`
	C         json.RawMessage `json:"c"`
	Rt        float64         `json:"rt"`
	Cancelled *int64          `json:"cancelled"`
}

func (p *peer) sidekiqState(jid string) sidekiqState {
	p.t.Helper()
	var st sidekiqState
	out := p.ruby("", nil, filepath.Join(p.dir, "iterable.rb"), "state", jid)
	require.NoError(p.t, json.Unmarshal([]byte(strings.TrimSpace(out)), &st), out)
	return st
}

func (p *peer) startIterableSidekiq(pace string) *proc {
	p.t.Helper()
	record := filepath.Join(p.t.TempDir(), "performed.jsonl")
	return p.startSidekiq("QUEUE=default", "CONCURRENCY=2", "RECORD_FILE="+record, "ITERABLE_JOBS=1", "ITER_PACE="+pace)
}

func requireEachOnce(t *testing.T, items map[int]int, n int) {
	t.Helper()
	require.Len(t, items, n)
	for i := 0; i < n; i++ {
		require.Equal(t, 1, items[i], "item %d", i)
	}
}

// Sidekiq's Client#cancel! on an iteration an exq node runs stops it at its next save: OnCancel,
// the dead set as Canceled, no retry, and the state removed.
func TestSidekiqCancelStopsAnExqIteration(t *testing.T) {
	p := newPeer(t)
	p.needIterable()
	ctx := context.Background()
	e := p.startExq(exq.Options{Queues: []exq.Queue{{Name: "default", Concurrency: 2}},
		Workers: map[string]exq.Worker{"IterWalk": p.iterWalk(2*time.Millisecond, 50*time.Millisecond)}})
	const n = 100_000
	jid, err := e.Enqueue(ctx, "default", "IterWalk", []any{n})
	require.NoError(t, err)
	waitFor(t, "items", func() (bool, string) { c := len(p.items()); return c >= 20, strconv.Itoa(c) })
	flag := strings.TrimSpace(p.ruby("", nil, filepath.Join(p.dir, "iterable.rb"), "cancel", jid))
	at, err := strconv.ParseInt(flag, 10, 64)
	require.NoError(t, err, flag)
	require.InDelta(t, time.Now().Unix(), at, 60, "cancelled is Unix seconds")
	waitFor(t, "the cancelled job in the dead set", func() (bool, string) {
		d := p.zmembers(nsKey("dead"))
		return len(d) == 1, strconv.Itoa(len(d))
	})
	require.Contains(t, p.zmembers(nsKey("dead"))[0].Member, `"error_message":"Canceled"`)
	require.Less(t, len(p.items()), n)
	require.Equal(t, []string{"on_start " + jid + " 0", "on_cancel " + jid}, cutCursors(p.hooks()))
	require.Zero(t, p.rdb.Exists(ctx, "it-"+jid).Val())
	require.Zero(t, p.rdb.ZCard(ctx, nsKey("retry")).Val())
}

// cutCursors drops the cursor of the on_cancel, on_stop and on_complete lines (where the run
// stopped depends on timing).
func cutCursors(hooks []string) []string {
	out := make([]string, len(hooks))
	for i, h := range hooks {
		f := strings.Fields(h)
		if len(f) == 3 && f[0] != "on_start" && f[0] != "on_resume" {
			h = f[0] + " " + f[1]
		}
		out[i] = h
	}
	return out
}

// An exq node that stops interrupts its iteration and hands the job back with the state saved;
// Sidekiq reads that state (ex 1, c the next item, rt a float) and resumes at the cursor: every
// item processed once across both.
func TestExqInterruptedIterationResumesOnSidekiqAtItsCursor(t *testing.T) {
	p := newPeer(t)
	p.needIterable()
	ctx := context.Background()
	e := p.startExq(exq.Options{Queues: []exq.Queue{{Name: "default", Concurrency: 2}},
		Workers: map[string]exq.Worker{"IterWalk": p.iterWalk(5*time.Millisecond, time.Hour)}})
	const n = 400
	jid, err := e.Enqueue(ctx, "default", "IterWalk", []any{n})
	require.NoError(t, err)
	waitFor(t, "items", func() (bool, string) { c := len(p.items()); return c >= 50, strconv.Itoa(c) })
	stopExq(t, e)
	done := len(p.items())
	st := p.sidekiqState(jid)
	require.Equal(t, 1, st.Ex)
	require.Equal(t, strconv.Itoa(done), string(st.C), "the cursor of the next item")
	require.Greater(t, st.Rt, 0.0)
	require.Nil(t, st.Cancelled)
	require.Len(t, p.rdb.LRange(ctx, nsKey("queue:default"), 0, -1).Val(), 1, "handed back to its queue")

	sk := p.startIterableSidekiq("0.001")
	defer sk.stop()
	waitFor(t, "Sidekiq to complete the iteration", func() (bool, string) {
		h := p.hooks()
		return len(h) > 0 && strings.HasPrefix(h[len(h)-1], "on_complete"), strings.Join(h, "|")
	})
	requireEachOnce(t, p.items(), n)
	h := p.hooks()
	require.Equal(t, "on_resume "+jid+" "+strconv.Itoa(done), h[2], "Sidekiq resumed at exq's cursor: %v", h)
	require.Zero(t, p.rdb.Exists(ctx, "it-"+jid).Val(), "Sidekiq's cleanup removed the state")
}

// A Sidekiq process that stops interrupts its iteration and pushes the job again (its
// InterruptHandler); an exq node reads Sidekiq's state and resumes at its cursor.
func TestSidekiqInterruptedIterationResumesOnExqAtItsCursor(t *testing.T) {
	p := newPeer(t)
	p.needIterable()
	ctx := context.Background()
	sk := p.startIterableSidekiq("0.01")
	const n = 400
	jid := strings.TrimSpace(p.ruby("", nil, filepath.Join(p.dir, "iterable.rb"), "push", strconv.Itoa(n)))
	waitFor(t, "items", func() (bool, string) { c := len(p.items()); return c >= 50, strconv.Itoa(c) })
	sk.stop()
	done := len(p.items())
	require.Equal(t, strconv.Itoa(done), p.rdb.HGet(ctx, "it-"+jid, "c").Val(), "Sidekiq saved the cursor of the next item")
	api, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: p.url, Namespace: ns, NoNamespace: ns == ""})
	require.NoError(t, err)
	defer api.Close()
	prog, ok, err := api.IterationProgress(ctx, jid)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 1, prog.Executions)
	require.Equal(t, strconv.Itoa(done), string(prog.Cursor))
	require.Greater(t, prog.Runtime, time.Duration(0))

	p.startExq(exq.Options{Queues: []exq.Queue{{Name: "default", Concurrency: 2}},
		Workers: map[string]exq.Worker{"IterWalk": p.iterWalk(time.Millisecond, time.Hour)}})
	waitFor(t, "exq to complete the iteration", func() (bool, string) {
		h := p.hooks()
		return len(h) > 0 && strings.HasPrefix(h[len(h)-1], "on_complete"), strings.Join(h, "|")
	})
	requireEachOnce(t, p.items(), n)
	require.Contains(t, p.hooks(), "on_resume "+jid+" "+strconv.Itoa(done))
	require.Equal(t, "2", p.rdb.HGet(ctx, "it-"+jid, "ex").Val())
}

// exq's API.CancelJob of an iterable job a Sidekiq process runs sets the flag (no signal goes
// to Sidekiq); Sidekiq's job stops at its next flush and cleans its state up.
func TestExqCancelJobStopsASidekiqIterableJob(t *testing.T) {
	p := newPeer(t)
	p.needIterable()
	ctx := context.Background()
	sk := p.startIterableSidekiq("0.01")
	defer sk.stop()
	const n = 100_000
	jid := strings.TrimSpace(p.ruby("", nil, filepath.Join(p.dir, "iterable.rb"), "push", strconv.Itoa(n)))
	api, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: p.url, Namespace: ns, NoNamespace: ns == ""})
	require.NoError(t, err)
	defer api.Close()
	waitFor(t, "the job on Sidekiq's busy list", func() (bool, string) {
		b, err := api.BusyJobs(ctx)
		return err == nil && len(b) == 1, ""
	})
	node, err := api.CancelJob(ctx, jid)
	require.NoError(t, err)
	require.NotEmpty(t, node)
	waitFor(t, "Sidekiq to stop the job (its next flush, within 5 s)", func() (bool, string) {
		h := p.hooks()
		return len(h) > 0 && strings.HasPrefix(h[len(h)-1], "on_complete"), strings.Join(h, "|")
	})
	require.Less(t, len(p.items()), n)
	require.Zero(t, p.rdb.Exists(ctx, "it-"+jid).Val(), "Sidekiq 7.3 cleans a cancelled job's state up")
	signals, err := p.rdb.Keys(ctx, "*-signals").Result()
	require.NoError(t, err)
	require.Empty(t, signals, "no CANCEL signal for a Sidekiq process")
}
