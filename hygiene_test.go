package exq

import (
	"context"
	"errors"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// longLived are the keys (without the namespace, path.Match patterns) that live for good by
// design, each with what bounds it, as docs/wire.md's table of keys says. Every other key exq
// writes has a TTL: a new key without an owner fails TestAMixedWorkloadLeavesOnlyKeysWithAnOwner.
var longLived = []string{
	// The queues: a list is gone once empty.
	"queues", "queue:*",
	// Jobs waiting; dead is trimmed at every add.
	"schedule", "retry", "dead",
	// All-time counters (Exq's and Sidekiq's).
	"stat:processed", "stat:failed",
	// Pruned by every node's ping.
	"processes",
	// One entry per live node: removed by a burial, a clean stop, a sweep.
	"heartbeats", "heartbeat_deadlines", "heartbeat_epochs", "heartbeat_resumed",
	// A node's: removed by a burial, a clean stop, a sweep.
	"backup_queues:*",
	// Trimmed by the nodes (IndexTrim).
	"batches", "workflows",
	// One field or member per queue or relay.
	"paused", "limits", "outbox",
	// A periodic job's, until it is deleted; the history capped at 10, the ticks trimmed to a
	// day at every claim.
	"cron_jobs", "cron_job:*", "cron_job:*:jid_history", "cron_job:*:enqueued",
}

func isLongLived(key string) bool {
	for _, p := range longLived {
		if ok, _ := path.Match(p, key); ok {
			return true
		}
	}
	return false
}

// After a mixed workload (batches that succeed, have a dead job, or a job that fails and then
// dies; workflows that finish and that cancel after a death; unique, scheduled, failing, dying
// jobs; results, progress; a periodic job) and a clean stop, every key of the namespace is
// either one that lives for good by design (longLived) or has a TTL.
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
	o.Queues = append(o.Queues, Queue{Name: "default"})
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
	enq("ok", Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute}))
	enq("ok", Unique(UniqueOpts{Until: UntilStart, For: time.Minute, Token: "start"}))
	jid, err := e.EnqueueIn(ctx, "q", "W", 50*time.Millisecond, []any{"ok"})
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
		return n >= len(jids)+8 && v.rdb.Exists(ctx, v.keys.CronHistory("tick")).Val() == 1
	})
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(stopCtx))

	keys, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, key := range keys {
		name := key[len(v.ns)+1:]
		if isLongLived(name) {
			continue
		}
		ttl, err := v.rdb.PTTL(ctx, key).Result()
		require.NoError(t, err)
		if ttl == -2 {
			continue // expired meanwhile
		}
		assert.Positive(t, ttl, "%s lives for good: it needs a TTL, or an owner that removes it (and a line in longLived and docs/wire.md)", name)
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
	cl := v.client
	o := ClientOptions{Redis: cl, Namespace: v.ns, Logger: testLogger()}
	c, err := NewClient(ctx, o)
	require.NoError(t, err)
	defer c.Close()
	var keptB, goneB, keptW, goneW []string
	for i := range 6 {
		bid, _, err := c.NewBatch(ctx, BatchOptions{}, []JobSpec{{Queue: "parked", Class: "W"}})
		require.NoError(t, err)
		wf, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "a", Queue: "parked", Class: "W"}})
		require.NoError(t, err)
		if i%2 == 0 {
			keptB, keptW = append(keptB, bid), append(keptW, wf.ID)
			continue
		}
		goneB, goneW = append(goneB, bid), append(goneW, wf.ID)
		// Their data expires.
		require.NoError(t, v.rdb.Del(ctx, v.keys.Batch(bid), v.keys.BatchJobs(bid), v.keys.BatchPending(bid),
			v.keys.Workflow(wf.ID), v.keys.WorkflowGraph(wf.ID)).Err())
	}
	v.start(Options{Queues: []Queue{{Name: "other"}}}, testHooks{pingInterval: 20 * time.Millisecond, indexTrimEvery: 20 * time.Millisecond})
	testutil.WaitFor(t, "a node trimmed both listings", func() bool {
		return v.zcard(v.keys.Batches()) == len(keptB) && v.zcard(v.keys.Workflows()) == len(keptW)
	})
	assert.ElementsMatch(t, keptB, v.rdb.ZRange(ctx, v.keys.Batches(), 0, -1).Val())
	assert.ElementsMatch(t, keptW, v.rdb.ZRange(ctx, v.keys.Workflows(), 0, -1).Val())
}
