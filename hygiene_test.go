package exq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// longLived reads docs/wire.md's table of every key ("Every key: who writes it, what removes
// it") and returns, as path.Match patterns without the namespace, the keys whose TTL column
// says "none": the keys that live for good by design, each with what bounds it.
func longLived(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("docs/wire.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "## Every key: who writes it, what removes it")
	require.True(t, ok, "docs/wire.md has the table of every key")
	table, _, _ = strings.Cut(table, "\n## ")
	var out []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `P ") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		require.Len(t, cells, 6, line) // "", key, written by, removed by, TTL, ""
		if strings.TrimSpace(cells[4]) != "none" {
			continue
		}
		for _, part := range strings.Split(cells[1], "`") {
			name, ok := strings.CutPrefix(part, "P ")
			if !ok {
				continue
			}
			name = strings.ReplaceAll(name, "\x00", "|")
			out = append(out, placeholder.ReplaceAllString(name, "*"))
		}
	}
	require.Contains(t, out, "batches", "the table was read")
	return out
}

// placeholder is a part of a key name that docs/wire.md writes as <name>.
var placeholder = regexp.MustCompile(`<[^>]*>`)

func matchesAny(patterns []string, key string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, key); ok {
			return true
		}
	}
	return false
}

// After a mixed workload (batches that succeed, have a dead job, or a job that fails and then
// dies; workflows that finish and that cancel after a death; unique, scheduled, failing, dying
// jobs; a debounced job; results, progress; a periodic job) and a clean stop, every key of the namespace is
// either one that lives for good by design (docs/wire.md's table says so, with what bounds it)
// or has a TTL.
func TestAMixedWorkloadLeavesOnlyKeysWithAnOwner(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var mu sync.Mutex
	done := map[string]bool{} // jids whose last run ended (succeeded or died)
	end := func(jid string) {
		mu.Lock()
		done[jid] = true
		mu.Unlock()
	}
	ended := func(jids ...string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, j := range jids {
			if !done[j] {
				return false
			}
		}
		return true
	}
	w := WorkerFunc(func(ctx context.Context, j *Job) error {
		var mode string
		_ = j.Bind(&mode)
		var err error
		switch mode {
		case "die":
			err = errors.New("dies")
		case "fail-once":
			if j.RetryCount == 0 {
				return errors.New("fails once")
			}
		case "fail-then-die":
			err = errors.New("fails")
		case "steps":
			_, err = Step(ctx, "s", func(context.Context) (int, error) { return 1, nil })
		case "result":
			_ = SetProgress(ctx, 0.5, "half")
			_ = SetResult(ctx, map[string]int{"n": 1})
		}
		if err == nil || j.RetryCount >= j.MaxRetries {
			end(j.JID)
		}
		return err
	})
	o := flowOptions()
	o.Queues = append(o.Queues, Queue{Name: "default"}, Queue{Name: "keyed", Keys: KeyPolicy{Sequence: true}})
	o.Workers = map[string]Worker{"W": w, "Callback": WorkerFunc(func(_ context.Context, j *Job) error { end(j.JID); return nil })}
	o.Periodic = []PeriodicJob{{Name: "tick", Spec: "@every 1s", Queue: "default", Class: "W", Args: []any{"ok"}}}
	e := v.start(o, testHooks{pingInterval: 20 * time.Millisecond, indexTrimEvery: 20 * time.Millisecond})

	var jids []string
	add := func(ids ...string) { jids = append(jids, ids...) }
	enq := func(mode string, opts ...EnqueueOption) {
		jid, err := e.Enqueue(ctx, "q", "W", []any{mode}, opts...)
		require.NoError(t, err)
		add(jid)
	}
	enq("ok")
	enq("fail-once")
	enq("die", MaxRetries(0))
	enq("result")
	enq("steps")
	enq("steps", MaxRetries(0))
	v.push("q", expiringDoc("expired", v.serverTime().Add(-time.Second)))
	enq("ok", Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute}))
	enq("ok", Unique(UniqueOpts{Until: UntilStart, For: time.Minute, Token: "start"}))
	enq("ok", Debounce("hygiene", 50*time.Millisecond, time.Second))
	jid, err := e.EnqueueIn(ctx, "q", "W", 50*time.Millisecond, []any{"ok"})
	require.NoError(t, err)
	add(jid)
	// Keyed jobs of a sequence: a retry that holds its key, a death.
	for i, mode := range []string{"ok", "fail-once", "ok", "die"} {
		jid, err := e.Enqueue(ctx, "keyed", "W", []any{mode}, Key(fmt.Sprint("k", i%2)), MaxRetries(1))
		require.NoError(t, err)
		add(jid)
	}
	jid, err = e.EnqueueIn(ctx, "keyed", "W", 50*time.Millisecond, []any{"ok"}, Key("k0"))
	require.NoError(t, err)
	add(jid)
	spec := func(mode string, opts ...EnqueueOption) JobSpec {
		return JobSpec{Queue: "q", Class: "W", Args: []any{mode}, Options: opts}
	}
	for _, jobs := range [][]JobSpec{
		{spec("ok"), spec("fail-once")},              // succeeds
		{spec("ok"), spec("die", MaxRetries(0))},     // a dead job: never succeeds
		{spec("fail-then-die", MaxRetries(1))},       // its only job fails (pending emptied), then dies
		{spec("die", MaxRetries(0)), spec("result")}, // death first
	} {
		_, ids, err := e.NewBatch(ctx, callbackSpecs(), jobs)
		require.NoError(t, err)
		add(ids...)
	}
	wfJob := func(name, mode string, opts ...EnqueueOption) WorkflowJob {
		return WorkflowJob{Name: name, Queue: "q", Class: "W", Args: []any{mode}, Options: opts}
	}
	finished, err := e.EnqueueWorkflow(ctx, WorkflowOptions{}, Chain(wfJob("a", "ok"), wfJob("b", "fail-once"), wfJob("c", "ok")))
	require.NoError(t, err)
	canceled, err := e.EnqueueWorkflow(ctx, WorkflowOptions{}, Chain(wfJob("a", "die", MaxRetries(0)), wfJob("b", "ok")))
	require.NoError(t, err)
	for _, name := range []string{"a", "b", "c"} {
		add(finished.JIDs[name])
	}
	add(canceled.JIDs["a"])

	testutil.WaitFor(t, "every job ran to its end, the callbacks ran and a periodic tick was enqueued", func() bool {
		if !ended(jids...) || v.zcard(v.keys.Retry()) != 0 || v.zcard(v.keys.Schedule()) != 0 {
			return false
		}
		for _, q := range []string{"q", "cb", "default"} {
			if len(v.list(v.keys.Queue(q))) > 0 || len(v.list(v.keys.Backup(e.NodeID(), q))) > 0 {
				return false
			}
		}
		mu.Lock()
		n := len(done)
		mu.Unlock()
		// 4 batches: success + complete, complete + death, complete + death, complete + death.
		return n >= len(jids)+8 && v.rdb.Exists(ctx, v.keys.CronHistory("tick"), v.keys.ExpiredStat()).Val() == 2
	})
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(stopCtx))

	long := longLived(t)
	keys, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, key := range keys {
		name := key[len(v.ns)+1:]
		if matchesAny(long, name) {
			continue
		}
		ttl, err := v.rdb.PTTL(ctx, key).Result()
		require.NoError(t, err)
		if ttl == -2 {
			continue // expired meanwhile
		}
		// (0 is a TTL in its last millisecond: index_trim's claim lives 20 ms here.)
		assert.GreaterOrEqual(t, ttl, time.Duration(0), "%s lives for good: it needs a TTL, or an owner that removes it and a row in docs/wire.md's table of every key", name)
		if ok, _ := path.Match("batch:*:dead", name); ok {
			kinds["batch dead set"] = true
		}
	}
	assert.True(t, kinds["batch dead set"], "the workload left batches with a dead job")
}

