package exqtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqtest"
)

func unique(until exq.UniqueUntilMode, d time.Duration) exq.EnqueueOption {
	return exq.Unique(exq.UniqueOpts{Until: until, For: d})
}

func TestFakeReportsUniqueConflictsWithTheHoldersJID(t *testing.T) {
	ctx := context.Background()
	f := exqtest.NewFake()
	first, err := f.Enqueue(ctx, "q", "Sync", []any{map[string]any{"a": 1, "b": 2}}, unique(exq.UntilSuccess, time.Hour))
	require.NoError(t, err)
	// The same args in another key order have the same default token, as in Redis.
	holder, err := f.Enqueue(ctx, "q", "Sync", []any{map[string]any{"b": 2, "a": 1}}, unique(exq.UntilSuccess, time.Hour))
	require.ErrorIs(t, err, exq.ErrUniqueConflict)
	assert.Equal(t, first, holder)
	var conflict *exq.UniqueConflictError
	require.True(t, errors.As(err, &conflict))
	token, terr := exq.DefaultUniqueToken("q", "Sync", json.RawMessage(`[{"a":1,"b":2}]`))
	require.NoError(t, terr)
	assert.Equal(t, exq.UniqueConflictError{JID: first, Token: token}, *conflict)
	assert.Len(t, f.Jobs(), 1, "a conflict records nothing")

	_, err = f.Enqueue(ctx, "q", "Sync", []any{2}, unique(exq.UntilSuccess, time.Hour))
	assert.NoError(t, err, "other args, other token")
	_, err = f.EnqueueIn(ctx, "other", "Other", time.Minute, nil, exq.Unique(exq.UniqueOpts{Until: exq.UntilStart, For: time.Hour, Token: "t"}))
	require.NoError(t, err)
	h, err := f.Enqueue(ctx, "q", "Sync", []any{3}, exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Hour, Token: "t"}))
	assert.ErrorIs(t, err, exq.ErrUniqueConflict, "a given token conflicts whatever the queue, class and args")
	assert.Equal(t, f.JobsOfClass("Other")[0].JID, h)

	again, err := f.Enqueue(ctx, "q", "Sync", []any{2}, unique(exq.UntilSuccess, time.Hour), exq.JID(f.Jobs()[1].JID))
	assert.NoError(t, err, "the holder itself again reads as written")
	assert.Equal(t, f.Jobs()[1].JID, again)
	assert.Len(t, f.Jobs(), 3, "and is not recorded twice")
	_, err = f.Enqueue(ctx, "q", "Sync", []any{1}, exq.Unique(exq.UniqueOpts{For: time.Hour}))
	assert.ErrorIs(t, err, exq.ErrInvalidJob, "the options are checked as exq checks them")
}

func TestFakeCompleteReleasesLocksPerMode(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		until    exq.UniqueUntilMode
		released bool
	}{{exq.UntilSuccess, true}, {exq.UntilStart, true}, {exq.UntilExpiry, false}} {
		t.Run(string(tc.until), func(t *testing.T) {
			f := exqtest.NewFake()
			jid, err := f.Enqueue(ctx, "q", "W", nil, unique(tc.until, time.Hour))
			require.NoError(t, err)
			assert.False(t, f.Complete("someone-else"))
			assert.Equal(t, tc.released, f.Complete(jid))
			_, err = f.Enqueue(ctx, "q", "W", nil, unique(tc.until, time.Hour))
			assert.Equal(t, tc.released, err == nil, "%v", err)
		})
	}
}

func TestFakeLocksExpireOnItsClock(t *testing.T) {
	ctx := context.Background()
	f := exqtest.NewFake()
	once := unique(exq.UntilExpiry, time.Hour)
	_, err := f.Enqueue(ctx, "q", "Report", nil, once)
	require.NoError(t, err)
	f.Advance(59 * time.Minute)
	_, err = f.Enqueue(ctx, "q", "Report", nil, once)
	assert.ErrorIs(t, err, exq.ErrUniqueConflict)
	f.Advance(time.Minute)
	_, err = f.Enqueue(ctx, "q", "Report", nil, once)
	require.NoError(t, err, "at most one per hour")
	jobs := f.Jobs()
	assert.WithinDuration(t, time.Now().Add(time.Hour), jobs[1].EnqueuedAt, time.Minute, "jobs carry the Fake's time")

	// A scheduled job's lock runs from its due time, as in exq.
	_, err = f.EnqueueIn(ctx, "q", "Later", 2*time.Hour, nil, once)
	require.NoError(t, err)
	f.Advance(150 * time.Minute)
	_, err = f.Enqueue(ctx, "q", "Later", nil, once)
	assert.ErrorIs(t, err, exq.ErrUniqueConflict)

	f.Clear()
	_, err = f.Enqueue(ctx, "q", "Later", nil, once)
	assert.NoError(t, err, "Clear forgets the locks too")
}

