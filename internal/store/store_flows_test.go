package store

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// Per-method tests of batches, workflows and results: creation, adds, outcomes with their
// callbacks and releases, the grouped outcomes, and the reads.

var flowNow = time.Unix(1796010415, 0)

// batchFields are a batch's hash fields with a success callback pushed to queue cb.
func batchFields(ttl string) [][2]string {
	return [][2]string{{"description", "d"}, {"ttl", ttl}, {"cb:success", job("cb", "cb-success")}, {"cbq:success", "cb"},
		{"cbjid:success", "cb-success"}, {"queues", "cb"}}
}

// noCallbacks are the fields of a batch without callbacks (flows always writes "queues").
var noCallbacks = [][2]string{{"queues", ""}}

func flowJobs(q string, jids ...string) []FlowJob {
	var out []FlowJob
	for _, jid := range jids {
		out = append(out, FlowJob{JID: jid, Queue: q, Class: "W", Doc: job(q, jid)})
	}
	return out
}

func TestBatchWriteCreatesTheDocumentedKeysAndIsIdempotentByToken(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	status, added, err := jq.BatchWrite(ctx(t), "b1", "create", "tok", "", "", flowNow, time.Hour, batchFields("60"), flowJobs("q", "j1", "j2"))
	require.NoError(t, err)
	assert.Equal(t, BatchOK, status)
	assert.Equal(t, 2, added)
	assert.Equal(t, map[string]string{"batch:b1": "hash", "batch:b1:jobs": "set", "batch:b1:pending": "hash",
		"batches": "zset", "queues": "set", "queue:q": "list"}, v.layout())
	h := v.hash(v.p("batch:b1"))
	assert.Equal(t, "tok", h["token"])
	assert.Equal(t, "2", h["fresh"])
	assert.Equal(t, "b1", h["bid"])
	assert.Equal(t, "3600", h["expiry"])
	assert.Equal(t, "cb", h["cbq:success"])
	assert.Equal(t, map[string]string{"j1": "0", "j2": "0"}, v.hash(v.p("batch:b1:pending")))
	assert.ElementsMatch(t, []string{"j1", "j2"}, v.members(v.p("batch:b1:jobs")))
	assert.Equal(t, []string{job("q", "j2"), job("q", "j1")}, v.list(v.p("queue:q")))
	for _, key := range []string{"batch:b1", "batch:b1:jobs", "batch:b1:pending"} {
		ttl := v.rdb.TTL(ctx(t), v.p(key)).Val()
		assert.Greater(t, ttl, 59*time.Minute, key)
		assert.LessOrEqual(t, ttl, time.Hour, key)
	}
	exists, err := jq.BatchExists(ctx(t), "b1")
	require.NoError(t, err)
	assert.True(t, exists)

	for _, tc := range []struct{ token, want string }{{"tok", BatchReplay}, {"other", BatchExistsReply}} {
		status, added, err := jq.BatchWrite(ctx(t), "b1", "create", tc.token, "", "", flowNow, time.Hour, nil, flowJobs("q", "j9"))
		require.NoError(t, err)
		assert.Equal(t, tc.want, status)
		assert.Zero(t, added)
	}
	assert.Len(t, v.list(v.p("queue:q")), 2, "neither wrote")
}

// A batch of many jobs writes its pending hash as a hash table from the first jid (a listpack
// of 500 jids cost ~2 µs of Redis time a jid to write and every success a scan), with no
// trace of the field that turned it; a small one stays a listpack. Both open and closed.
func TestBatchWriteKeepsTheLargePendingHashOfABatchAHashTable(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
		jobs       int
		encoding   string
		pending    int
	}{
		{"small", "create", 128, "listpack", 128},
		{"large", "create", 129, "hashtable", 129},
		{"large open", "open", 500, "hashtable", 501}, // and the open mark
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			jq := v.store("")
			jids := make([]string, tc.jobs)
			for i := range jids {
				jids[i] = "j" + strconv.Itoa(i)
			}
			_, added, err := jq.BatchWrite(ctx(t), "b1", tc.mode, "tok", "", "", flowNow, time.Hour, noCallbacks, flowJobs("q", jids...))
			require.NoError(t, err)
			assert.Equal(t, tc.jobs, added)
			enc, err := v.rdb.ObjectEncoding(ctx(t), v.p("batch:b1:pending")).Result()
			require.NoError(t, err)
			assert.Equal(t, tc.encoding, enc)
			h := v.hash(v.p("batch:b1:pending"))
			assert.Len(t, h, tc.pending)
			assert.NotContains(t, h, "batch::ht")
			ttl := v.rdb.TTL(ctx(t), v.p("batch:b1:pending")).Val()
			assert.Greater(t, ttl, 59*time.Minute)
		})
	}
}

