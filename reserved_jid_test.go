package exq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// reservedJIDs are jids the batch layout uses for members that are not jobs: a child batch
// ("batch:<bid>", batch_add.lua) and an open batch's mark ("batch::open").
var reservedJIDs = []string{"batch:C1", "batch::open", "batch:", "batch:a:b"}

// TestEveryPathThatTakesAJIDIntoABatchOrWorkflowRefusesAReservedOne: a job of a batch or
// workflow whose jid is a name of the batch layout (a child batch's member, an open batch's
// mark) would stand for that member: a parent's success before its child's job ran, a closed
// batch shown open. Every entry path refuses it, naming the jid, and writes nothing.
func TestEveryPathThatTakesAJIDIntoABatchOrWorkflowRefusesAReservedOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	job := func(jid string) []JobSpec {
		return []JobSpec{{Queue: "q", Class: "Work", Options: []EnqueueOption{JID(jid)}}}
	}
	for _, p := range []struct {
		name string
		want error
		// prepare writes what the path needs first and returns the write of one job with jid
		// through the path.
		prepare func(t *testing.T, c *Client) func(jid string) error
	}{
		{"NewBatch, a job", ErrInvalidBatch, func(t *testing.T, c *Client) func(string) error {
			return func(jid string) error { _, _, err := c.NewBatch(ctx, BatchOptions{}, job(jid)); return err }
		}},
		{"NewBatch, the second job", ErrInvalidBatch, func(t *testing.T, c *Client) func(string) error {
			return func(jid string) error {
				_, _, err := c.NewBatch(ctx, BatchOptions{}, append(batchSpecs(1, "Work"), job(jid)...))
				return err
			}
		}},
		{"NewBatch, a child's job", ErrInvalidBatch, func(t *testing.T, c *Client) func(string) error {
			_, _, err := c.NewBatch(ctx, BatchOptions{ID: "P"}, batchSpecs(1, "Work"))
			require.NoError(t, err)
			return func(jid string) error { _, _, err := c.NewBatch(ctx, BatchOptions{Parent: "P"}, job(jid)); return err }
		}},
		{"NewBatch, a callback", ErrInvalidBatch, func(t *testing.T, c *Client) func(string) error {
			return func(jid string) error {
				cb := &JobSpec{Queue: "cb", Class: "Callback", Options: []EnqueueOption{JID(jid)}}
				_, _, err := c.NewBatch(ctx, BatchOptions{OnDeath: cb}, batchSpecs(1, "Work"))
				return err
			}
		}},
		{"OpenBatch, Add", ErrInvalidBatch, func(t *testing.T, c *Client) func(string) error {
			b, err := c.OpenBatch(ctx, BatchOptions{})
			require.NoError(t, err)
			return func(jid string) error { _, err := b.Add(ctx, job(jid)); return err }
		}},
		{"EnqueueWorkflow", ErrInvalidWorkflow, func(t *testing.T, c *Client) func(string) error {
			return func(jid string) error {
				_, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{{Name: "a", Queue: "q", Class: "Work"},
					{Name: "b", Queue: "q", Class: "Work", Options: []EnqueueOption{JID(jid)}, DependsOn: []string{"a"}}})
				return err
			}
		}},
	} {
		for _, jid := range reservedJIDs {
			t.Run(p.name+"/"+jid, func(t *testing.T) {
				t.Parallel()
				v := newEnv(t)
				write := p.prepare(t, flowClient(t, v))
				before := testutil.Snapshot(t, v.rdb, v.ns)
				err := write(jid)
				require.ErrorIs(t, err, p.want)
				assert.Contains(t, err.Error(), `jid "`+jid+`" is reserved`)
				assert.Equal(t, before, testutil.Snapshot(t, v.rdb, v.ns), "Redis unchanged")
			})
		}
	}
}

