package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// exq job shows a debounced job as scheduled, with its debounce key on a line of its own.
func TestJobShowsADebouncedJobAsScheduledWithItsKey(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	ctx := context.Background()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: c.url, Namespace: c.ns})
	require.NoError(t, err)
	defer cl.Close()
	jid, err := cl.Enqueue(ctx, "default", "MyApp.Reindex", []any{"doc-7"}, exq.Debounce("reindex:doc-7", time.Hour, time.Hour))
	require.NoError(t, err)
	code, out, errOut := c.run("job", jid)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "STATE      scheduled for ")
	assert.Contains(t, out, "DEBOUNCE   reindex:doc-7\n")
	assert.Contains(t, out, `"debounce_key": "reindex:doc-7"`)
}
