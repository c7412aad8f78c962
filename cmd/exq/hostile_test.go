package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil/hostile"
)

// seedHostile puts every hostile fixture in a queue, the retry, schedule and dead sets, a
// process with its running job, and a periodic job.
func (c *cliEnv) seedHostile() {
	c.t.Helper()
	ctx := context.Background()
	var members []redis.Z
	for i, name := range hostile.Names() {
		members = append(members, redis.Z{Score: float64(1700000000 + i), Member: hostile.Member(name)})
		require.NoError(c.t, c.rdb.LPush(ctx, c.ns+":queue:default", hostile.Member(name)).Err())
	}
	for _, s := range []string{"retry", "schedule", "dead"} {
		require.NoError(c.t, c.rdb.ZAdd(ctx, c.ns+":"+s, members...).Err())
	}
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":queues", "default").Err())
	// Keys (docs/keys.md): a key name written by hand with escapes and a line break, and a
	// key whose waiting jobs are every fixture.
	for _, k := range []string{"k\nforged\x1b[2J\x9b2J", "evil"} {
		require.NoError(c.t, c.rdb.ZAdd(ctx, c.ns+":key_ready:default", redis.Z{Score: 0, Member: k}).Err())
	}
	for _, name := range hostile.Names() {
		require.NoError(c.t, c.rdb.RPush(ctx, c.ns+":key_jobs:default:evil", hostile.Member(name)).Err())
		require.NoError(c.t, c.rdb.RPush(ctx, c.ns+":key_jobs:default:k\nforged\x1b[2J\x9b2J", hostile.Member(name)).Err())
	}
	id := "evil\x1b]0;pwned\x07:1:abc"
	info := `{"hostname":"h\u001b[2J","started_at":1700000000,"pid":1,"tag":"t\u001b]52;c;eA==\u0007","concurrency":5,"queues":["q\u009b2J"],"labels":[],"identity":"x"}`
	payload, _ := json.Marshal(hostile.Member("escapes.json"))
	now := float64(time.Now().UnixMicro()) / 1e6
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":"+id, "info", info, "busy", "1", "beat", fmt.Sprint(now), "quiet", "false").Err())
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":"+id+":workers", "tid-1", fmt.Sprintf(`{"queue":"default","payload":%s,"run_at":%f}`, payload, now)).Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":processes", id).Err())
	require.NoError(c.t, c.rdb.HSet(ctx, c.ns+":cron_job:evil", "name", "evil", "cron", "* * * * *", "klass", "K\x1b[2J", "queue", "default",
		"args", `["\u001b]0;x\u0007"]`, "status", "enabled", "description", "d\x1b]52;c;eA==\x07").Err())
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":cron_jobs", "cron_job:evil").Err())
}

// terminalSafe fails when out holds a byte a terminal acts on: C0 controls but for line
// breaks and tabs, DEL, C1 controls, or invalid UTF-8.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	assert.True(t, utf8.ValidString(out), "%s: invalid UTF-8 in %q", what, out)
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Errorf("%s: control character %U reaches the terminal in %q", what, r, out)
			return
		}
	}
}

