package store

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// flowAck is the acknowledgement of the successful run of job jid (in queue q) with its
// transition: of batch bid, or of workflow wf as job name.
func flowAck(q, jid, bid, wf, name, epoch string) AckReq {
	var it SettleItem
	if bid != "" {
		it = SettleItem{Batch: bid, Runs: [][2]string{{jid, RunSucceeded}}}
	} else {
		it = SettleItem{Workflow: wf, WorkflowJob: name, Out: RunSucceeded}
	}
	return AckReq{Queue: q, Raw: job(q, jid), Epoch: epoch, Flow: &AckFlow{Items: []SettleItem{it}, Now: flowNow}}
}

// AckMany records the transitions of the batch and workflow jobs it acknowledges, each with
// its LREM, exactly once: sent again (a lost reply), it changes nothing, fires no callback and
// releases no job a second time. A route the node had not read (its first outcome of a batch
// or workflow) is read, the transition recorded alone, and the job acknowledged after it; a
// known route records it in the acknowledgement's own call. A run of a buried incarnation
// records its transition (a transition is by job, not by run) and leaves the job in its
// backup list, as before.
func TestAckManyRecordsEachTransitionWithItsAcknowledgementOnce(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"), redis.Z{Score: 1, Member: "n1"}).Err())
	require.NoError(t, v.rdb.HSet(ctx(t), v.p("heartbeat_epochs"), "n1", "e2").Err())
	_, _, err := jq.BatchWrite(ctx(t), "b1", "create", "tok", "", "", flowNow, 0, batchFields("60"), flowJobs("q", "j1", "j2", "j3"))
	require.NoError(t, err)
	_, err = createWorkflow(t, jq, "w1", "tok")
	require.NoError(t, err)
	require.NoError(t, v.rdb.Del(ctx(t), v.p("queue:q")).Err()) // as fetched
	backup := v.p("queue:backup::n1::q")
	for _, jid := range []string{"j1", "j2", "j3", "ja", "plain"} {
		require.NoError(t, v.rdb.LPush(ctx(t), backup, job("q", jid)).Err())
	}
	steps := []struct {
		name     string
		reqs     []AckReq
		backup   []string
		pending  map[string]string
		cb, w    int // the jobs in queue:cb (callbacks) and queue:w (released)
		replies  []bool
		released int
	}{
		{"first outcomes: routes not read yet", []AckReq{flowAck("q", "j1", "b1", "", "", "e2"), flowAck("q", "ja", "", "w1", "a", "e2"),
			{Queue: "q", Raw: job("q", "plain"), Epoch: "e2"}},
			[]string{job("q", "j3"), job("q", "j2")}, map[string]string{"j2": "0", "j3": "0"}, 0, 2, []bool{true, true, false}, 2},
		{"the same call sent again", []AckReq{flowAck("q", "j1", "b1", "", "", "e2"), flowAck("q", "ja", "", "w1", "a", "e2"),
			{Queue: "q", Raw: job("q", "plain"), Epoch: "e2"}},
			[]string{job("q", "j3"), job("q", "j2")}, map[string]string{"j2": "0", "j3": "0"}, 0, 2, []bool{true, true, false}, 0},
		{"a run of a buried incarnation", []AckReq{flowAck("q", "j2", "b1", "", "", "e1")},
			[]string{job("q", "j3"), job("q", "j2")}, map[string]string{"j3": "0"}, 0, 2, []bool{true}, 0},
		{"known routes: in the acknowledgement's call", []AckReq{flowAck("q", "j3", "b1", "", "", "e2"), flowAck("q", "j2", "b1", "", "", "e2")},
			[]string{}, map[string]string{}, 1, 2, []bool{true, false}, 0},
	}
	for _, s := range steps {
		failed, err := jq.AckMany(ctx(t), s.reqs)
		require.NoError(t, err, s.name)
		assert.Nil(t, failed, s.name)
		assert.Equal(t, s.backup, v.list(backup), s.name)
		assert.Equal(t, s.pending, v.hash(v.p("batch:b1:pending")), s.name)
		assert.Len(t, v.list(v.p("queue:cb")), s.cb, s.name)
		assert.Len(t, v.list(v.p("queue:w")), s.w, s.name)
		released := 0
		for i, r := range s.reqs {
			if r.Flow == nil {
				continue
			}
			require.Len(t, r.Flow.Replies, 1, s.name)
			assert.Equal(t, s.replies[i], r.Flow.Replies[0] != nil, "%s: request %d given its item's reply", s.name, i)
			if r.Flow.Items[0].Workflow != "" && r.Flow.Replies[0] != nil {
				st, err := WorkflowSettled(r.Flow.Replies[0])
				require.NoError(t, err)
				released += st.Released
			}
		}
		assert.Equal(t, s.released, released, s.name)
	}
	last := steps[len(steps)-1].reqs[0].Flow.Replies[0]
	_, fired, err := BatchSettled(last)
	require.NoError(t, err)
	assert.Contains(t, fired, "success", "the last job's transition fires the success callback")
}

