package exqtest_test

import (
	"context"
	"testing"
	"time"

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

// TestInlineReleasesTheLockOfAJobWhoseArgsDoNotDecode: such a job goes to the dead set at once
// on a node, whatever its retries, so its UntilSuccess lock is released and the job can be
// enqueued again, fixed.
func TestInlineReleasesTheLockOfAJobWhoseArgsDoNotDecode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inline := exqtest.NewInline(nil)
	ran := 0
	require.NoError(t, exq.AddWorker(inline, func(context.Context, *exq.Job, resize) error { ran++; return nil }))
	unique := exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Hour, Token: "resize"})
	_, err := inline.Enqueue(ctx, "default", "App.Resize", []any{1, 2}, unique)
	require.ErrorIs(t, err, exq.ErrArgsDecode)
	_, err = exq.EnqueueArgs(ctx, inline, resize{W: 64}, unique)
	require.NoError(t, err, "the lock was released")
	assert.Equal(t, 1, ran)
}

// ArgsOf gives a typed test the args of the jobs of its type's class, decoded as a typed
// worker decodes them, with no class string written; a job whose args do not fit is an error
// naming it, matching exq.ErrArgsDecode.
func TestArgsOfDecodesTheRecordedJobsOfATypesClass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := exqtest.NewFake()
	none, err := exqtest.ArgsOf[resize](fake)
	require.NoError(t, err)
	assert.Empty(t, none)
	_, err = exq.EnqueueArgs(ctx, fake, resize{W: 64})
	require.NoError(t, err)
	_, err = fake.Enqueue(ctx, "default", "App.Other", []any{1})
	require.NoError(t, err)
	_, err = exq.EnqueueArgs(ctx, fake, resize{W: 128}, exq.OnQueue("images"))
	require.NoError(t, err)
	got, err := exqtest.ArgsOf[resize](fake)
	require.NoError(t, err)
	assert.Equal(t, []resize{{W: 64}, {W: 128}}, got)

	bad, err := fake.Enqueue(ctx, "default", "App.Resize", []any{1, 2})
	require.NoError(t, err)
	got, err = exqtest.ArgsOf[resize](fake)
	require.ErrorIs(t, err, exq.ErrArgsDecode)
	assert.Contains(t, err.Error(), bad)
	assert.Equal(t, []resize{{W: 64}, {W: 128}}, got, "the args decoded before the bad job")
}
