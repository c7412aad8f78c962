package exqtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqtest"
)

// The Fake takes a debounced Enqueue (recorded as a job with its key) and refuses Debounce
// where a real enqueue does.
func TestFakeRefusesDebounceWhereARealEnqueueDoes(t *testing.T) {
	ctx := context.Background()
	f := exqtest.NewFake()
	debounce := exq.Debounce("k", time.Second, time.Minute)
	_, err := f.Enqueue(ctx, "q", "W", nil, debounce)
	require.NoError(t, err)
	require.Len(t, f.Jobs(), 1)
	assert.Equal(t, "k", f.Jobs()[0].DebounceKey())
	_, err = f.EnqueueIn(ctx, "q", "W", time.Minute, nil, debounce)
	assert.ErrorIs(t, err, exq.ErrInvalidJob)
	_, err = f.EnqueueAll(ctx, []exq.JobSpec{{Queue: "q", Class: "A", Options: []exq.EnqueueOption{debounce}}})
	assert.ErrorIs(t, err, exq.ErrInvalidJob)
	_, err = f.Enqueue(ctx, "q", "W", nil, exq.Debounce("k", 0, time.Minute))
	assert.ErrorIs(t, err, exq.ErrInvalidJob)
	assert.Len(t, f.Jobs(), 1, "nothing more recorded")
}
