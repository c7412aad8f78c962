package main

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exq job shows an iterable job's saved state (it-<jid>, as Sidekiq 7.3 or an exq Iteration
// wrote it) in a line of its own and as "iteration" in --json.
func TestJobShowsAnIterableJobsSavedState(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":retry", redis.Z{Score: 4102444800, Member: failedJob("retry-1")}).Err())
	require.NoError(t, c.rdb.HSet(ctx, c.ns+":it-retry-1", "ex", "2", "c", `{"after":"u_41"}`, "rt", "12.5", "cancelled", "1700000400").Err())
	code, out, errOut := c.run("job", "retry-1")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^ITERATION +cursor \{"after":"u_41"\}, run 2, 12\.5s iterating, cancelled 2023-11-14T22:20:00Z$`, out)

	var got struct {
		Iteration struct {
			Executions int            `json:"executions"`
			Cursor     map[string]any `json:"cursor"`
			RuntimeNS  int64          `json:"runtime_ns"`
			Cancelled  string         `json:"cancelled"`
		} `json:"iteration"`
	}
	c.json(&got, "job", "retry-1")
	assert.Equal(t, 2, got.Iteration.Executions)
	assert.Equal(t, map[string]any{"after": "u_41"}, got.Iteration.Cursor)
	assert.EqualValues(t, 12_500_000_000, got.Iteration.RuntimeNS)
	assert.Equal(t, "2023-11-14T22:20:00Z", got.Iteration.Cancelled)

	require.NoError(t, c.rdb.Del(ctx, c.ns+":it-retry-1").Err())
	_, out, _ = c.run("job", "retry-1")
	assert.NotContains(t, out, "ITERATION", "no line for a job without a state")
}

// exq cancel of a job that waits (here in the retry set) moves it to the dead set.
func TestCancelOfAWaitingJobMovesItToDead(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":retry", redis.Z{Score: 4102444800, Member: failedJob("retry-1")}).Err())
	code, out, errOut := c.run("cancel", "retry-1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "cancelled retry-1: it was waiting, and is in the dead set now")
	assert.Zero(t, c.rdb.ZCard(ctx, c.ns+":retry").Val())
	assert.EqualValues(t, 1, c.rdb.ZCard(ctx, c.ns+":dead").Val())
	assert.Zero(t, c.rdb.Exists(ctx, c.ns+":it-retry-1").Val(), "no flag left for a job buried where it waited")
}
