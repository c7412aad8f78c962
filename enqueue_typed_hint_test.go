package exq

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hintArgs is a JobArgs whose JSON is an object, not a list.
type hintArgs struct {
	N int `json:"n"`
}

func (hintArgs) Class() string { return "Hint.Args" }

// A typed value given to Enqueue (which takes a class and a list) is refused, as before, and
// the error says which call takes it: "args must be a list … got exq.hintArgs" alone left a
// newcomer who started typed guessing. Nothing is written.
func TestEnqueueOfATypedValueSaysToUseEnqueueArgs(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Enqueue(ctx, "default", "Hint.Args", hintArgs{N: 1})
	require.ErrorIs(t, err, ErrInvalidJob)
	assert.Contains(t, err.Error(), "args must be a list (a slice or array), got exq.hintArgs; a exq.hintArgs is a JobArgs: exq.EnqueueArgs")
	_, err = c.EnqueueIn(ctx, "default", "Hint.Args", 0, &hintArgs{N: 1})
	require.True(t, errors.Is(err, ErrInvalidJob), "%v", err)
	assert.Contains(t, err.Error(), "exq.EnqueueArgs")
	// Positional args that are not a list say nothing of JobArgs.
	_, err = c.Enqueue(ctx, "default", "Plain", map[string]int{"n": 1})
	require.ErrorIs(t, err, ErrInvalidJob)
	assert.NotContains(t, err.Error(), "JobArgs")
	keys, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "nothing written")
}
