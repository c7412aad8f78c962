package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// farFixture is what seedFarTimes stored: a good and a bad record of each kind.
type farFixture struct {
	goodBID, badBID, wfID string
}

// seedFarTimes stores, next to good records, one record of every kind whose times RFC 3339
// cannot write (years past 9999 or before 0, and scores and fields far past int64 seconds):
// a batch, a workflow, the outbox report, jobs in a queue and in the three sets, a node with
// its running job, and a periodic job's history.
func (c *cliEnv) seedFarTimes() farFixture {
	c.t.Helper()
	ctx := context.Background()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: c.url, Namespace: c.ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(c.t, err)
	defer cl.Close()
	var f farFixture
	f.goodBID, _, err = cl.NewBatch(ctx, exq.BatchOptions{Description: "good"}, []exq.JobSpec{{Queue: "q", Class: "W"}})
	require.NoError(c.t, err)
	f.badBID, _, err = cl.NewBatch(ctx, exq.BatchOptions{Description: "bad"}, []exq.JobSpec{{Queue: "q", Class: "W"}})
	require.NoError(c.t, err)
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":batch:"+f.badBID, "created_at", "1e12", "complete_at", "-1e12").Err())
	w, err := cl.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "far"}, []exq.WorkflowJob{
		{Name: "a", Queue: "q", Class: "W"}, {Name: "b", Queue: "q", Class: "W", DependsOn: []string{"a"}}})
	require.NoError(c.t, err)
	f.wfID = w.ID
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":wf:"+f.wfID, "created_at", "1e12", "finished_at", "1e300").Err())

	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":outbox", "backlog", "2", "failed", "0", "oldest_at", "1e13", "updated_at", "1e12").Err())

	job := func(jid, times string) string {
		return fmt.Sprintf(`{"class":"W","args":[1],"queue":"default","jid":"%s"%s}`, jid, times)
	}
	require.NoError(c.t, c.rdb.LPush(ctx, c.ns+":queue:default", job("q-good", `,"enqueued_at":1700000000`),
		job("q-far", `,"created_at":1e12,"enqueued_at":-1e12,"retried_at":1e300`)).Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":queues", "default").Err())
	require.NoError(c.t, c.rdb.ZAdd(ctx, c.ns+":dead",
		redis.Z{Score: 1700000000, Member: job("dead-good", `,"failed_at":1700000000.5`)},
		redis.Z{Score: 1700000001, Member: job("dead-far", `,"failed_at":1e12`)},
		redis.Z{Score: 1e12, Member: job("dead-far-score", "")}).Err())
	require.NoError(c.t, c.rdb.ZAdd(ctx, c.ns+":retry", redis.Z{Score: 1e15, Member: job("retry-far", `,"failed_at":1e17`)},
		redis.Z{Score: 1700000000, Member: job("retry-good", "")}).Err())
	require.NoError(c.t, c.rdb.ZAdd(ctx, c.ns+":schedule", redis.Z{Score: -1e12, Member: job("sched-far", "")},
		redis.Z{Score: 1700000000, Member: job("sched-good", "")}).Err())

	id := "far:1:abc"
	info := `{"hostname":"h","started_at":1e12,"pid":1,"tag":"t","concurrency":5,"queues":["default"],"labels":[],"identity":"far:1:abc"}`
	payload, _ := json.Marshal(job("busy-far", `,"created_at":1e12`))
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":"+id, "info", info, "busy", "1", "beat", "1e12", "quiet", "false").Err())
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":"+id+":workers", "tid-1", fmt.Sprintf(`{"queue":"default","payload":%s,"run_at":1e12}`, payload)).Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":processes", id).Err())

	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":cron_job:far", "name", "far", "cron", "* * * * *", "klass", "K", "queue", "default",
		"args", `[]`, "status", "enabled", "last_enqueue_time", "9999-12-31T23:59:59-23:59").Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":cron_jobs", c.ns+":cron_job:far").Err())
	require.NoError(c.t, c.rdb.LPush(ctx, c.ns+":cron_job:far:jid_history", `{"jid":"h-good","enqueued":"2024-01-02T03:04:05Z"}`,
		`{"jid":"h-far","enqueued":"9999-12-31T23:59:59-23:59"}`).Err())
	return f
}

// readCommands are the commands that print stored records, with the arguments that make each
// print the records of seedFarTimes (and of seedHostile); name is the command's path after
// "exq", as TestEveryReadCommandIsWalked checks.
func readCommands(f farFixture, jids ...string) []struct {
	name string
	args []string
} {
	type cmd = struct {
		name string
		args []string
	}
	out := []cmd{
		{"stats", []string{"stats"}}, {"queues", []string{"queues"}}, {"jobs", []string{"jobs", "default", "--limit", "100"}},
		{"retries", []string{"retries", "--limit", "100"}}, {"scheduled", []string{"scheduled", "--limit", "100"}},
		{"dead", []string{"dead", "--limit", "100"}}, {"processes", []string{"processes"}}, {"busy", []string{"busy"}},
		{"cron", []string{"cron"}}, {"cron list", []string{"cron", "list"}}, {"cron history", []string{"cron", "history", "far"}},
		{"batch", []string{"batch"}}, {"batch list", []string{"batch", "list"}},
		{"batch show", []string{"batch", "show", f.goodBID}}, {"batch show", []string{"batch", "show", f.badBID, "--audit"}},
		{"workflow show", []string{"workflow", "show", f.wfID}}, {"outbox status", []string{"outbox", "status"}},
	}
	for _, jid := range jids {
		out = append(out, cmd{"job", []string{"job", jid}})
	}
	return out
}