func TestBatchWriteAddsOnlyNewJobsFromAPendingJobOfTheBatch(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, _, err := jq.BatchWrite(ctx(t), "b1", "create", "tok", "", "", flowNow, time.Hour, batchFields("60"), flowJobs("q", "j1"))
	require.NoError(t, err)

	status, added, err := jq.BatchWrite(ctx(t), "b1", "add", "j1", "", "", flowNow, time.Minute, nil, flowJobs("r", "j1", "j3"))
	require.NoError(t, err)
	assert.Equal(t, BatchOK, status)
	assert.Equal(t, 1, added, "a jid already in the batch is not written again")
	assert.Equal(t, "2", v.hash(v.p("batch:b1"))["fresh"])
	assert.Equal(t, []string{job("r", "j3")}, v.list(v.p("queue:r")))
	assert.Greater(t, v.rdb.TTL(ctx(t), v.p("batch:b1")).Val(), 59*time.Minute, "an add keeps the creation's expiry")

	for _, tc := range []struct{ bid, who, want string }{
		{"absent", "j1", BatchGone},
		{"b1", "stranger", BatchNotMember},
	} {
		status, _, err := jq.BatchWrite(ctx(t), tc.bid, "add", tc.who, "", "", flowNow, time.Hour, nil, flowJobs("q", "x"))
		require.NoError(t, err)
		assert.Equal(t, tc.want, status, "%s by %s", tc.bid, tc.who)
	}
	_, _, err = jq.BatchSettle(ctx(t), "b1", "j1", RunSucceeded, flowNow)
	require.NoError(t, err)
	status, _, err = jq.BatchWrite(ctx(t), "b1", "add", "j1", "", "", flowNow, time.Hour, nil, flowJobs("q", "x"))
	require.NoError(t, err)
	assert.Equal(t, BatchDone, status, "an adder that already succeeded (a rerun)")
	assert.Len(t, v.members(v.p("batch:b1:jobs")), 2)
}

func TestBatchWriteChecksEveryKeyBeforeWriting(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	v.garbage(v.p("queue:q"))
	_, _, err := jq.BatchWrite(ctx(t), "b1", "create", "tok", "", "", flowNow, time.Hour, nil, flowJobs("q", "j1"))
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, map[string]string{"queue:q": "string"}, v.layout())
}

func TestBatchSettleCountsOutcomesAndFiresCallbacksOnce(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, _, err := jq.BatchWrite(ctx(t), "b1", "create", "tok", "", "", flowNow, time.Hour, batchFields("120"), flowJobs("q", "j1", "j2"))
	require.NoError(t, err)

	type step struct {
		jid, out string
		changed  bool
		fired    []string
	}
	for _, s := range []step{
		{"j1", RunSucceeded, true, nil},
		{"j1", RunSucceeded, false, nil},
		{"j2", RunFailed, true, []string{"complete"}}, // every job has run once
		{"j2", RunFailed, false, nil},
		{"j2", RunDied, true, []string{"death"}},
		{"j2", RunSucceeded, true, []string{"success"}},
		{"j2", RunSucceeded, false, nil},
	} {
		changed, fired, err := jq.BatchSettle(ctx(t), "b1", s.jid, s.out, flowNow)
		require.NoError(t, err, "%s %s", s.jid, s.out)
		assert.Equal(t, s.changed, changed, "%s %s", s.jid, s.out)
		assert.Equal(t, s.fired, fired, "%s %s", s.jid, s.out)
	}
	assert.Equal(t, []string{job("cb", "cb-success")}, v.list(v.p("queue:cb")), "the success callback, once; death has none")
	st, err := jq.BatchRead(ctx(t), "b1")
	require.NoError(t, err)
	assert.Equal(t, int64(2), st.Total)
	assert.Zero(t, st.Pending)
	assert.Equal(t, int64(1), st.Dead)
	for _, f := range []string{"success_at", "complete_at", "death_at"} {
		assert.Equal(t, flowNow, SecondsField(st.Fields, f), f)
	}
	ttl := v.rdb.TTL(ctx(t), v.p("batch:b1")).Val()
	assert.LessOrEqual(t, ttl, 120*time.Second, "a succeeded batch lives its ttl")

	changed, fired, err := jq.BatchSettle(ctx(t), "absent", "j", RunSucceeded, flowNow)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Empty(t, fired)
	st, err = jq.BatchRead(ctx(t), "absent")
	require.NoError(t, err)
	assert.Empty(t, st.Fields, "no such batch")
}

