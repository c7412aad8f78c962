package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

func TestEnqueueListRunAndCount(t *testing.T) {
	c := newCLIEnv(t)
	var enq struct{ JID, Queue string }
	c.json(&enq, "enqueue", "default", "CLI.Echo", `[42,"welcome",{"n":1}]`, "--max-retries", "3")
	require.NotEmpty(t, enq.JID)

	code, out, _ := c.run("jobs", "default")
	require.Equal(t, 0, code)
	assert.Contains(t, out, enq.JID)
	assert.Contains(t, out, "CLI.Echo")
	var jobs []map[string]any
	c.json(&jobs, "jobs", "default")
	require.Len(t, jobs, 1)
	assert.Equal(t, enq.JID, jobs[0]["jid"])
	assert.Equal(t, []any{42.0, "welcome", map[string]any{"n": 1.0}}, jobs[0]["args"])
	var queues []map[string]any
	c.json(&queues, "queues")
	assert.Equal(t, []map[string]any{wantQueue("default", 1, false)}, queues)

	// A node runs it, and stats show it.
	ran := make(chan []any, 1)
	e, err := exq.Start(context.Background(), exq.Options{RedisURL: c.url, Namespace: c.ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Workers: map[string]exq.Worker{"CLI.Echo": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			var a, b, m any
			if err := job.Bind(&a, &b, &m); err != nil {
				return err
			}
			ran <- []any{a, b, m}
			return nil
		})}})
	require.NoError(t, err)
	defer e.Stop(context.Background())
	select {
	case args := <-ran:
		assert.Equal(t, "welcome", args[1])
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the node did not run the job")
	}
	testutil.WaitFor(t, "stats show the job", func() bool {
		var st map[string]float64
		c.json(&st, "stats")
		return st["processed"] == 1 && st["enqueued"] == 0 && st["processes"] == 1
	})
	code, out, _ = c.run("stats")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "PROCESSED")
	code, out, _ = c.run("processes")
	require.Equal(t, 0, code)
	assert.Contains(t, out, e.NodeID())
}

func TestRetryDeleteAndScheduledCommands(t *testing.T) {
	c := newCLIEnv(t)
	rdb, _ := testutil.Redis(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		raw := fmt.Sprintf(`{"class":"W","args":[%d],"queue":"revive","jid":"d%d","error_message":"boom"}`, i, i)
		require.NoError(t, rdb.ZAdd(ctx, c.ns+":dead", redis.Z{Score: float64(1700000000 + i), Member: raw}).Err())
	}
	var dead []map[string]any
	c.json(&dead, "dead")
	require.Len(t, dead, 3)
	assert.Equal(t, "d2", dead[0]["jid"], "most recent first")
	code, out, _ := c.run("dead", "--limit", "1", "--offset", "1")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "d1")
	assert.NotContains(t, out, "d2")

	code, out, _ = c.run("requeue", "d1")
	require.Equal(t, 0, code)
	assert.Equal(t, "moved d1 from dead to queue revive\n", out)
	code, _, errOut := c.run("retry", "d1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "job not found")

	code, out, _ = c.run("delete", "d0")
	require.Equal(t, 0, code)
	assert.Equal(t, "deleted d0 from dead\n", out)
	code, out, _ = c.run("delete", "d1") // retried above: waiting in its queue
	require.Equal(t, 0, code)
	assert.Equal(t, "deleted d1 from queue revive\n", out)
	code, _, errOut = c.run("delete", "d1")
	assert.Equal(t, 1, code)
	assert.Equal(t, "exq delete: job not found: no job d1 in retry, schedule, dead, any queue (see exq job d1)\n", errOut)
	code, _, errOut = c.run("enqueue", "revive", "W", "[]", "--jid", "d9")
	require.Equal(t, 0, code, errOut)

	var sched map[string]any
	c.json(&sched, "enqueue", "later", "W", `[]`, "--in", "1h")
	var scheduled []map[string]any
	c.json(&scheduled, "scheduled")
	require.Len(t, scheduled, 1)
	assert.Equal(t, sched["jid"], scheduled[0]["jid"])
	code, out, _ = c.run("delete", "--all", "--set", "scheduled", "--force")
	require.Equal(t, 0, code)
	assert.Equal(t, "deleted 1 job of schedule\n", out)
	c.json(&scheduled, "scheduled")
	assert.Empty(t, scheduled)

	code, out, _ = c.run("delete", "--queue", "revive", "--force")
	require.Equal(t, 0, code)
	assert.Equal(t, "deleted queue revive and its 1 job\n", out)
}

