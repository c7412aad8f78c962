package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
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

	// A key blocked until a time RFC 3339 cannot write (docs/keys.md).
	require.NoError(c.t, c.rdb.ZAdd(ctx, c.ns+":key_blocked:default", redis.Z{Score: 1e12, Member: "far"}).Err())
	require.NoError(c.t, c.rdb.RPush(ctx, c.ns+":key_jobs:default:far", job("key-far", "")).Err())
	id := "far:1:abc"
	info := `{"hostname":"h","started_at":1e12,"pid":1,"tag":"t","concurrency":5,"queues":["default"],"labels":[],"identity":"far:1:abc"}`
	payload, _ := json.Marshal(job("busy-far", `,"created_at":1e12`))
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":"+id, "info", info, "busy", "1", "beat", "1e12", "quiet", "false").Err())
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":"+id+":workers", "tid-1", fmt.Sprintf(`{"queue":"default","payload":%s,"run_at":1e12}`, payload)).Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":processes", id).Err())

	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":cron_job:far", "name", "far", "cron", "* * * * *", "klass", "K", "queue", "default",
		"args", `[]`, "status", "enabled", "last_enqueue_time", "9999-12-31T23:59:59-23:59").Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":cron_jobs", "cron_job:far").Err())
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
		{"workflow", []string{"workflow"}}, {"workflow list", []string{"workflow", "list"}},
		{"workflow show", []string{"workflow", "show", f.wfID}}, {"outbox status", []string{"outbox", "status"}},
		{"metrics", []string{"metrics"}}, {"keys", []string{"keys", "default"}}, {"keys", []string{"keys", "default", "evil", "--limit", "100"}},
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
	"cron enqueue": "acts", "delete": "acts", "enqueue": "acts", "queues pause": "acts", "queues resume": "acts", "keys pause": "acts", "keys resume": "acts",
	"quiet": "acts", "requeue": "acts (and names the stored job's queue: TestNoStoredStringForgesALineOrReachesTheTerminal)",
	"stop": "acts", "web": "serves the dashboard (package web's tests)", "outbox relay": "runs exq-outbox",
	"completion": "scripts", "completion bash": "scripts", "completion fish": "scripts", "completion powershell": "scripts",
	"completion zsh": "scripts",
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
	visit((&app{env: env{getenv: func(string) string { return "" }}}).rootCmd())
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

// farShown matches a time outside years 0000–9999 written as a date or an age in a table.
var farShown = regexp.MustCompile(`[0-9]{5,}-[0-9]{2}-[0-9]{2}T|(^|\s)-[0-9]+-[0-9]{2}-[0-9]{2}T|106751d|2562047h`)

// The tables say "out of range" for such a time, as --json writes null: never a clamped year
// (292277026596), a year of five digits or below zero, nor an age of "106751d23h47m0s".
func TestTablesSayOutOfRangeForTimesPastYear9999(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	f := c.seedFarTimes()
	for _, cmd := range readCommands(f, "q-far", "dead-far", "dead-far-score", "retry-far", "sched-far", "busy-far") {
		code, out, errOut := c.run(cmd.args...)
		require.Equal(t, 0, code, "%v: %s", cmd.args, errOut)
		assert.NotRegexp(t, farShown, out, "%v shows an out-of-range time as a date", cmd.args)
	}
	for _, args := range [][]string{{"processes"}, {"busy"}, {"batch", "list"}, {"workflow", "list"}, {"dead"}, {"job", "busy-far"}, {"keys", "default"}} {
		_, out, _ := c.run(args...)
		assert.Contains(t, out, "out of range", "%v", args)
	}
}

// forge is a stored text that tries to start a line of its own ("FORGED" at a line's start),
// move the cursor, clear the screen, and hold bytes that are no UTF-8.
const forge = "x\nFORGED row\r\x1b[2J\x1b]0;t\x07\u202e\xff\xfe"