func TestANestedBatchIsAMemberOfItsParentAndCarriesItsOutcomesUp(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, _, err := jq.BatchWrite(ctx(t), "p", "create", "t1", "", "", flowNow, time.Hour, batchFields("60"), flowJobs("q", "pj"))
	require.NoError(t, err)
	status, _, err := jq.BatchWrite(ctx(t), "c", "create", "t2", "p", "pj", flowNow, time.Hour, nil, flowJobs("q", "cj"))
	require.NoError(t, err)
	assert.Equal(t, BatchOK, status)
	ch := v.hash(v.p("batch:c"))
	assert.Equal(t, "p", ch["parent"])
	assert.Equal(t, "p", ch["parents"])
	assert.Equal(t, "cb", ch["queues"], "its ancestors' callback queues")
	assert.Equal(t, map[string]string{"pj": "0", "batch:c": "0"}, v.hash(v.p("batch:p:pending")))
	assert.Equal(t, "2", v.hash(v.p("batch:p"))["fresh"])

	for _, tc := range []struct{ bid, parent, adder, want string }{
		{"c2", "absent", "", BatchNoParent},
		{"c3", "p", "stranger", BatchNoParent},
	} {
		status, _, err := jq.BatchWrite(ctx(t), tc.bid, "create", "t", tc.parent, tc.adder, flowNow, time.Hour, nil, flowJobs("q", "x"))
		require.NoError(t, err)
		assert.Equal(t, tc.want, status, tc.bid)
	}

	_, fired, err := jq.BatchSettle(ctx(t), "c", "cj", RunSucceeded, flowNow)
	require.NoError(t, err)
	assert.Equal(t, []string{"complete", "success"}, fired)
	assert.Equal(t, map[string]string{"pj": "0"}, v.hash(v.p("batch:p:pending")), "the child's success is its member's in the parent")
	_, fired, err = jq.BatchSettle(ctx(t), "p", "pj", RunSucceeded, flowNow)
	require.NoError(t, err)
	assert.Equal(t, []string{"complete", "success"}, fired)
	assert.Equal(t, []string{job("cb", "cb-success")}, v.list(v.p("queue:cb")))

	status, _, err = jq.BatchWrite(ctx(t), "c4", "create", "t", "p", "pj", flowNow, time.Hour, nil, flowJobs("q", "x"))
	require.NoError(t, err)
	assert.Equal(t, BatchDone, status, "a rerun of a parent's job whose success the parent counted")
	status, _, err = jq.BatchWrite(ctx(t), "c5", "create", "t", "p", "", flowNow, time.Hour, nil, flowJobs("q", "x"))
	require.NoError(t, err)
	assert.Equal(t, BatchNoParent, status, "a parent that succeeded takes no child")
}

func TestBatchListingsAndMembers(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	for i, bid := range []string{"b1", "b2", "b3"} {
		_, _, err := jq.BatchWrite(ctx(t), bid, "create", "t", "", "", flowNow.Add(time.Duration(i)*time.Second), time.Hour, nil, flowJobs("q", bid+"-1"))
		require.NoError(t, err)
	}
	ids, err := jq.BatchIDs(ctx(t), 0, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"b3", "b2"}, ids, "newest first")
	// The data of b2 and b3 expires: a node's trim removes their ids, and only theirs.
	require.NoError(t, v.rdb.Del(ctx(t), v.p("batch:b3"), v.p("batch:b2")).Err())
	next, removed, err := jq.TrimIndex(ctx(t), BatchIndex, 0, 100)
	require.NoError(t, err)
	assert.Equal(t, 2, removed)
	assert.Zero(t, next, "one page covers a small index")
	ids, err = jq.BatchIDs(ctx(t), 0, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"b1"}, ids)

	var jobs []FlowJob
	for i := range 250 {
		jobs = append(jobs, flowJobs("q", "m"+strconv.Itoa(i))...)
	}
	_, _, err = jq.BatchWrite(ctx(t), "big", "create", "t", "", "", flowNow, time.Hour, noCallbacks, jobs)
	require.NoError(t, err)
	_, _, err = jq.BatchSettle(ctx(t), "big", "m0", RunDied, flowNow)
	require.NoError(t, err)
	for _, tc := range []struct {
		set   string
		limit int64
		want  int
	}{
		{"pending", 1000, 250},
		{"pending", 120, 120},
		{"jobs", 1000, 250},
		{"jobs", 3, 3},
		{"dead", 10, 1},
	} {
		m, err := jq.BatchMembers(ctx(t), "big", tc.set, tc.limit)
		require.NoError(t, err, tc.set)
		assert.Len(t, m, tc.want, "%s limit %d", tc.set, tc.limit)
	}
	m, err := jq.BatchMembers(ctx(t), "absent", "pending", 10)
	require.NoError(t, err)
	assert.Empty(t, m)
	exists, err := jq.BatchExists(ctx(t), "absent")
	require.NoError(t, err)
	assert.False(t, exists)
}

