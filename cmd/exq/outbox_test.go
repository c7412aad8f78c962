package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

func TestOutboxStatusShowsWhatTheRelaysReported(t *testing.T) {
	c := newCLIEnv(t)
	code, out, errOut := c.run("outbox", "status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "no outbox relay has reported")

	ctx := context.Background()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{Redis: c.rdb, Namespace: c.ns})
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ReportOutbox(ctx, 42, 1, 90*time.Second))
	code, out, errOut = c.run("outbox", "status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "BACKLOG")
	assert.Contains(t, out, "42")
	assert.Contains(t, out, "1m30s") // the oldest row's age at the report

	var s map[string]any
	c.json(&s, "outbox", "status")
	assert.Equal(t, true, s["reported"])
	assert.Equal(t, 42.0, s["backlog"])
	assert.Equal(t, 1.0, s["failed"])
	assert.InDelta(t, 90000, s["oldest_age_ms"], 1000)
	assert.NotEmpty(t, s["oldest_at"])
	assert.Equal(t, false, s["stale"])

	// What is read from Redis is untrusted: a field that is not a count or a time spoils its own
	// field, never the answer (a time past year 9999 once made --json print nothing, then an
	// error for the whole report): it is null or zero, named in "invalid" and warned about, and
	// the other fields are shown.
	for _, f := range []string{"updated_at", "oldest_at"} {
		require.NoError(t, cl.ReportOutbox(ctx, 42, 1, 90*time.Second))
		require.NoError(t, c.rdb.HSet(ctx, c.ns+":outbox", f, "1e12").Err())
		var s map[string]any
		code, out, errOut := c.run("--json", "outbox", "status")
		require.Equal(t, 0, code, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &s), out)
		assert.Equal(t, 42.0, s["backlog"], f)
		assert.Nil(t, s[f], f)
		assert.Equal(t, []any{c.ns + `:outbox field ` + f + ` is not a time: "1e12"`}, s["invalid"], f)
		assert.Contains(t, errOut, f+" is not a time", f)
		code, out, errOut = c.run("outbox", "status")
		assert.Equal(t, 0, code, errOut)
		assert.Regexp(t, `(?m)^42 +- +1 +`, out, f)
	}
	require.NoError(t, c.rdb.HSet(ctx, c.ns+":outbox", "backlog", "\x1b[31mlots").Err())
	code, out, errOut = c.run("outbox", "status")
	assert.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^0 +- +1 +`, out)
	assert.Contains(t, errOut, "backlog is not a count")
	assert.NotContains(t, errOut, "\x1b")
}

// The table and --json say the same age of the oldest row: its age when the relay reported,
// not now. A report made ten minutes ago of a row that had waited 90 s shows 1m30s in both
// (the table once said 11m30s, --json 90 000 ms), marked stale.
func TestOutboxStatusTableAndJSONAgreeOnTheOldestAge(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	at := time.Now().Add(-10 * time.Minute)
	require.NoError(t, c.rdb.HSet(ctx, c.ns+":outbox", "backlog", 1, "failed", 0,
		"oldest_at", strconv.FormatInt(at.Add(-90*time.Second).Unix(), 10), "updated_at", strconv.FormatInt(at.Unix(), 10)).Err())
	code, out, errOut := c.run("outbox", "status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "OLDEST AT REPORT")
	assert.Contains(t, out, "1m30s")
	assert.NotContains(t, out, "11m30s")
	assert.Contains(t, out, "stale")
	var s map[string]any
	c.json(&s, "outbox", "status")
	assert.Equal(t, 90000.0, s["oldest_age_ms"])
	assert.Equal(t, true, s["stale"])
}

// runWithPath runs the exq binary with PATH set to path.
func runWithPath(t *testing.T, path string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(exqBin, args...)
	cmd.Env = []string{"PATH=" + path, "HOME=" + os.Getenv("HOME")}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errOut.String()
}

func TestOutboxRelayRunsTheExqOutboxProgram(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in program is a shell script")
	}
	dir := t.TempDir()
	code, _, errOut := runWithPath(t, dir, "outbox", "relay", "--pg-url", "postgres://x")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "exq-outbox program is not on $PATH")
	assert.Contains(t, errOut, "go install github.com/exqgo/exq/exqpg/cmd/exq-outbox@latest")

	script := "#!/bin/sh\necho \"args: $*\"\nexit 3\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "exq-outbox"), []byte(script), 0o755))
	code, out, errOut := runWithPath(t, dir, "outbox", "relay", "--pg-url", "postgres://x", "--batch-size", "5")
	assert.Equal(t, 3, code, "its exit status is exq's")
	assert.Equal(t, "args: relay --pg-url postgres://x --batch-size 5\n", out, "every argument unchanged")
	assert.Empty(t, errOut)
}
