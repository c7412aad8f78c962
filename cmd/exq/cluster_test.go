package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// The command on a Redis Cluster (the private 3-master cluster of the test binary), through a
// RedisURL with cluster=true: one namespace with a hash tag, a list of shards on the three
// masters, and the refusal of a namespace without a tag.
func TestCommandsOnARedisCluster(t *testing.T) {
	addrs := testutil.ClusterAddrs(t)
	url := "redis://" + addrs[0] + "?cluster=true&addr=" + strings.Join(addrs[1:], "&addr=")
	master, cluster, ns := testutil.ClusterRedis(t)
	c := &cliEnv{t: t, rdb: master, url: url, ns: ns}
	ctx := context.Background()

	// One namespace: enqueue, list, count, move a scheduled job, delete, and a node's run.
	var enq struct{ JID, Queue string }
	c.json(&enq, "enqueue", "default", "CLI.Echo", `[1]`)
	require.NotEmpty(t, enq.JID)
	var later struct{ JID string }
	c.json(&later, "enqueue", "mail", "CLI.Later", `[2]`, "--in", "1h")
	var jobs []map[string]any
	c.json(&jobs, "jobs", "default")
	require.Len(t, jobs, 1)
	assert.Equal(t, enq.JID, jobs[0]["jid"])
	var st map[string]float64
	c.json(&st, "stats")
	assert.Equal(t, 1.0, st["enqueued"])
	assert.Equal(t, 1.0, st["scheduled"])
	code, out, errOut := c.run("retry", later.JID)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "moved "+later.JID+" from schedule to queue mail\n", out)
	code, out, errOut = c.run("delete", later.JID)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "deleted "+later.JID+" from queue mail\n", out)
	var queues []map[string]any
	c.json(&queues, "queues")
	assert.Equal(t, []map[string]any{wantQueue("default", 1, false), wantQueue("mail", 0, false)}, queues)

	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Namespace: ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Workers: map[string]exq.Worker{"CLI.Echo": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil })}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Stop(ctx)) }()
	testutil.WaitFor(t, "stats show the job run", func() bool {
		c.json(&st, "stats")
		return st["processed"] == 1 && st["enqueued"] == 0 && st["processes"] == 1
	})
	code, out, errOut = c.run("processes")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, e.NodeID())

	// Shards on the three masters: stats and queues sum them.
	nss, err := exq.ShardNamespaces(ctx, cluster, strings.Trim(ns, "{}")+"-s", 3)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, s := range nss {
			testutil.DeleteNamespace(cluster, s)
		}
	})
	for i, s := range nss {
		cl, err := exq.NewClient(ctx, exq.ClientOptions{Redis: cluster, Namespace: s})
		require.NoError(t, err)
		for range i + 1 {
			_, err := cl.Enqueue(ctx, "default", "Shard.Job", []any{i})
			require.NoError(t, err)
		}
		_ = cl.Close()
	}
	sc := &cliEnv{t: t, url: url, ns: strings.Join(nss, ",")}
	sc.json(&st, "stats")
	assert.Equal(t, 6.0, st["enqueued"], "1 + 2 + 3 jobs in the three shards")
	r := runBin(t, exqBin, url, "queues", "--namespace", strings.Join(nss, ","))
	require.Equal(t, 0, r.code, r.errOut)
	assert.Regexp(t, `(?m)^default +6 *$`, r.out)

	// A namespace without a hash tag would spread over the slots: refused before any command.
	r = runBin(t, exqBin, url, "stats", "--namespace", "exq")
	assert.Equal(t, 2, r.code, "bad input: exit 2")
	assert.Contains(t, r.errOut, `Namespace: "exq" needs a hash tag such as "{exq}" on a Redis Cluster`)
}
