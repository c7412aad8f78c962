package exqtest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqtest"
	"github.com/exqgo/exq/internal/testutil"
)

type resize struct {
	W int `json:"w"`
}

func (resize) Class() string { return "App.Resize" }

// TestDoublesTakeTypedSpecsAndRefuseWhatEnqueueRefuses: EnqueueAll takes a typed JobSpec as a
// real client does (class and queue from the args), while Enqueue, EnqueueIn and EnqueueAt
// still refuse an empty class or queue in a real client's words.
func TestDoublesTakeTypedSpecsAndRefuseWhatEnqueueRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := exqtest.NewFake()
	_, err := fake.EnqueueAll(ctx, []exq.JobSpec{{Args: resize{W: 64}}})
	require.NoError(t, err)
	jobs := fake.JobsOfClass("App.Resize")
	require.Len(t, jobs, 1)
	assert.Equal(t, exq.DefaultQueue, jobs[0].Queue)
	assert.JSONEq(t, `[{"w":64}]`, string(jobs[0].Args))

	rdb, ns := testutil.Redis(t)
	real, err := exq.NewClient(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns})
	require.NoError(t, err)
	defer real.Close()
	inline := exqtest.NewInline(nil)
	for _, tc := range []struct{ queue, class string }{{"", "App.Resize"}, {"default", ""}, {"", ""}} {
		_, want := real.Enqueue(ctx, tc.queue, tc.class, resize{W: 1})
		require.ErrorIs(t, want, exq.ErrInvalidJob)
		for _, d := range []exq.Enqueuer{fake, inline} {
			_, err := d.Enqueue(ctx, tc.queue, tc.class, resize{W: 1})
			require.ErrorIs(t, err, exq.ErrInvalidJob)
			assert.EqualError(t, err, want.Error())
		}
	}
}
