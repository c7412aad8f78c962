package exq

import (
	"bytes"
	"context"
	"encoding/json"
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
)

// sidekiqFetch takes the oldest job of queue q the way Sidekiq OSS's fetch does (BRPOP: no
// backup list) and, when node is not "", lists it on node's busy list as Sidekiq 7 writes it
// ("<identity>:work", the payload double-encoded), node being registered as Sidekiq does (an
// info without exq's label). It returns the job's raw document.
func (v *env) sidekiqFetch(q, node string) string { return v.sidekiqRun(q, node, "tid-1") }

// sidekiqRun is sidekiqFetch with the run's id on the busy list (Sidekiq's thread id).
func (v *env) sidekiqRun(q, node, tid string) string {
	v.t.Helper()
	ctx := context.Background()
	res, err := v.rdb.BRPop(ctx, time.Second, v.keys.Queue(q)).Result()
	require.NoError(v.t, err)
	raw := res[1]
	if node != "" {
		info := fmt.Sprintf(`{"hostname":"h","identity":%q,"started_at":1,"pid":7,"tag":"","labels":[],"queues":[%q],"concurrency":5}`, node, q)
		// One MULTI, as Sidekiq's beat writes them.
		_, err := v.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, v.keys.Processes(), node)
			p.HSet(ctx, v.keys.Node(node), "info", info, "busy", 1, "beat", time.Now().Unix())
			return nil
		})
		require.NoError(v.t, err)
		work, err := json.Marshal(map[string]any{"queue": q, "payload": raw, "run_at": time.Now().Unix()})
		require.NoError(v.t, err)
		require.NoError(v.t, v.rdb.HSet(ctx, v.keys.Work(node), tid, string(work)).Err())
	}
	return raw
}

func jidOf(t *testing.T, raw string) string {
	var j struct{ JID string }
	require.NoError(t, json.Unmarshal([]byte(raw), &j))
	return j.JID
}

func TestBatchJobsReportsAJobRunOrRunningOnAForeignNode(t *testing.T) {
	t.Parallel()
	// A bid with '/' or beyond ASCII may be escaped in some runtimes' JSON: the audit then
	// decodes every document instead of looking for the bid first.
	for _, id := range []string{"", "lot/été-1"} {
		t.Run("bid "+id, func(t *testing.T) { auditFindsForeignRuns(t, id) })
	}
}

func auditFindsForeignRuns(t *testing.T, id string) {
	v := newEnv(t)
	ctx := context.Background()
	cl := flowClient(t, v)
	api := &API{jq: cl.enq.jq}
	bid, jids, err := cl.NewBatch(ctx, BatchOptions{ID: id}, batchSpecs(6, "W"))
	require.NoError(t, err)
	audit := func(which string) []string {
		t.Helper()
		got, err := api.BatchJobs(ctx, bid, which, 100)
		require.NoError(t, err)
		return got
	}
	assert.Empty(t, audit("unaccounted"), "every job is in its queue")
	assert.Empty(t, audit("foreign"))

	// A Sidekiq node runs the oldest job: it is foreign while it runs, unaccounted after.
	running := jidOf(t, v.sidekiqFetch("q", "sidekiq-1"))
	assert.Equal(t, []string{running}, audit("foreign"))
	assert.Empty(t, audit("unaccounted"), "a job on a busy list is accounted for")
	require.NoError(t, v.rdb.HDel(ctx, v.keys.Work("sidekiq-1"), "tid-1").Err())
	assert.Equal(t, []string{running}, audit("unaccounted"), "the foreign run ended and recorded nothing")
	assert.Empty(t, audit("foreign"))

	// An exq node's run of the next is in its backup list, then succeeds; the third fails
	// and waits in the retry set, the fourth is dead: none is unaccounted.
	raw := v.rdb.LMove(ctx, v.keys.Queue("q"), v.keys.Backup("exq-node", "q"), "RIGHT", "LEFT").Val()
	assert.Equal(t, []string{running}, audit("unaccounted"))
	_, _, err = cl.enq.jq.BatchSettle(ctx, bid, jidOf(t, raw), store.RunSucceeded, time.Now())
	require.NoError(t, err)
	require.NoError(t, v.rdb.LRem(ctx, v.keys.Backup("exq-node", "q"), 1, raw).Err())
	raw = v.rdb.RPop(ctx, v.keys.Queue("q")).Val()
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Retry(), redis.Z{Score: 1, Member: raw}).Err())
	raw = v.rdb.RPop(ctx, v.keys.Queue("q")).Val()
	require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Dead(), redis.Z{Score: 1, Member: raw}).Err())
	assert.Equal(t, []string{running}, audit("unaccounted"))

	// A fast foreign run, never seen on a busy list.
	fast := jidOf(t, v.sidekiqFetch("q", ""))
	want := []string{running, fast}
	if fast < running {
		want = []string{fast, running}
	}
	assert.Equal(t, want, audit("unaccounted"))
	assert.Len(t, jids, 6)

	_, err = api.BatchJobs(ctx, "nope", "unaccounted", 10)
	require.ErrorIs(t, err, ErrBatchNotFound)
}

