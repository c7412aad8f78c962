package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// exq keys QUEUE lists the top keys by jobs waiting (a table, or --json in the documented
// schema); exq keys QUEUE KEY lists that key's jobs, next to run first; exq keys pause and
// resume change the key's state; a bad KEY is a usage error and writes nothing.
func TestKeysListsTopKeysTheirJobsAndPausesThem(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	ctx := context.Background()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: c.url, Namespace: c.ns})
	require.NoError(t, err)
	defer cl.Close()
	var jids []string
	for range 3 {
		jid, err := cl.Enqueue(ctx, "sync", "Sync", []any{1}, exq.Key("tenant-1"))
		require.NoError(t, err)
		jids = append(jids, jid)
	}
	_, err = cl.Enqueue(ctx, "sync", "Sync", []any{2}, exq.Key("tenant-2"))
	require.NoError(t, err)

	code, out, errOut := c.run("keys", "sync")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?s)^KEY +WAITING +RUNNING +DELAYED +STATE\ntenant-1 +3 +0 +0 +ready\ntenant-2 +1 +0 +0 +ready\n$`, out)

	code, _, errOut = c.run("keys", "pause", "sync", "tenant-1")
	require.Equal(t, 0, code, errOut)
	var rep map[string]any
	c.json(&rep, "keys", "sync", "--top", "1")
	assert.Equal(t, map[string]any{"queue": "sync", "keys": []any{map[string]any{"key": "tenant-1", "waiting": 3.0, "running": 0.0,
		"delayed": 0.0, "state": "paused"}}, "ready_keys": 1.0, "blocked_keys": 0.0, "held_keys": 0.0, "paused_keys": 1.0,
		"delayed_jobs": 0.0, "sampled": false}, rep)
	code, _, errOut = c.run("keys", "resume", "sync", "tenant-1")
	require.Equal(t, 0, code, errOut)
	c.json(&rep, "keys", "sync", "--top", "1")
	assert.Equal(t, 2.0, rep["ready_keys"])

	var jobs []map[string]any
	c.json(&jobs, "keys", "sync", "tenant-1")
	require.Len(t, jobs, 3)
	for i, j := range jobs {
		assert.Equal(t, jids[i], j["jid"], "next to run first")
	}

	before := c.keys()
	for _, args := range [][]string{{"keys", "pause", "sync", ""}, {"keys", "sync", "a\x01b"}, {"keys", "sync", "--top", "0"}} {
		code, _, errOut := c.run(args...)
		assert.Equal(t, 2, code, "%q: %s", args, errOut)
	}
	assert.ElementsMatch(t, before, c.keys())
}