// seedForgeries stores forge in every text field of a batch, a workflow (its description,
// a job's name, queue, state, reason, jid and parents), a job (class, queue, jid, args,
// error), a node (host, tag, queue) with its running job and progress, and a periodic job
// (name, class, queue, description); and returns the ids and jid to look them up by.
func (c *cliEnv) seedForgeries() (bid, wfID string) {
	c.t.Helper()
	ctx := context.Background()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: c.url, Namespace: c.ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(c.t, err)
	defer cl.Close()
	bid, _, err = cl.NewBatch(ctx, exq.BatchOptions{Description: "b"}, []exq.JobSpec{{Queue: "q", Class: "W"}})
	require.NoError(c.t, err)
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":batch:"+bid, "description", forge).Err())
	w, err := cl.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "w"}, []exq.WorkflowJob{{Name: "a", Queue: "q", Class: "W"}})
	require.NoError(c.t, err)
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":wf:"+w.ID, "description", forge).Err())
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":wf:"+w.ID+":graph", "j:"+forge, forge, "q:"+forge, forge, "s:"+forge, forge,
		"why:"+forge, forge, "p:"+forge, "a\n"+forge).Err())

	q, _ := json.Marshal(forge)
	doc := fmt.Sprintf(`{"class":%s,"args":[%s],"queue":%s,"jid":"forged-1","error_class":%s,"error_message":%s,"enqueued_at":1700000000.5}`, q, q, q, q, q)
	require.NoError(c.t, c.rdb.LPush(ctx, c.ns+":queue:default", doc).Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":queues", "default", forge).Err())
	// A key named by the forgery, waiting with the forged job (docs/keys.md).
	require.NoError(c.t, c.rdb.ZAdd(ctx, c.ns+":key_ready:default", redis.Z{Score: 0, Member: forge}).Err())
	require.NoError(c.t, c.rdb.RPush(ctx, c.ns+":key_jobs:default:"+forge, doc).Err())
	require.NoError(c.t, c.rdb.RPush(ctx, c.ns+":key_jobs:default:evil", doc).Err())
	for _, s := range []string{"retry", "schedule", "dead"} {
		require.NoError(c.t, c.rdb.ZAdd(ctx, c.ns+":"+s, redis.Z{Score: 1700000000, Member: doc}).Err())
	}
	id := "forge:1:abc"
	info, _ := json.Marshal(map[string]any{"hostname": forge, "started_at": 1700000000, "pid": 1, "tag": forge, "concurrency": 5,
		"queues": []string{forge}, "labels": []string{forge}, "identity": id})
	payload, _ := json.Marshal(doc)
	now := float64(time.Now().UnixMicro()) / 1e6
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":"+id, "info", info, "busy", "1", "beat", fmt.Sprint(now), "quiet", "false").Err())
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":"+id+":workers", "tid-1",
		fmt.Sprintf(`{"queue":%s,"payload":%s,"run_at":%f,"progress":{"fraction":0.5,"message":%s}}`, q, payload, now, q)).Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":processes", id).Err())
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":cron_job:far", "name", "far", "cron", "* * * * *", "klass", forge, "queue", forge,
		"args", `[]`, "status", "enabled", "description", forge).Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":cron_jobs", "cron_job:far").Err())
	require.NoError(c.t, c.rdb.LPush(ctx, c.ns+":cron_job:far:jid_history", fmt.Sprintf(`{"jid":%s,"enqueued":"2024-01-02T03:04:05Z"}`, q)).Err())
	return bid, w.ID
}