// The successes of several jobs of one workflow in one acknowledgement (workflow_succeed in
// ack_settle.lua, the graph read and written once) leave the workflow exactly as
// workflow_settle.lua leaves it, one job after the other, and reply the same for each job: two
// siblings, one of them twice, a job with its own child in the same call (run by hand: recorded
// one by one), the last jobs (the workflow finishes), and jobs already ended.
func TestAckManyRecordsSeveralSuccessesOfAWorkflowAsOneAfterTheOther(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []string // settled alone first, on both sides
		call   []string // in one AckMany on one side, one by one on the other
	}{
		{"siblings", []string{"a"}, []string{"b", "c"}},
		{"a job twice", []string{"a"}, []string{"c", "b", "c"}},
		{"a parent and its child", nil, []string{"a", "b"}},
		{"the last jobs", []string{"a", "b"}, []string{"d", "c"}},
		{"jobs already ended", []string{"a", "b", "c"}, []string{"b", "a", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			folded := newEnv(t)
			rdb, ns := testutil.Redis(t) // a second namespace (newEnv is once per test)
			alone := &env{t: t, rdb: rdb, ns: ns, keys: wire.NewKeys(ns)}
			var stores [2]*Store
			for i, v := range []*env{folded, alone} {
				stores[i] = v.store("n1")
				require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("heartbeats"), redis.Z{Score: 1, Member: "n1"}).Err())
				_, err := createWorkflow(t, stores[i], "w1", "tok")
				require.NoError(t, err)
				for _, name := range tc.before {
					_, err := stores[i].WorkflowSettle(ctx(t), "w1", name, RunSucceeded, flowNow)
					require.NoError(t, err)
				}
			}
			var reqs []AckReq
			for _, name := range tc.call {
				r := flowAck("q", "j"+name, "", "w1", name, "")
				reqs = append(reqs, r)
				require.NoError(t, folded.rdb.LPush(ctx(t), folded.p("queue:backup::n1::q"), r.Raw).Err())
			}
			// Twice: the first call is given a route the store has not read yet.
			_, err := stores[0].WorkflowSettle(ctx(t), "w1", "absent", RunSucceeded, flowNow)
			require.NoError(t, err)
			failed, err := stores[0].AckMany(ctx(t), reqs)
			require.NoError(t, err)
			assert.Nil(t, failed)
			assert.Empty(t, folded.list(folded.p("queue:backup::n1::q")))
			_, err = stores[1].WorkflowSettle(ctx(t), "w1", "absent", RunSucceeded, flowNow)
			require.NoError(t, err)
			for i, name := range tc.call {
				want, err := stores[1].WorkflowSettle(ctx(t), "w1", name, RunSucceeded, flowNow)
				require.NoError(t, err)
				got, err := WorkflowSettled(reqs[i].Flow.Replies[0])
				require.NoError(t, err)
				assert.Equal(t, want, got, "the reply for %s", name)
			}
			for _, key := range []string{"wf:w1", "wf:w1:graph", "wf:w1:jobs"} {
				assert.Equal(t, alone.hash(alone.p(key)), folded.hash(folded.p(key)), key)
			}
			for _, q := range []string{"queue:q", "queue:w"} {
				assert.Equal(t, alone.list(alone.p(q)), folded.list(folded.p(q)), q)
			}
		})
	}
}
