package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
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

// The results a workflow's steps stored show in workflow show (cut in the table, with their
// size in --json, escaped), and exq job finds a finished job by its result.
func TestWorkflowShowAndJobShowTheResultsStepsStored(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	type in struct{ N int }
	long := strings.Repeat("ab", 5000)
	e := c.start(map[string]exq.Worker{
		"Extract": exq.TypedResult(func(context.Context, *exq.Job, in) (map[string]any, error) {
			return map[string]any{"rows": 3, "note": "\x1b[31mred\nline"}, nil
		}),
		"Load": exq.TypedResult(func(context.Context, *exq.Job, in) (string, error) { return long, nil }),
		"Tell": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
	}, exq.Queue{Name: "q"})
	w, err := e.EnqueueWorkflow(context.Background(), exq.WorkflowOptions{}, []exq.WorkflowJob{
		{Name: "extract", Queue: "q", Class: "Extract", Args: []any{in{1}}},
		{Name: "load", Queue: "q", Class: "Load", Args: []any{in{2}}, DependsOn: []string{"extract"}},
		{Name: "tell", Queue: "q", Class: "Tell", DependsOn: []string{"load"}}})
	require.NoError(t, err)
	var wf workflowJSON
	testutil.WaitFor(t, "the workflow finished", func() bool {
		c.json(&wf, "workflow", "show", w.ID)
		return wf.Succeeded == 3
	})
	jobs := map[string]workflowJobJSON{}
	for _, j := range wf.Jobs {
		jobs[j.Name] = j
	}
	extract := jobs["extract"]
	assert.Equal(t, `{"note":"\u001b[31mred\nline","rows":3}`, extract.Result)
	assert.Equal(t, len(extract.Result), extract.ResultBytes)
	assert.False(t, extract.ResultTruncated)
	load := jobs["load"]
	assert.Equal(t, `"`+long[:maxJSONResult-1], load.Result, "--json: the first 4 KiB")
	assert.Equal(t, len(long)+2, load.ResultBytes)
	assert.True(t, load.ResultTruncated)
	assert.Empty(t, jobs["tell"].Result, "a step that stored nothing")
	var v any
	c.json(&v, "workflow", "show", w.ID)
	checkSchema(t, "workflow show", v)

	code, out, errOut := c.run("workflow", "show", w.ID)
	require.Equal(t, 0, code, errOut)
	// The heading: the id (no description, and no trailing spaces for one), then the counts and
	// times that only --json gave.
	lines := strings.Split(out, "\n")
	assert.Equal(t, w.ID, lines[0])
	assert.Regexp(t, `^3 jobs: 3 succeeded, 0 dead, 0 canceled; created \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, finished \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, lines[1])
	assert.Regexp(t, `(?m)^JOB +STATE +QUEUE +WAITS FOR +JID +RESULT$`, out)
	assert.Regexp(t, `(?m)^extract +succeeded +q +- +`+extract.JID+` +\{"note":"\\u001b\[31mred\\nline","rows":3\}$`, out)
	assert.Regexp(t, `(?m)^load +succeeded +q +extract +`+load.JID+` +"(ab){19}…$`, out, "cut to 40 runes")
	assert.Regexp(t, `(?m)^tell +succeeded +q +load +`+jobs["tell"].JID+` +-$`, out)

	// exq job finds a finished job by its result, and says it finished. The node is stopped
	// first: it writes its busy list on a timer, and may still list a finished job as running.
	require.NoError(t, e.Stop(context.Background()))
	code, out, errOut = c.run("job", extract.JID)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "STATE      finished: in no queue, set or node now; it stored the result below\n"+
		"JID        "+extract.JID+"\n"+
		`RESULT     {"note":"\u001b[31mred\nline","rows":3}`+"\n", out)
	code, out, errOut = c.run("job", load.JID)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "RESULT     \""+long[:maxShownArgs-2]+"…\n  (cut: the result is 10002 bytes; --json prints its first 64 KiB)\n")
	var shown struct {
		Places []map[string]any `json:"places"`
		Job    map[string]any   `json:"job"`
		resultJSON
	}
	c.json(&shown, "job", load.JID)
	assert.Equal(t, []map[string]any{{"state": "finished"}}, shown.Places)
	assert.Nil(t, shown.Job)
	assert.Equal(t, `"`+long+`"`, shown.Result, "--json: up to 64 KiB")
	assert.Equal(t, len(long)+2, shown.ResultBytes)
	assert.False(t, shown.ResultTruncated)
	c.json(&v, "job", load.JID)
	checkSchema(t, "job", v)

	// A job gone without a result is not found.
	code, _, errOut = c.run("job", jobs["tell"].JID)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "job not found")

	// A result written straight into Redis with terminal controls is shown escaped.
	require.NoError(t, c.rdb.Set(context.Background(), c.ns+":result:"+jobs["tell"].JID, "\x1b[2J\"x\"\r\n", 0).Err())
	for _, args := range [][]string{{"job", jobs["tell"].JID}, {"workflow", "show", w.ID}} {
		code, out, errOut = c.run(args...)
		require.Equal(t, 0, code, errOut)
		assert.NotContains(t, out, "\x1b", "%v", args)
		assert.NotContains(t, out, "\r", "%v", args)
		assert.Contains(t, out, `\x1b[2J"x"`, "%v", args)
	}
}
