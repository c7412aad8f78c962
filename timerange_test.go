package exq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A due time past year 9999 is refused by every call that takes one, with ErrInvalidJob, and
// nothing is written: year 294270 once overflowed UnixMicro into a negative score, a job due
// at once. The last second of year 9999 is scheduled with its own (positive) score.
func TestDueTimesAfterYear9999AreRefusedNeverWrapped(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	defer c.Close()
	far := time.Date(294270, 1, 1, 0, 0, 0, 0, time.UTC)
	justAfter := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := []struct {
		name string
		call func(at time.Time) error
	}{
		{"EnqueueAt", func(at time.Time) error { _, err := c.EnqueueAt(ctx, "q", "W", at, nil); return err }},
		{"EnqueueAll", func(at time.Time) error {
			_, err := c.EnqueueAll(ctx, []JobSpec{{Queue: "q", Class: "W", At: at}})
			return err
		}},
		{"PrepareJob", func(at time.Time) error {
			_, err := PrepareJob(time.Now(), JobSpec{Queue: "q", Class: "W", At: at})
			return err
		}},
		{"PushRelayed", func(at time.Time) error {
			j, err := PrepareJob(time.Now(), JobSpec{Queue: "q", Class: "W"})
			require.NoError(t, err)
			rs, err := c.PushRelayed(ctx, time.Minute, []RelayedJob{{Job: j.Raw(), At: at}})
			require.NoError(t, err)
			return rs[0].Err
		}},
	}
	for _, tc := range calls {
		for _, at := range []time.Time{far, justAfter} {
			err := tc.call(at)
			require.ErrorIs(t, err, ErrInvalidJob, "%s at %s", tc.name, at)
			assert.Contains(t, err.Error(), "after year 9999", tc.name)
		}
	}
	assert.Zero(t, v.zcard(v.keys.Schedule()), "nothing scheduled")
	assert.Empty(t, v.list(v.keys.Queue("q")), "nothing due at once")

	last := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	_, err = c.EnqueueAt(ctx, "q", "W", last, nil)
	require.NoError(t, err)
	z := v.zset(v.keys.Schedule())
	require.Len(t, z, 1)
	assert.InDelta(t, float64(last.Unix()), z[0].Score, 1, "the score is the time, not a wrapped one")
}