// Every listing and exq job, in tables and as --json, with every hostile fixture stored:
// nothing a terminal acts on is printed, --json is valid JSON that decodes to the stored
// strings, and nothing fails (a 10 000-deep job made --json print nothing and exit 1).
func TestHostileStringsNeverReachTheTerminalAndJSONStaysJSON(t *testing.T) {
	c := newCLIEnv(t)
	c.seedHostile()
	for _, args := range [][]string{
		{"queues"}, {"jobs", "default", "--limit", "50"}, {"retries", "--limit", "50"}, {"scheduled", "--limit", "50"},
		{"dead", "--limit", "50"}, {"busy"}, {"processes"}, {"cron", "list"}, {"job", "esc-1"}, {"job", "deep-1"},
		{"job", "badutf8-1"}, {"job", "newline-1"}, {"stats"},
	} {
		code, out, errOut := c.run(args...)
		assert.Equal(t, 0, code, "%v: %s", args, errOut)
		terminalSafe(t, fmt.Sprint(args), out)
		terminalSafe(t, fmt.Sprint(args)+" stderr", errOut)
		assert.Less(t, len(out), 1<<20, "%v: bounded output", args)

		code, out, errOut = c.run(append(args, "--json")...)
		assert.Equal(t, 0, code, "%v --json: %s", args, errOut)
		assert.True(t, json.Valid([]byte(out)) && utf8.ValidString(out), "%v --json is JSON: %.300q", args, out)
		terminalSafe(t, fmt.Sprint(args)+" --json", out)
	}

	// Exact bytes: the escapes are shown, not sent.
	code, out, _ := c.run("job", "esc-1")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "CLASS      Evil\\x1b]0;pwned\\x07\n")
	assert.Contains(t, out, "ERROR      E\\x1b[31m: boom\\x1b]0;title\\x07\\x0d forged line\n")
	code, out, _ = c.run("processes")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "evil\\x1b]0;pwned\\x07:1:abc")

	// --json keeps the exact strings, and the exact bytes of a document that is no UTF-8.
	var job map[string]any
	c.json(&job, "job", "esc-1")
	assert.Equal(t, "Evil\x1b]0;pwned\x07", job["job"].(map[string]any)["class"])
	c.json(&job, "job", "badutf8-1")
	b64, _ := job["job"].(map[string]any)["raw_base64"].(string)
	raw, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	assert.Equal(t, hostile.Member("invalid-utf8.json"), string(raw))
	c.json(&job, "job", "deep-1")
	assert.Nil(t, job["job"].(map[string]any)["args"])
	assert.Contains(t, job["job"].(map[string]any)["args_error"], "nested 9998 levels deep")

	// Warnings and errors on stderr are escaped too.
	code, _, errOut := c.run("jobs", "typo\x1b]0;x\x07")
	assert.Equal(t, 0, code)
	assert.Contains(t, errOut, `typo\x1b]0;x`)
	terminalSafe(t, "warning", errOut)
	code, _, errOut = c.run("job", "no-such\x1b[2J")
	assert.Equal(t, 1, code)
	assert.Equal(t, "exq job: job not found: no job no-such\\x1b[2J waiting, scheduled, in retry, dead or running, and no result stored (a job that succeeded leaves nothing else)\n", errOut)
	assert.False(t, strings.ContainsRune(errOut, 0x1b))
}

// A stored document without a jid (not JSON, or not a job) is listed with its Ref, and
// exq job and exq delete take that Ref: each can be looked at and removed one by one.
func TestUndecodableMembersAreRemovedOneByOneByTheirRef(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	bad := []string{hostile.Member("raw-escapes.txt"), hostile.Member("not-json.txt"), hostile.Member("nul-byte.json")}
	for i, m := range bad {
		require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":dead", redis.Z{Score: float64(1700000000 + i), Member: m}).Err())
		require.NoError(t, c.rdb.LPush(ctx, c.ns+":queue:default", m).Err())
	}
	require.NoError(t, c.rdb.SAdd(ctx, c.ns+":queues", "default").Err())
	var listed []map[string]any
	c.json(&listed, "dead")
	require.Len(t, listed, len(bad))
	code, out, errOut := c.run("dead")
	require.Equal(t, 0, code, errOut)
	for i, m := range bad {
		ref := exq.RefOf(m)
		assert.Contains(t, out, ref, "the table names member %d by its Ref", i)
		code, shown, errOut := c.run("job", ref)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, shown, "dead since")
		code, _, errOut = c.run("delete", ref, "--set", "dead")
		require.Equal(t, 0, code, errOut)
		assert.EqualValues(t, len(bad)-i-1, c.rdb.ZCard(ctx, c.ns+":dead").Val(), "one removed")
		code, _, errOut = c.run("delete", ref)
		require.Equal(t, 0, code, "%s: and from the queue: %s", ref, errOut)
	}
	assert.Zero(t, c.rdb.LLen(ctx, c.ns+":queue:default").Val())
}
