package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

func TestBatchListShowAndWorkflowShow(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: c.url, Namespace: c.ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer cl.Close()
	bid, jids, err := cl.NewBatch(ctx, exq.BatchOptions{Description: "nightly \x1b[31mred",
		OnSuccess: &exq.JobSpec{Queue: "cb", Class: "Done"}}, []exq.JobSpec{{Queue: "q", Class: "W"}, {Queue: "q", Class: "W"}})
	require.NoError(t, err)
	w, err := cl.EnqueueWorkflow(ctx, exq.WorkflowOptions{}, []exq.WorkflowJob{
		{Name: "a", Queue: "q", Class: "W"}, {Name: "b", Queue: "q", Class: "W", DependsOn: []string{"a"}}})
	require.NoError(t, err)

	code, out, errOut := c.run("batch", "list")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, bid)
	assert.NotContains(t, out, "\x1b", "terminal escapes from Redis are neutralised")

	var list []batchJSON
	c.json(&list, "batch")
	require.Len(t, list, 1)
	assert.Equal(t, 2, list[0].Total)
	assert.Equal(t, 2, list[0].Pending)

	var one batchJSON
	c.json(&one, "batch", "show", bid)
	assert.ElementsMatch(t, jids, one.PendingJIDs)
	assert.NotEmpty(t, one.Callbacks["success"])

	var wf workflowJSON
	c.json(&wf, "workflow", "show", w.ID)
	require.Len(t, wf.Jobs, 2)
	assert.Equal(t, "queued", wf.Jobs[0].State)
	assert.Equal(t, "waiting", wf.Jobs[1].State)
	assert.Equal(t, []string{"a"}, wf.Jobs[1].DependsOn)
	code, out, errOut = c.run("workflow", "show", w.ID)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "waiting")

	for _, args := range [][]string{{"batch"}, {"batch", "show", bid}, {"workflow", "show", w.ID}} {
		var v any
		c.json(&v, args...)
		checkSchema(t, args[0], v)
	}

	// A Sidekiq node's run of a job (BRPOP: no backup list) that has ended: unaccounted.
	raw, err := c.rdb.BRPop(ctx, time.Second, c.ns+":queue:q").Result()
	require.NoError(t, err)
	c.json(&one, "batch", "show", bid, "--audit")
	assert.Len(t, one.UnaccountedJIDs, 1)
	assert.Contains(t, raw[1], one.UnaccountedJIDs[0])
	code, out, errOut = c.run("batch", "show", bid, "--audit")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, one.UnaccountedJIDs[0])

	code, _, errOut = c.run("batch", "show", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "batch not found")
	code, _, errOut = c.run("workflow", "show", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "workflow not found")
}

// exq workflow list lists the workflows as exq batch list lists the batches, and plain
// "exq workflow" and "exq batch" both list.
func TestWorkflowListAndPlainWorkflowAndBatchBothList(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	ctx := context.Background()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: c.url, Namespace: c.ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer cl.Close()
	_, _, err = cl.NewBatch(ctx, exq.BatchOptions{Description: "nightly"}, []exq.JobSpec{{Queue: "q", Class: "W"}})
	require.NoError(t, err)
	older, err := cl.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "older"}, []exq.WorkflowJob{{Name: "a", Queue: "q", Class: "W"}})
	require.NoError(t, err)
	newer, err := cl.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "newer \x1b[31mred"}, []exq.WorkflowJob{
		{Name: "a", Queue: "q", Class: "W"}, {Name: "b", Queue: "q", Class: "W", DependsOn: []string{"a"}}})
	require.NoError(t, err)

	code, listed, errOut := c.run("workflow", "list")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `^ID +DESCRIPTION +TOTAL +SUCCEEDED +DEAD +CANCELED +CREATED +FINISHED\n`, listed)
	assert.Contains(t, listed, older.ID)
	assert.Regexp(t, newer.ID+` +newer \\x1b\[31mred +2 +0 +0 +0 `, listed, "escaped, with its counts")
	assert.NotContains(t, listed, "\x1b", "terminal escapes from Redis are neutralised")
	code, plain, errOut := c.run("workflow")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, listed, plain, "plain exq workflow lists")

	code, batches, errOut := c.run("batch", "list")
	require.Equal(t, 0, code, errOut)
	code, plain, errOut = c.run("batch")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, batches, plain, "plain exq batch lists")

	var list []workflowListJSON
	c.json(&list, "workflow", "list")
	require.Len(t, list, 2)
	assert.Equal(t, newer.ID, list[0].ID, "newest first")
	assert.Equal(t, 2, list[0].Total)
	assert.Equal(t, older.ID, list[1].ID)
	var v any
	c.json(&v, "workflow")
	checkSchema(t, "workflow", v)
	c.json(&list, "workflow", "--limit", "1")
	require.Len(t, list, 1)
	assert.Equal(t, newer.ID, list[0].ID)

	for _, args := range [][]string{{"workflow", "list", "--limit", "0"}, {"workflow", "--limit", "-1"}, {"workflow", "list", "x"}} {
		code, _, errOut = c.run(args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
	for _, cmd := range []string{"workflow", "batch"} {
		code, help, errOut := c.run(cmd, "--help")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, help, "Without a subcommand, lists", cmd)
	}
}
