package store

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