// The nodes trim the ids of batches and workflows whose data has expired from the listings
// (readers no longer do), and only those.
func TestNodesTrimTheListingsOfExpiredBatchesAndWorkflows(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()
	var keptB, keptW []string
	for i := range 6 {
		bid, _, err := c.NewBatch(ctx, BatchOptions{}, []JobSpec{{Queue: "parked", Class: "W"}})
		require.NoError(t, err)
		wf, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "a", Queue: "parked", Class: "W"}})
		require.NoError(t, err)
		if i%2 == 0 {
			keptB, keptW = append(keptB, bid), append(keptW, wf.ID)
			continue
		}
		// Their data expires.
		require.NoError(t, v.rdb.Del(ctx, v.keys.Batch(bid), v.keys.BatchJobs(bid), v.keys.BatchPending(bid),
			v.keys.Workflow(wf.ID), v.keys.WorkflowGraph(wf.ID)).Err())
	}
	require.Equal(t, 6, v.zcard(v.keys.Batches()), "the expired ids are listed until a node trims them")
	require.Equal(t, 6, v.zcard(v.keys.Workflows()))
	v.start(Options{Queues: []Queue{{Name: "other"}}}, testHooks{pingInterval: 20 * time.Millisecond, indexTrimEvery: 20 * time.Millisecond})
	testutil.WaitFor(t, "a node trimmed both listings", func() bool {
		return v.zcard(v.keys.Batches()) == len(keptB) && v.zcard(v.keys.Workflows()) == len(keptW)
	})
	assert.ElementsMatch(t, keptB, v.rdb.ZRange(ctx, v.keys.Batches(), 0, -1).Val())
	assert.ElementsMatch(t, keptW, v.rdb.ZRange(ctx, v.keys.Workflows(), 0, -1).Val())
}