func TestSecondsFieldReadsOnlyPositiveNumbers(t *testing.T) {
	m := map[string]string{"ok": "1796010415.5", "zero": "0", "neg": "-1", "junk": "x"}
	assert.Equal(t, time.Unix(1796010415, 500000000), SecondsField(m, "ok"))
	for _, f := range []string{"zero", "neg", "junk", "missing"} {
		assert.True(t, SecondsField(m, f).IsZero(), f)
	}
}

func TestBatchSettledAndWorkflowSettledRefuseUnexpectedReplies(t *testing.T) {
	_, _, err := BatchSettled(nil)
	assert.Error(t, err)
	_, err = WorkflowSettled([]any{int64(1)})
	assert.Error(t, err)
	s, err := WorkflowSettled([]any{int64(1), int64(2), int64(3), int64(1)})
	require.NoError(t, err)
	assert.Equal(t, Settled{Changed: true, Released: 2, Canceled: 3, Finished: true}, s)
}

// workflow a → b, a → c, b → d: a is pushed now, the others wait.
func createWorkflow(t *testing.T, jq *Store, id, token string) (string, error) {
	graph := [][2]string{
		{"q:a", "q"}, {"j:a", "ja"}, {"c:a", "b\nc"}, {"s:a", "queued"},
		{"q:b", "w"}, {"j:b", "jb"}, {"c:b", "d"}, {"s:b", "waiting"}, {"w:b", "1"}, {"p:b", "a"},
		{"q:c", "w"}, {"j:c", "jc"}, {"s:c", "waiting"}, {"w:c", "1"}, {"p:c", "a"},
		{"q:d", "w"}, {"j:d", "jd"}, {"s:d", "waiting"}, {"w:d", "1"}, {"p:d", "b"},
	}
	meta := [][2]string{{"description", "wf"}, {"total", "4"}, {"ttl", "60"}, {"queues", "w"}}
	waiting := [][2]string{{"b", job("w", "jb")}, {"c", job("w", "jc")}, {"d", job("w", "jd")}}
	return jq.WorkflowCreate(ctx(t), id, token, flowNow, time.Hour, meta, graph, waiting, flowJobs("q", "ja"))
}

func TestWorkflowCreateWritesTheGraphAndPushesTheRoots(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	status, err := createWorkflow(t, jq, "w1", "tok")
	require.NoError(t, err)
	assert.Equal(t, BatchOK, status)
	assert.Equal(t, map[string]string{"wf:w1": "hash", "wf:w1:graph": "hash", "wf:w1:jobs": "hash", "workflows": "zset",
		"queues": "set", "queue:q": "list"}, v.layout())
	assert.Equal(t, []string{job("q", "ja")}, v.list(v.p("queue:q")))
	assert.Len(t, v.hash(v.p("wf:w1:jobs")), 3)
	meta, err := jq.WorkflowMeta(ctx(t), "w1")
	require.NoError(t, err)
	assert.Equal(t, "tok", meta["token"])
	assert.Equal(t, "4", meta["total"])

	for _, tc := range []struct{ token, want string }{{"tok", BatchReplay}, {"other", BatchExistsReply}} {
		status, err := createWorkflow(t, jq, "w1", tc.token)
		require.NoError(t, err)
		assert.Equal(t, tc.want, status)
	}
	assert.Len(t, v.list(v.p("queue:q")), 1)

	v.garbage(v.p("wf:w2:graph"))
	_, err = createWorkflow(t, jq, "w2", "tok")
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.NotContains(t, v.layout(), "wf:w2")
}

