package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGroupContextKeepsValuesAndTheLatestDeadlineOnly(t *testing.T) {
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "writer")
	early, cancel1 := context.WithTimeout(base, time.Minute)
	defer cancel1()
	late, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	cancelled, cancel3 := context.WithCancel(context.Background())
	cancel3()

	ctx, cancel := groupContext([]*groupCall{{ctx: early}, {ctx: late}})
	defer cancel()
	assert.Equal(t, "writer", ctx.Value(key{}))
	d, ok := ctx.Deadline()
	require.True(t, ok)
	ld, _ := late.Deadline()
	assert.Equal(t, ld, d, "the latest deadline of the group")

	cancel1()
	assert.NoError(t, ctx.Err(), "the writer's cancellation does not end the group's write")

	ctx2, cancel := groupContext([]*groupCall{{ctx: early}, {ctx: cancelled}})
	defer cancel()
	_, ok = ctx2.Deadline()
	assert.False(t, ok, "a caller without a deadline: none")
	assert.NoError(t, ctx2.Err())
}