// notReading are the commands that print no stored record (they act, and say what they did
// with the names given to them), or run something else (web, the outbox relay, completion).
var notReading = map[string]string{
	"cancel": "acts", "cron add": "acts", "cron delete": "acts", "cron disable": "acts", "cron enable": "acts",
	"cron enqueue": "acts", "delete": "acts", "enqueue": "acts", "queues pause": "acts", "queues resume": "acts",
	"quiet": "acts", "requeue": "acts (and names the job's stored queue: TestActionsEscapeTheStoredQueueTheyName)",
	"stop": "acts", "web": "serves the dashboard (package web's tests)", "outbox relay": "runs exq-outbox",
	"completion": "scripts", "completion bash": "scripts", "completion fish": "scripts", "completion powershell": "scripts",
	"completion zsh": "scripts", "workflow": "prints its help",
}

// Every runnable command is either walked by the output tests (readCommands) or listed as
// one that prints no stored record: a command added later fails here until it is.
func TestEveryReadCommandIsWalked(t *testing.T) {
	walked := map[string]bool{}
	for _, c := range readCommands(farFixture{}, "jid") {
		walked[c.name] = true
	}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if c.Runnable() && c.HasParent() {
			name := strings.TrimPrefix(c.CommandPath(), "exq ")
			if !walked[name] && notReading[name] == "" {
				t.Errorf("exq %s is neither walked by readCommands nor listed in notReading: add it to one", name)
			}
		}
		for _, s := range c.Commands() {
			visit(s)
		}
	}
	visit((&app{}).rootCmd())
}

// 3. One record whose time RFC 3339 cannot write (a stored 1e12 seconds is year 33658) spoils
// its own field, null, never the whole answer: every command that reads records prints valid
// JSON holding every record, the good ones' times intact (time.Time's MarshalJSON failed, and
// the command printed nothing).
func TestJSONOutputSurvivesTimesPastYear9999(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	f := c.seedFarTimes()
	for _, cmd := range readCommands(f, "q-far", "dead-far", "dead-far-score", "retry-far", "sched-far", "busy-far") {
		code, out, errOut := c.run(append(cmd.args, "--json")...)
		if !assert.Equal(t, 0, code, "%v --json: %s", cmd.args, errOut) {
			continue
		}
		assert.True(t, json.Valid([]byte(out)), "%v --json is JSON: %.300q", cmd.args, out)
		code, _, errOut = c.run(cmd.args...)
		assert.Equal(t, 0, code, "%v: %s", cmd.args, errOut)
	}

	var outbox map[string]any
	c.json(&outbox, "outbox", "status")
	assert.Nil(t, outbox["updated_at"])
	assert.Nil(t, outbox["oldest_at"])
	assert.Equal(t, 2.0, outbox["backlog"])

	var batches []map[string]any
	c.json(&batches, "batch", "list")
	require.Len(t, batches, 2, "the good batch is listed with the bad one")
	for _, b := range batches {
		switch b["id"] {
		case f.badBID:
			assert.Contains(t, b, "created_at")
			assert.Nil(t, b["created_at"], "the bad batch's own field is null")
		case f.goodBID:
			_, err := time.Parse(time.RFC3339, fmt.Sprint(b["created_at"]))
			assert.NoError(t, err, "the good batch keeps its time")
		}
	}

	var dead []map[string]any
	c.json(&dead, "dead")
	require.Len(t, dead, 3)
	byJID := map[string]map[string]any{}
	for _, d := range dead {
		byJID[fmt.Sprint(d["jid"])] = d
	}
	assert.Nil(t, byJID["dead-far"]["failed_at"])
	assert.Nil(t, byJID["dead-far-score"]["at"])
	assert.Equal(t, "2023-11-14T22:13:20.5Z", byJID["dead-good"]["failed_at"])

	var wf map[string]any
	c.json(&wf, "workflow", "show", f.wfID)
	assert.Nil(t, wf["created_at"])
	assert.Len(t, wf["jobs"], 2)

	var runs []map[string]any
	c.json(&runs, "cron", "history", "far")
	require.Len(t, runs, 2)
	assert.Nil(t, runs[0]["enqueued_at"], "year 10000 in UTC")
	assert.Equal(t, "2024-01-02T03:04:05Z", runs[1]["enqueued_at"])
}