func TestSignalsBusyAndCancel(t *testing.T) {
	c := newCLIEnv(t)
	code, _, errOut := c.run("quiet", "no-such-node")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `no live node "no-such-node"`)

	started := make(chan struct{})
	e, err := exq.Start(context.Background(), exq.Options{RedisURL: c.url, Namespace: c.ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Workers: map[string]exq.Worker{"Long": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})}})
	require.NoError(t, err)
	defer e.Stop(context.Background())
	var enq map[string]any
	c.json(&enq, "enqueue", "default", "Long", `[]`, "--jid", "long-1")
	<-started
	testutil.WaitFor(t, "the job shows as busy", func() bool {
		_, out, _ := c.run("busy")
		return strings.Contains(out, "long-1")
	})
	code, out, _ := c.run("cancel", "long-1")
	require.Equal(t, 0, code)
	assert.Equal(t, fmt.Sprintf("asked %s to cancel long-1; it goes to dead as Canceled\n", e.NodeID()), out)
	testutil.WaitFor(t, "the job is dead", func() bool {
		var dead []map[string]any
		c.json(&dead, "dead")
		return len(dead) == 1 && dead[0]["error_message"] == "Canceled"
	})
	code, out, _ = c.run("quiet", e.NodeID())
	require.Equal(t, 0, code)
	assert.Contains(t, out, "sent TSTP to "+e.NodeID())
	code, _, _ = c.run("stop", e.NodeID())
	require.Equal(t, 0, code)
	select {
	case <-e.Done():
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the node did not get TERM")
	}
}