// 9. No stored string reaches the terminal as it is, in any command that prints records: a
// line break cannot start a line of its own (workflow show printed a description's line
// breaks, so a description could forge a row of its table), and no escape sequence, bidi
// control or invalid UTF-8 is sent. Every text field of every kind of record holds forge.
func TestNoStoredStringForgesALineOrReachesTheTerminal(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	bid, wfID := c.seedForgeries()
	forged := regexp.MustCompile(`(?m)^\s*FORGED`)
	for _, cmd := range readCommands(farFixture{goodBID: bid, badBID: bid, wfID: wfID}, "forged-1") {
		code, out, errOut := c.run(cmd.args...)
		assert.Equal(t, 0, code, "%v: %s", cmd.args, errOut)
		terminalSafe(t, fmt.Sprint(cmd.args), out+errOut)
		assert.False(t, forged.MatchString(out), "%v: a stored line break starts a line:\n%s", cmd.args, out)
		assert.NotContains(t, out, "\u202e", "%v: a bidi override is sent", cmd.args)
	}
	// A warning lists the known queues, read from Redis.
	code, _, warn := c.run("jobs", "no-such-queue")
	require.Equal(t, 0, code, warn)
	assert.Contains(t, warn, "known queues:")
	terminalSafe(t, "warning", warn)
	assert.False(t, forged.MatchString(warn), "warning: %s", warn)

	// An action names the queue it moved the job to, read from the stored job.
	code, out, errOut := c.run("requeue", "forged-1", "--set", "dead")
	require.Equal(t, 0, code, errOut)
	terminalSafe(t, "requeue", out)
	assert.False(t, forged.MatchString(out), "requeue: %s", out)
	assert.Contains(t, out, `to queue x\x0aFORGED row\x0d\x1b[2J`)
}

// deepJob is a job of about 2 KB whose args nest 999 deep.
func deepJob(jid string) string {
	return `{"class":"Deep","queue":"deep","jid":"` + jid + `","args":[` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `]}`
}

// 5. Every output path is bounded: --json of a job nested 999 deep is a small multiple of its
// stored bytes (indenting every level made ten 2 KB jobs a 20 MB listing), a --json listing
// prints at most maxListedRaw of each job (exq job --json prints it whole), and a table or a
// job's page for people is bounded whatever the records hold.
func TestEveryOutputIsBoundedWhateverTheRecords(t *testing.T) {
	t.Parallel()
	c := newBigCLIEnv(t)
	ctx := context.Background()
	stored := 0
	for i := range 10 {
		d := deepJob(fmt.Sprintf("deep-%d", i))
		stored += len(d)
		require.NoError(t, c.rdb.LPush(ctx, c.ns+":queue:deep", d).Err())
		for _, s := range []string{"retry", "schedule", "dead"} {
			require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":"+s, redis.Z{Score: float64(1700000000 + i), Member: d}).Err())
		}
	}
	big := strings.Repeat("\x1b", 1<<20) // 6 bytes each as JSON: the worst a string can grow
	q, _ := json.Marshal(big)
	for i := range 5 {
		require.NoError(t, c.rdb.LPush(ctx, c.ns+":queue:big", fmt.Sprintf(`{"class":%s,"queue":%s,"jid":"big-%d","args":[%s],"error_message":%s}`, q, q, i, q, q)).Err())
	}
	require.NoError(t, c.rdb.SAdd(ctx, c.ns+":queues", "deep", "big").Err())
	require.NoError(t, c.rdb.HSet(ctx, c.ns+":cron_job:deep", "name", "deep", "cron", "* * * * *", "klass", "K", "queue", "deep",
		"args", "["+string(q)+"]", "status", "enabled", "description", big).Err())
	require.NoError(t, c.rdb.SAdd(ctx, c.ns+":cron_jobs", "cron_job:deep").Err())

	size := func(args ...string) int {
		t.Helper()
		code, out, errOut := c.run(args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		if args[len(args)-1] == "--json" {
			require.True(t, json.Valid([]byte(out)), "%v is JSON", args)
		}
		t.Logf("exq %v: %d bytes", args, len(out))
		return len(out)
	}
	// Nesting: linear in what is stored (raw as a JSON string, args compact past 4 levels).
	for _, args := range [][]string{{"jobs", "deep"}, {"retries"}, {"scheduled"}, {"dead"}} {
		n := size(append(args, "--json")...)
		assert.Less(t, n, 3*stored+10*1024, "%v --json: %d bytes for %d stored", args, n, stored)
	}
	n := size("job", "deep-0", "--json")
	assert.Less(t, n, 3*len(deepJob("deep-0"))+4096, "job --json")

	// Size: a listing prints at most maxListedRaw (and cut fields) of each job.
	n = size("jobs", "big", "--json")
	assert.Less(t, n, 5*(6*maxListedRaw+6*5*maxListedField+4096), "jobs big --json: %d bytes", n)
	var listed []jobJSON
	c.json(&listed, "jobs", "big")
	require.Len(t, listed, 5)
	assert.Greater(t, listed[0].RawBytes, 4<<20)
	assert.Contains(t, listed[0].ArgsError, "exq job big-4 --json prints it whole")

	n = size("cron", "list", "--json")
	assert.Less(t, n, 6*(1<<20)+4*maxListedRaw, "cron list --json: the args are left out, the description stays")

	// Tables and pages for people: bounded whatever the records hold.
	for _, args := range [][]string{{"jobs", "deep"}, {"jobs", "big"}, {"dead"}, {"job", "deep-0"}, {"job", "big-0"}, {"cron", "list"}} {
		n := size(args...)
		assert.Less(t, n, 256<<10, "%v: %d bytes", args, n)
	}
}