func TestFakeEnqueueAllReportsConflictsPerJob(t *testing.T) {
	ctx := context.Background()
	f := exqtest.NewFake()
	u := []exq.EnqueueOption{unique(exq.UntilSuccess, time.Hour)}
	res, err := f.EnqueueAll(ctx, []exq.JobSpec{
		{Queue: "q", Class: "W", Args: []any{1}, Options: u},
		{Queue: "q", Class: "W", Args: []any{1}, Options: u},
		{Queue: "q", Class: "W", Args: []any{2}, Options: u},
	})
	require.NoError(t, err)
	require.Len(t, res, 3)
	assert.NoError(t, res[0].Err)
	assert.ErrorIs(t, res[1].Err, exq.ErrUniqueConflict, "an earlier job of the same batch holds the lock")
	assert.Equal(t, res[0].JID, res[1].JID)
	assert.NoError(t, res[2].Err)
	assert.Len(t, f.Jobs(), 2)
}

func TestInlineReleasesLocksAsANodeWould(t *testing.T) {
	ctx := context.Background()
	fail := errors.New("fail")
	var outcome error
	var seen []string
	var in *exqtest.Inline
	in = exqtest.NewInline(map[string]exq.Worker{
		"W": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			// While it runs, a duplicate conflicts unless the lock went at the start.
			_, err := in.Enqueue(ctx, job.Queue, "Dup", nil, exq.Unique(exq.UniqueOpts{Until: exq.UntilStart, For: time.Hour, Token: "tok"}))
			seen = append(seen, map[bool]string{true: "conflict", false: "free"}[errors.Is(err, exq.ErrUniqueConflict)])
			return outcome
		}),
		"Dup": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
	})
	opts := func(until exq.UniqueUntilMode, more ...exq.EnqueueOption) []exq.EnqueueOption {
		return append([]exq.EnqueueOption{exq.Unique(exq.UniqueOpts{Until: until, For: time.Hour, Token: "tok"})}, more...)
	}
	for _, tc := range []struct {
		name      string
		until     exq.UniqueUntilMode
		outcome   error
		more      []exq.EnqueueOption
		whileRuns string
		freeAfter bool
	}{
		{"success releases after the run", exq.UntilSuccess, nil, nil, "conflict", true},
		{"a failure with retries keeps the lock", exq.UntilSuccess, fail, nil, "conflict", false},
		{"a failure without retries (death) releases", exq.UntilSuccess, fail, []exq.EnqueueOption{exq.MaxRetries(0)}, "conflict", true},
		{"a snooze keeps the lock", exq.UntilSuccess, exq.Snooze(time.Second), []exq.EnqueueOption{exq.MaxRetries(0)}, "conflict", false},
		{"start releases before the run", exq.UntilStart, fail, nil, "free", true},
		{"expiry keeps it", exq.UntilExpiry, nil, nil, "conflict", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in.Advance(2 * time.Hour) // every earlier lock has expired
			outcome, seen = tc.outcome, nil
			_, err := in.Enqueue(ctx, "q", "W", nil, opts(tc.until, tc.more...)...)
			assert.ErrorIs(t, err, tc.outcome)
			assert.Equal(t, []string{tc.whileRuns}, seen)
			if tc.whileRuns == "free" {
				in.Advance(2 * time.Hour) // the duplicate took the lock: let it go
			}
			_, err = in.Enqueue(ctx, "q", "Dup", nil, opts(exq.UntilSuccess)...)
			assert.Equal(t, tc.freeAfter, err == nil, "%v", err)
		})
	}

	// A conflicting job does not run; its result says so.
	in.Advance(2 * time.Hour)
	outcome = nil
	res, err := in.EnqueueAll(ctx, []exq.JobSpec{
		{Queue: "q", Class: "Dup", Options: opts(exq.UntilExpiry)},
		{Queue: "q", Class: "W", Options: opts(exq.UntilSuccess)},
	})
	require.NoError(t, err)
	assert.NoError(t, res[0].Err)
	assert.ErrorIs(t, res[1].Err, exq.ErrUniqueConflict)
	assert.Equal(t, res[0].JID, res[1].JID)
}