// TestAddToBatchFromARunningJobRefusesAReservedJID: the path from inside a running job of the
// batch refuses a reserved jid too, and adds nothing.
func TestAddToBatchFromARunningJobRefusesAReservedJID(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(flowOptions())
	errs := make(chan error, len(reservedJIDs))
	require.NoError(t, e.Register("Adder", WorkerFunc(func(ctx context.Context, job *Job) error {
		for _, jid := range reservedJIDs {
			_, err := AddToBatch(ctx, []JobSpec{{Queue: "q", Class: "Work", Options: []EnqueueOption{JID(jid)}}})
			errs <- err
		}
		return nil
	})))
	ctx := context.Background()
	bid, _, err := e.NewBatch(ctx, BatchOptions{}, batchSpecs(1, "Adder"))
	require.NoError(t, err)
	for _, jid := range reservedJIDs {
		err := <-errs
		require.ErrorIs(t, err, ErrInvalidBatch, jid)
		assert.Contains(t, err.Error(), `jid "`+jid+`" is reserved`)
	}
	testutil.WaitFor(t, "the batch succeeded", func() bool {
		st, err := e.API().Batch(ctx, bid)
		return err == nil && !st.SucceededAt.IsZero()
	})
	st, err := e.API().Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Total, "nothing added")
	assert.Zero(t, v.rdb.LLen(ctx, v.keys.Queue("q")).Val())
}

// TestAReservedJIDIsAcceptedOutsideBatchesAndWorkflows: a plain job is in no batch, so its jid
// names nothing of the batch layout: Enqueue keeps accepting any jid, as Sidekiq and Exq do.
func TestAReservedJIDIsAcceptedOutsideBatchesAndWorkflows(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	jid, err := flowClient(t, v).Enqueue(context.Background(), "q", "Work", nil, JID("batch:C1"))
	require.NoError(t, err)
	assert.Equal(t, "batch:C1", jid)
}

// TestEnqueueWorkflowRefusesTwoJobsWithOneJID: two jobs of a workflow given the same jid would
// share a result and a foreign mark; it is refused, naming both, and nothing is written.
func TestEnqueueWorkflowRefusesTwoJobsWithOneJID(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	_, err := flowClient(t, v).EnqueueWorkflow(context.Background(), WorkflowOptions{}, []WorkflowJob{
		{Name: "a", Queue: "q", Class: "Work", Options: []EnqueueOption{JID("same")}},
		{Name: "b", Queue: "q", Class: "Work", Options: []EnqueueOption{JID("same")}, DependsOn: []string{"a"}}})
	require.ErrorIs(t, err, ErrInvalidWorkflow)
	assert.Contains(t, err.Error(), `jobs "a" and "b" have the same jid "same"`)
	assert.Empty(t, testutil.Snapshot(t, v.rdb, v.ns))
}

// TestAJobWithAReservedJIDWrittenByAnotherProducerCannotActAsTheBatchsOwnMember: a job that
// reached a batch's queue with the jid "batch::open" (pushed by another producer, or an older
// one) neither adds to the open batch as if it were a client, nor creates a child there, nor
// closes the batch by succeeding.
func TestAJobWithAReservedJIDWrittenByAnotherProducerCannotActAsTheBatchsOwnMember(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	b, err := flowClient(t, v).OpenBatch(ctx, BatchOptions{ID: "ob"})
	require.NoError(t, err)
	errs := make(chan error, 2)
	done := make(chan struct{})
	o := flowOptions()
	o.Listeners = []Listener{func(ev Event) {
		if ev.Kind == JobSucceeded && ev.JID == "batch::open" {
			close(done)
		}
	}}
	e := v.start(o)
	require.NoError(t, e.Register("Adder", WorkerFunc(func(ctx context.Context, job *Job) error {
		_, err := AddToBatch(ctx, batchSpecs(1, "Work"))
		errs <- err
		_, _, err = e.NewBatch(ctx, BatchOptions{ID: "child", Parent: "ob"}, batchSpecs(1, "Work"))
		errs <- err
		return nil
	})))
	v.push("q", `{"class":"Adder","args":[],"queue":"q","jid":"batch::open","bid":"ob","retry":0}`)
	for range 2 {
		err := <-errs
		require.ErrorIs(t, err, ErrInvalidBatch)
		assert.Contains(t, err.Error(), `the running job's jid "batch::open" is reserved`)
	}
	select {
	case <-done:
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the job did not succeed")
	}
	st, err := e.API().Batch(ctx, b.ID())
	require.NoError(t, err)
	assert.True(t, st.Open, "still open: the job's success is not the close")
	assert.Zero(t, st.Total, "nothing added")
	_, err = e.API().Batch(ctx, "child")
	assert.ErrorIs(t, err, ErrBatchNotFound)
}