// 4. workflow show names each parent once and lists at most maxParentsListed per job, and
// says so (a 1.9 MB graph whose parent fields repeat one name 3 000 times printed 11.7 MB).
func TestWorkflowShowNamesEachParentOnceAndIsBounded(t *testing.T) {
	t.Parallel()
	c := newBigCLIEnv(t)
	ctx := context.Background()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: c.url, Namespace: c.ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer cl.Close()
	store := func(parents func(i int) []string) string {
		jobs := []exq.WorkflowJob{{Name: "j000", Queue: "q", Class: "W"}}
		for i := 1; i < 300; i++ {
			jobs = append(jobs, exq.WorkflowJob{Name: fmt.Sprintf("j%03d", i), Queue: "q", Class: "W", DependsOn: []string{"j000"}})
		}
		w, err := cl.EnqueueWorkflow(ctx, exq.WorkflowOptions{}, jobs)
		require.NoError(t, err)
		var fields []any
		for i := 1; i < 300; i++ {
			fields = append(fields, fmt.Sprintf("p:j%03d", i), strings.Join(parents(i), "\n"))
		}
		require.NoError(t, c.rdb.HSet(ctx, c.ns+":wf:"+w.ID+":graph", fields...).Err())
		return w.ID
	}
	repeated := store(func(int) []string {
		p := make([]string, 3000)
		for k := range p {
			p[k] = "j000"
		}
		return p
	})
	dense := store(func(i int) []string {
		p := make([]string, i)
		for k := range p {
			p[k] = fmt.Sprintf("j%03d", k)
		}
		return p
	})
	const bound = 300 * (maxParentsListed*12 + 400)
	for _, id := range []string{repeated, dense} {
		code, out, errOut := c.run("workflow", "show", id, "--json")
		require.Equal(t, 0, code, errOut)
		assert.Less(t, len(out), bound, "--json: %d bytes", len(out))
		t.Logf("workflow show %s --json: %d bytes", id, len(out))
		code, out, errOut = c.run("workflow", "show", id)
		require.Equal(t, 0, code, errOut)
		assert.Less(t, len(out), 300*200, "table: %d bytes", len(out))
	}
	var wf workflowJSON
	c.json(&wf, "workflow", "show", repeated)
	assert.Equal(t, 299*2999, wf.RepeatedParents)
	assert.Equal(t, []string{"j000"}, wf.Jobs[299].DependsOn)
	_, out, _ := c.run("workflow", "show", repeated)
	assert.Contains(t, out, "(the stored graph names a parent more than once: 896701 repeats, each listed once)")

	c.json(&wf, "workflow", "show", dense)
	assert.Len(t, wf.Jobs[299].DependsOn, maxParentsListed)
	assert.Equal(t, 299, wf.Jobs[299].DependsOnTotal)
	_, out, _ = c.run("workflow", "show", dense)
	assert.Contains(t, out, "(199 jobs wait for more than 100 parents: --json lists the first 100 and how many there are)")
}
