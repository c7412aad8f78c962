package exq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sumArgs struct{ A, B int }

func TestWaitResultGetsTheResultAJobOnAnotherNodeStored(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{Queues: []Queue{{Name: "q"}}, ResultTTL: time.Minute})
	require.NoError(t, e.Register("Sum", TypedResult(func(ctx context.Context, job *Job, a sumArgs) (int, error) {
		return a.A + a.B, nil
	})))
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	jid, err := c.Enqueue(ctx, "q", "Sum", []any{sumArgs{A: 2, B: 40}})
	require.NoError(t, err)
	var sum int
	require.NoError(t, c.WaitResult(ctx, jid, &sum))
	assert.Equal(t, 42, sum)
	require.NoError(t, c.Result(ctx, jid, &sum))
	ttl := v.rdb.PTTL(ctx, v.keys.Result(jid)).Val()
	assert.True(t, ttl > 0 && ttl <= time.Minute, "kept for ResultTTL: %s", ttl)
}

func TestWaitResultEndsWithItsContext(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.WaitResult(ctx, "nobody", nil) }()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.ErrorIs(t, c.Result(context.Background(), "nobody", nil), ErrNoResult)
}

func TestSetResultRefusesAResultOverTheLimitAndStoresNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{Queues: []Queue{{Name: "q"}}, ResultMaxBytes: 100})
	errs := make(chan error, 2)
	require.NoError(t, e.Register("Big", WorkerFunc(func(ctx context.Context, job *Job) error {
		errs <- SetResult(ctx, strings.Repeat("x", 200))
		errs <- SetResult(ctx, "small")
		return nil
	})))
	jid, err := e.Enqueue(context.Background(), "q", "Big", nil)
	require.NoError(t, err)
	big := <-errs
	require.ErrorIs(t, big, ErrResultTooLarge)
	assert.Contains(t, big.Error(), "more than ResultMaxBytes (100)")
	require.NoError(t, <-errs)
	var s string
	require.NoError(t, e.WaitResult(context.Background(), jid, &s))
	assert.Equal(t, "small", s)
	assert.ErrorIs(t, SetResult(context.Background(), 1), ErrNoResult, "outside a job")
}