func TestWorkflowSettleReleasesAndCancelsDependents(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, err := createWorkflow(t, jq, "w1", "tok")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, out string
		want      Settled
	}{
		{"a", RunSucceeded, Settled{Changed: true, Released: 2}},
		{"a", RunSucceeded, Settled{}},
		{"b", RunDied, Settled{Changed: true, Canceled: 1}},
		{"c", RunSucceeded, Settled{Changed: true, Finished: true}},
	} {
		got, err := jq.WorkflowSettle(ctx(t), "w1", tc.name, tc.out, flowNow)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, "%s %s", tc.name, tc.out)
	}
	assert.ElementsMatch(t, []string{job("w", "jb"), job("w", "jc")}, v.list(v.p("queue:w")))
	meta, graph, err := jq.WorkflowRead(ctx(t), "w1")
	require.NoError(t, err)
	assert.Equal(t, "canceled", graph["s:d"])
	assert.Equal(t, "b dead", graph["why:d"])
	assert.Equal(t, "2", meta["succeeded"])
	assert.Equal(t, "1", meta["dead"])
	assert.Equal(t, "1", meta["canceled"])
	assert.Equal(t, flowNow, SecondsField(meta, "finished_at"))
	assert.Empty(t, v.hash(v.p("wf:w1:jobs")))

	got, err := jq.WorkflowSettle(ctx(t), "absent", "a", RunSucceeded, flowNow)
	require.NoError(t, err)
	assert.Equal(t, Settled{}, got)
	meta, graph, err = jq.WorkflowRead(ctx(t), "absent")
	require.NoError(t, err)
	assert.Empty(t, meta)
	assert.Empty(t, graph)
}

func TestWorkflowListings(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	for _, id := range []string{"w1", "w2"} {
		_, err := createWorkflow(t, jq, id, "tok")
		require.NoError(t, err)
	}
	ids, err := jq.WorkflowIDs(ctx(t), 0, 10)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"w1", "w2"}, ids)
	require.NoError(t, v.rdb.Del(ctx(t), v.p("wf:w1")).Err())
	_, removed, err := jq.TrimIndex(ctx(t), WorkflowIndex, 0, 100)
	require.NoError(t, err)
	assert.Equal(t, 1, removed)
	ids, err = jq.WorkflowIDs(ctx(t), 0, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"w2"}, ids)
}

// queuedSettles is how many outcomes wait for the next grouped write.
func queuedSettles(jq *Store) int {
	jq.settles.mu.Lock()
	defer jq.settles.mu.Unlock()
	return len(jq.settles.queued)
}