func TestQueuesPauseAndResume(t *testing.T) {
	c := newCLIEnv(t)
	code, _, errOut := c.run("enqueue", "mail", "CLI.Echo", `[1]`)
	require.Equal(t, 0, code, errOut)

	code, out, errOut := c.run("queues", "pause", "mail")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "paused queue mail\n", out)
	var paused map[string]any
	c.json(&paused, "queues", "pause", "later") // a queue with no job yet
	assert.Equal(t, map[string]any{"queue": "later", "paused": true}, paused)

	code, out, _ = c.run("queues")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^QUEUE +SIZE +STATE +LIMIT +RATE +STARTED$`, out)
	assert.Regexp(t, `(?m)^mail +1 +paused *$`, out)
	assert.Regexp(t, `(?m)^later +0 +paused *$`, out)
	var queues []map[string]any
	c.json(&queues, "queues")
	assert.Equal(t, []map[string]any{wantQueue("later", 0, true), wantQueue("mail", 1, true)}, queues)

	code, out, errOut = c.run("queues", "resume", "mail")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "resumed queue mail\n", out)
	c.json(&queues, "queues")
	assert.Equal(t, []map[string]any{wantQueue("later", 0, true), wantQueue("mail", 1, false)}, queues)
}

func TestQueuesPauseBadInputIsAUsageError(t *testing.T) {
	c := newCLIEnv(t)
	for _, args := range [][]string{
		{"queues", "pause"},
		{"queues", "resume"},
		{"queues", "freeze", "mail"},
		{"queues", "pause", "a", "b"},
		{"queues", "pause", "a::b"},
		{"queues", "resume", ""},
	} {
		code, out, errOut := c.run(args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Empty(t, out, "%v", args)
		assert.NotEmpty(t, errOut, "%v", args)
	}
	assert.Empty(t, c.keys(), "bad input wrote to Redis")
}

// wantQueue is a queue of `exq --json queues` without limits, as JSON decodes it.
func wantQueue(name string, size float64, paused bool) map[string]any {
	return map[string]any{"queue": name, "size": size, "paused": paused,
		"global_limit": 0.0, "in_use": 0.0, "rate": 0.0, "rate_per_ms": 0.0, "started": 0.0}
}

// limitQueue writes what nodes running queue q with limits leave in namespace ns: the
// published limits (as JSON), live leases (expiring in an hour), expired ones, and starts now.
func limitQueue(t *testing.T, ns, q, limits string, live, expired, starts int) {
	t.Helper()
	rdb, _ := testutil.Redis(t)
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	if limits != "" {
		require.NoError(t, rdb.HSet(ctx, ns+":limits", q, limits).Err())
	}
	for i := range live {
		require.NoError(t, rdb.ZAdd(ctx, ns+":leases:"+q, redis.Z{Score: float64(now.Add(time.Hour).Unix()), Member: fmt.Sprintf("node-a:%d", i)}).Err())
	}
	for i := range expired {
		require.NoError(t, rdb.ZAdd(ctx, ns+":leases:"+q, redis.Z{Score: float64(now.Add(-time.Hour).Unix()), Member: fmt.Sprintf("node-dead:%d", i)}).Err())
	}
	for i := range starts {
		require.NoError(t, rdb.ZAdd(ctx, ns+":starts:"+q, redis.Z{Score: float64(now.UnixMicro()) / 1e6, Member: fmt.Sprintf("node-a:%d", i)}).Err())
	}
}

func TestQueuesShowGlobalLimitInUseRateAndStarts(t *testing.T) {
	c := newCLIEnv(t)
	for _, tc := range []struct {
		name                   string
		queue, limits          string
		live, expired, starts  int
		wantRow                string // regexp of the table row
		limit, inUse           float64
		rate, ratePerMS, start float64
	}{
		// A rate per hour: starts count within the rate's window, and a loaded run can take more
		// than a second between writing them and the second command.
		{name: "global limit and rate: live leases count, expired ones do not",
			queue: "mail", limits: `{"global_limit":5,"rate":200,"rate_per_ms":3600000}`, live: 2, expired: 1, starts: 3,
			wantRow: `(?m)^mail +1 +2/5 +200/1h +3$`, limit: 5, inUse: 2, rate: 200, ratePerMS: 3600000, start: 3},
		{name: "global limit alone: no rate, no started count",
			queue: "slots", limits: `{"global_limit":3}`, expired: 2,
			wantRow: `(?m)^slots +1 +0/3 *$`, limit: 3},
		{name: "rate alone: no limit column, started shown even when 0",
			queue: "api", limits: `{"rate":10,"rate_per_ms":60000}`,
			wantRow: `(?m)^api +1 +10/1m +0$`, rate: 10, ratePerMS: 60000},
		{name: "no limits: empty columns",
			queue:   "plain",
			wantRow: `(?m)^plain +1 *$`},
	} {
		code, _, errOut := c.run("enqueue", tc.queue, "CLI.Echo", `[1]`)
		require.Equal(t, 0, code, errOut)
		limitQueue(t, c.ns, tc.queue, tc.limits, tc.live, tc.expired, tc.starts)

		code, out, errOut := c.run("queues")
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `(?m)^QUEUE +SIZE +STATE +LIMIT +RATE +STARTED$`, out, tc.name)
		assert.Regexp(t, tc.wantRow, out, tc.name)

		var queues []map[string]any
		c.json(&queues, "queues")
		var got map[string]any
		for _, q := range queues {
			if q["queue"] == tc.queue {
				got = q
			}
		}
		assert.Equal(t, map[string]any{"queue": tc.queue, "size": 1.0, "paused": false, "global_limit": tc.limit, "in_use": tc.inUse,
			"rate": tc.rate, "rate_per_ms": tc.ratePerMS, "started": tc.start}, got, tc.name)
	}
}

func TestQueuesListLimitedQueueWithNoJob(t *testing.T) {
	c := newCLIEnv(t)
	limitQueue(t, c.ns, "reports", `{"global_limit":2}`, 1, 0, 0)
	code, out, errOut := c.run("queues")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^reports +0 +1/2 *$`, out)
}