func TestBatchJobsReportsNothingForJobsRunningOnExqNodes(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	// The busy list is written at the refresh (1 s); the test waits for it, not for the second.
	e := v.start(flowOptions(), testHooks{statsInterval: 20 * time.Millisecond})
	release := make(chan struct{})
	require.NoError(t, e.Register("W", WorkerFunc(func(ctx context.Context, _ *Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})))
	ctx := context.Background()
	bid, _, err := e.NewBatch(ctx, BatchOptions{}, batchSpecs(3, "W"))
	require.NoError(t, err)
	defer close(release)
	testutil.WaitFor(t, "the node runs the three jobs", func() bool {
		busy, err := e.API().BusyJobs(ctx)
		return err == nil && len(busy) == 3
	})
	for _, which := range []string{"foreign", "unaccounted"} {
		got, err := e.API().BatchJobs(ctx, bid, which, 10)
		require.NoError(t, err)
		assert.Empty(t, got, which)
	}
}

// Parallel again: it missed both runs once in 20 root runs when a ping's prune read the node
// between sidekiqRun's SADD and its HSET (one MULTI now, as Sidekiq writes them) and removed
// it, with its busy list, only after the runs were listed; the prune now checks each node
// again as it removes it (scripts/prune.lua).
func TestANodeReportsJobsOfBatchesAndWorkflowsRunningOnASidekiqNodeOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var mu sync.Mutex
	var logs bytes.Buffer
	reported := map[string]int{}
	o := Options{Queues: []Queue{{Name: "mine", Concurrency: 1}}, // q and q2 are the Sidekiq node's
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil)),
		Listeners: []Listener{func(ev Event) {
			if ev.Kind == ForeignRun {
				mu.Lock()
				reported[ev.JID+" "+ev.Flow+" "+ev.From+" "+ev.Queue]++
				mu.Unlock()
			}
		}}}
	e := v.start(o, testHooks{pingInterval: 20 * time.Millisecond})
	cl := flowClient(t, v)
	bid, _, err := cl.NewBatch(ctx, BatchOptions{}, batchSpecs(3, "W"))
	require.NoError(t, err)
	w, err := cl.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "a", Queue: "q2", Class: "W"},
		{Name: "b", Queue: "q2", Class: "W", DependsOn: []string{"a"}}})
	require.NoError(t, err)
	// A job of a Sidekiq Pro batch (its "bid" is no batch of exq's) is left alone.
	v.push("q3", `{"class":"P","args":[],"queue":"q3","jid":"pro-1","bid":"pro-batch"}`)
	v.sidekiqRun("q3", "sidekiq-1", "tid-0")

	batchJob := jidOf(t, v.sidekiqRun("q", "sidekiq-1", "tid-1"))
	wfJob := jidOf(t, v.sidekiqRun("q2", "sidekiq-1", "tid-2"))
	seen := func(n int) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) >= n
	}
	testutil.WaitFor(t, "both foreign runs reported", func() bool { return seen(2) })
	// A third run, reported at a later ping: the first two were not reported again meanwhile.
	third := jidOf(t, v.sidekiqRun("q", "sidekiq-1", "tid-3"))
	testutil.WaitFor(t, "the third foreign run reported", func() bool { return seen(3) })
	require.NoError(t, e.Stop(ctx))
	mu.Lock()
	assert.Equal(t, map[string]int{batchJob + " " + bid + " sidekiq-1 q": 1, wfJob + " " + w.ID + " sidekiq-1 q2": 1,
		third + " " + bid + " sidekiq-1 q": 1}, reported)
	assert.Equal(t, 3, strings.Count(logs.String(), "runs on a node that is not exq"), logs.String())
	assert.Contains(t, logs.String(), "jid="+batchJob)
	mu.Unlock()

	// The runs end: the notes in Redis still show them.
	require.NoError(t, v.rdb.Del(ctx, v.keys.Work("sidekiq-1")).Err())
	api := &API{jq: cl.enq.jq}
	foreign, err := api.BatchJobs(ctx, bid, "foreign", 10)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{batchJob, third}, foreign)
	st, err := api.Workflow(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, "seen running on node sidekiq-1, which records nothing in a workflow", st.Jobs[0].Reason)
	assert.Empty(t, st.Jobs[1].Reason)
	ttl := v.rdb.TTL(ctx, v.keys.BatchForeign(bid)).Val()
	assert.True(t, ttl > 0 && ttl <= DefaultBatchExpiry, "the note expires with its batch: %s", ttl)
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.BatchForeign("pro-batch")).Val())
}
