package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	assert.Contains(t, out, "1m3") // the oldest row's age, 1m30s and counting

	var s map[string]any
	c.json(&s, "outbox", "status")
	assert.Equal(t, true, s["reported"])
	assert.Equal(t, 42.0, s["backlog"])
	assert.Equal(t, 1.0, s["failed"])
	assert.InDelta(t, 90000, s["oldest_age_ms"], 1000)
	assert.NotEmpty(t, s["oldest_at"])
	assert.Equal(t, false, s["stale"])

	// What is read from Redis is untrusted: a field that is not a count is an error naming it.
	require.NoError(t, c.rdb.HSet(ctx, c.ns+":outbox", "backlog", "\x1b[31mlots").Err())
	code, _, errOut = c.run("outbox", "status")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "backlog is not a count")
	assert.NotContains(t, errOut, "\x1b")
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