func TestSettleGroupsConcurrentOutcomesOfBatchesAndWorkflows(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, _, err := jq.BatchWrite(ctx(t), "b1", "create", "t", "", "", flowNow, time.Hour, batchFields("60"), flowJobs("q", "j1", "j2", "j3"))
	require.NoError(t, err)
	_, _, err = jq.BatchWrite(ctx(t), "b2", "create", "t", "", "", flowNow, time.Hour, noCallbacks, flowJobs("q", "k1"))
	require.NoError(t, err)
	_, err = createWorkflow(t, jq, "w1", "tok")
	require.NoError(t, err)
	// b1's route is cached by a first outcome; b2's and w1's are not (their first try is stale).
	_, _, err = jq.BatchSettle(ctx(t), "b1", "j3", RunFailed, flowNow)
	require.NoError(t, err)

	now := func() time.Time { return flowNow }
	items := []SettleItem{
		{Batch: "b1", Runs: [][2]string{{"j1", RunSucceeded}}},
		{Batch: "b1", Runs: [][2]string{{"j2", RunSucceeded}}},
		{Workflow: "w1", WorkflowJob: "a", Out: RunSucceeded},
		{Batch: "b2", Runs: [][2]string{{"k1", RunSucceeded}}},
	}
	jq.settles.busy = true // an outcome write in flight: these queue
	type res struct {
		i     int
		reply []any
		err   error
	}
	results := make(chan res, len(items))
	for i, it := range items {
		go func() {
			r, err := jq.Settle(it, now, 10*time.Second)
			results <- res{i, r, err}
		}()
		testutil.WaitFor(t, "the outcome is queued", func() bool { return queuedSettles(jq) == i+1 })
	}
	jq.settles.handOn()
	replies := make([][]any, len(items))
	for range items {
		r := <-results
		require.NoError(t, r.err, "item %d", r.i)
		replies[r.i] = r.reply
	}
	assert.Nil(t, replies[1], "the outcomes of one batch share a reply, given to the first")
	changed, fired, err := BatchSettled(replies[0])
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, []string{"complete"}, fired, "j1 and j2 together: every job of b1 has run")
	s, err := WorkflowSettled(replies[2])
	require.NoError(t, err)
	assert.Equal(t, Settled{Changed: true, Released: 2}, s)
	_, fired, err = BatchSettled(replies[3])
	require.NoError(t, err)
	assert.Equal(t, []string{"complete", "success"}, fired)

	assert.Equal(t, map[string]string{"j3": "1"}, v.hash(v.p("batch:b1:pending")))
	assert.ElementsMatch(t, []string{job("w", "jb"), job("w", "jc")}, v.list(v.p("queue:w")))
	jq.settles.mu.Lock()
	assert.False(t, jq.settles.busy, "no write in flight once all returned")
	jq.settles.mu.Unlock()

	// A lone outcome writes at once with its own script.
	r, err := jq.Settle(SettleItem{Batch: "b1", Runs: [][2]string{{"j3", RunSucceeded}}}, now, 10*time.Second)
	require.NoError(t, err)
	_, fired, err = BatchSettled(r)
	require.NoError(t, err)
	assert.Equal(t, []string{"success"}, fired)
}

func TestSettleManyFailsEveryOutcomeOfAFailedCall(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, _, err := jq.BatchWrite(ctx(t), "b1", "create", "t", "", "", flowNow, time.Hour, batchFields("60"), flowJobs("q", "j1"))
	require.NoError(t, err)
	_, _, err = jq.BatchSettle(ctx(t), "b1", "j1", RunFailed, flowNow) // caches b1's route
	require.NoError(t, err)
	v.garbage(v.p("queue:cb"))
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err = jq.settleMany(c, []SettleItem{
		{Batch: "b1", Runs: [][2]string{{"j1", RunSucceeded}}},
		{Workflow: "absent", WorkflowJob: "a", Out: RunSucceeded},
	}, flowNow)
	assert.ErrorContains(t, err, "WRONGTYPE", "the push of b1's callback onto a string fails the whole call")
}

func TestResultsAreStoredWithATTLAndAwaited(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	_, ok, err := jq.Result(ctx(t), "j1")
	require.NoError(t, err)
	assert.False(t, ok, "none stored")

	got := make(chan []byte, 1)
	errc := make(chan error, 1)
	go func() {
		val, err := jq.WaitResult(ctx(t), "j1", time.Hour)
		got <- val
		errc <- err
	}()
	// WaitResult subscribes before it reads: once it listens, a stored result reaches it.
	testutil.WaitFor(t, "the waiter subscribed", func() bool {
		n, err := v.rdb.PubSubNumSub(ctx(t), v.p("result_ready:j1")).Result()
		return err == nil && n[v.p("result_ready:j1")] == 1
	})
	require.NoError(t, jq.SetResult(ctx(t), "j1", []byte(`{"n":1}`), time.Minute))
	require.NoError(t, <-errc)
	assert.Equal(t, `{"n":1}`, string(<-got))
	assert.Equal(t, map[string]string{"result:j1": "string"}, v.layout())
	ttl := v.rdb.PTTL(ctx(t), v.p("result:j1")).Val()
	assert.Greater(t, ttl, 50*time.Second)
	val, ok, err := jq.Result(ctx(t), "j1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, `{"n":1}`, string(val))

	require.NoError(t, jq.SetResult(ctx(t), "j0", []byte("x"), 0), "a TTL of 0 is at least 1 ms")

	// A result stored without its announcement is found by the recheck.
	require.NoError(t, v.rdb.Set(ctx(t), v.p("result:j2"), "quiet", time.Minute).Err())
	val, err = jq.WaitResult(ctx(t), "j2", 10*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, "quiet", string(val))

	c, cancel := context.WithCancelCause(context.Background())
	cancel(assert.AnError)
	_, err = jq.WaitResult(c, "never", time.Hour)
	assert.Error(t, err, "an ended context ends the wait")
}
