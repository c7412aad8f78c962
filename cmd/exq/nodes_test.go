package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// foreignNode registers a live node as Sidekiq or Exq write it, running job jid of queue q.
func (c *cliEnv) foreignNode(id, runtime, q, jid string) {
	c.t.Helper()
	ctx := context.Background()
	pid := `13122`
	info := fmt.Sprintf(`{"hostname":"rb-host","started_at":%d,"pid":%s,"tag":"app","concurrency":5,"queues":["%s"],"labels":[],"identity":"%s"}`,
		time.Now().Add(-time.Hour).Unix(), pid, q, id)
	if runtime == "Exq" {
		info = fmt.Sprintf(`{"hostname":"ex-host","identity":"%s","started_at":%d,"pid":"4242","queues":["%s"],"labels":[],"tag":"","busy":1,"concurrency":5,"quiet":false}`,
			id, time.Now().Add(-time.Hour).Unix(), q)
	}
	now := float64(time.Now().UnixMicro()) / 1e6
	payload, _ := json.Marshal(fmt.Sprintf(`{"class":"Ruby.Job","args":[7,"x"],"queue":"%s","jid":"%s"}`, q, jid))
	// In one MULTI, as nodes write it: a running exq node prunes a listed process without a hash.
	_, err := c.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		pl.HSet(ctx, c.ns+":"+id, "info", info, "busy", "1", "beat", fmt.Sprint(now), "quiet", "false")
		pl.HSet(ctx, c.ns+":"+id+":workers", "tid-1", fmt.Sprintf(`{"queue":"%s","payload":%s,"run_at":%f}`, q, payload, now-3))
		pl.SAdd(ctx, c.ns+":processes", id)
		return nil
	})
	require.NoError(c.t, err)
}

// 8. cancel of a job running on an Exq node names the node, says that only exq nodes honour
// cancel, sends nothing and exits 1. On a Sidekiq node it sets the cancellation flag of the
// job's iteration state (Sidekiq 7.3's it-<jid>), which only an iterable job honours: with a
// saved state it says the job stops at its next save; without, it says a plain job runs to its
// end and exits 1. No signal goes to either (Sidekiq would take CANCEL for a Unix signal).
func TestCancelOnANonExqNodeNamesTheNodeAndExitsOne(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	node, jid := "exq-node-1", "jid-on-Exq"
	c.foreignNode(node, "Exq", "default", jid)
	code, out, errOut := c.run("cancel", jid)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, fmt.Sprintf("exq cancel: job %s runs on node %s (Exq): only exq nodes honour cancel, so none was sent\n", jid, node), errOut)
	assert.Zero(t, c.rdb.Exists(ctx, c.ns+":"+node+"-signals").Val(), "no signal sent")
	assert.Zero(t, c.rdb.Exists(ctx, c.ns+":it-"+jid).Val(), "no flag for an Exq node's job")

	for _, tc := range []struct {
		name     string
		iterable bool
	}{{"a plain Sidekiq job", false}, {"an iterable Sidekiq job", true}} {
		t.Run(tc.name, func(t *testing.T) {
			node, jid := "sidekiq-node-"+fmt.Sprint(tc.iterable), "jid-on-Sidekiq-"+fmt.Sprint(tc.iterable)
			c.foreignNode(node, "Sidekiq", "default", jid)
			if tc.iterable { // as Sidekiq 7.3's flush_state writes it
				require.NoError(t, c.rdb.HSet(ctx, c.ns+":it-"+jid, "ex", "1", "c", "41", "rt", "2.5").Err())
			}
			code, out, errOut := c.run("cancel", jid)
			if tc.iterable {
				assert.Equal(t, 0, code)
				assert.Equal(t, fmt.Sprintf("set the cancellation flag of %s, an iterable job running on Sidekiq node %s: it stops at its next save (within about 5 s) and is not retried\n", jid, node), out)
			} else {
				assert.Equal(t, 1, code)
				assert.Empty(t, out)
				assert.Equal(t, fmt.Sprintf("exq cancel: job %s runs on node %s (Sidekiq) and has saved no iteration state: Sidekiq stops only an iterable job (Sidekiq 7.3 or later) at its next save, so the cancellation flag is set for that case; any other job runs to its end\n", jid, node), errOut)
			}
			flag, err := c.rdb.HGet(ctx, c.ns+":it-"+jid, "cancelled").Int64()
			require.NoError(t, err, "the flag Sidekiq 7.3 reads is set")
			assert.InDelta(t, time.Now().Unix(), flag, 60)
			assert.Zero(t, c.rdb.Exists(ctx, c.ns+":"+node+"-signals").Val(), "no signal sent")
		})
	}
	code, _, errOut = c.run("cancel", "not-running")
	assert.Equal(t, 1, code)
	assert.Equal(t, "exq cancel: job not found: not-running is not running on any node (see exq job not-running)\n", errOut)
}

// 7. A queue nothing knows is a likely typo: jobs warns on stderr and lists the known queues.
func TestJobsOfAnUnknownQueueWarnsOnStderr(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 2)
	c.push("reports", 1)
	code, out, errOut := c.run("jobs", "nosuchqueue")
	assert.Equal(t, 0, code)
	assert.Equal(t, "JID  CLASS  QUEUE  ARGS  RETRIES  ERROR\n", out)
	assert.Equal(t, "exq: warning: queue \"nosuchqueue\" has no job and no live node subscribes to it; known queues: mail, reports\n", errOut)

	code, _, errOut = c.run("jobs", "mail")
	assert.Equal(t, 0, code)
	assert.Empty(t, errOut, "a known queue is not warned about")
	assert.Len(t, c.keys(), 3, "looking wrote nothing")
}

// 7. Enqueueing to a queue no live node subscribes to (or a paused one) warns on stderr; the
// job is enqueued all the same.
func TestEnqueueToAQueueNoLiveNodeSubscribesToWarns(t *testing.T) {
	c := newCLIEnv(t)
	block := make(chan struct{})
	defer close(block)
	e := c.start(map[string]exq.Worker{"W": exq.WorkerFunc(func(ctx context.Context, _ *exq.Job) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	})}, exq.Queue{Name: "mail"})
	testutil.WaitFor(t, "the node is live", func() bool {
		var ps []processJSON
		c.json(&ps, "processes")
		return len(ps) == 1 && ps[0].Identity == e.NodeID()
	})

	code, out, errOut := c.run("enqueue", "mial", "W", "[1]")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `^enqueued \S+ to mial\n$`, out)
	assert.Equal(t, "exq: warning: no live node subscribes to queue \"mial\": the job waits until one does (see exq processes)\n"+c.notice("enqueue"), errOut)
	assert.EqualValues(t, 1, c.rdb.LLen(context.Background(), c.ns+":queue:mial").Val(), "enqueued all the same")

	code, _, errOut = c.run("enqueue", "mail", "W", "[1]")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, c.notice("enqueue"), errOut, "a subscribed queue is not warned about")

	code, _, _ = c.run("queues", "pause", "mail")
	require.Equal(t, 0, code)
	code, _, errOut = c.run("enqueue", "mail", "W", "[2]")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "exq: warning: queue \"mail\" is paused: exq nodes run the job once it is resumed (exq queues resume mail)\n"+c.notice("enqueue"), errOut)
}
