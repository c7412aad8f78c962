package exqtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqtest"
)

// signup is code under test: it depends on exq.Enqueuer only.
func signup(ctx context.Context, q exq.Enqueuer, userID int) error {
	if _, err := q.Enqueue(ctx, "mail", "MyApp.Welcome", []any{userID}); err != nil {
		return err
	}
	_, err := q.EnqueueIn(ctx, "mail", "MyApp.Tips", 24*time.Hour, []any{userID, map[string]any{"n": 3}}, exq.JID("tips-1"))
	return err
}

func TestFakeRecordsJobsAsExqWouldWriteThem(t *testing.T) {
	ctx := context.Background()
	f := exqtest.NewFake()
	require.NoError(t, signup(ctx, f, 42))
	jobs := f.Jobs()
	require.Len(t, jobs, 2)
	assert.Equal(t, "MyApp.Welcome", jobs[0].Class)
	assert.Equal(t, "mail", jobs[0].Queue)
	assert.JSONEq(t, `[42]`, string(jobs[0].Args))
	assert.Equal(t, "tips-1", jobs[1].JID, "a given jid is kept")
	assert.WithinDuration(t, time.Now().Add(24*time.Hour), jobs[1].EnqueuedAt, time.Minute, "scheduled jobs carry their due time")
	var id int
	var opts map[string]int
	require.NoError(t, jobs[1].Bind(&id, &opts))
	assert.Equal(t, 42, id)
	assert.Equal(t, 3, opts["n"])
	assert.Len(t, f.JobsOfClass("MyApp.Tips"), 1)
	assert.Len(t, f.JobsInQueue("mail"), 2)
	assert.Empty(t, f.JobsInQueue("other"))

	res, err := f.EnqueueAll(ctx, []exq.JobSpec{{Queue: "q", Class: "A"}, {Queue: "q", Class: "B", In: time.Hour}})
	require.NoError(t, err)
	assert.Len(t, res, 2)
	assert.Len(t, f.Jobs(), 4)
	f.Clear()
	assert.Empty(t, f.Jobs())
}

func TestFakeRefusesWhatARealEnqueueRefuses(t *testing.T) {
	ctx := context.Background()
	f := exqtest.NewFake()
	_, err := f.Enqueue(ctx, "q", "", nil)
	assert.ErrorIs(t, err, exq.ErrInvalidJob)
	_, err = f.Enqueue(ctx, "q", "W", map[string]int{"a": 1})
	assert.EqualError(t, err, "exq: enqueue: args must be a list (a slice or array), got map[string]int")
	_, err = f.EnqueueAt(ctx, "q", "W", time.Time{}, nil)
	assert.ErrorIs(t, err, exq.ErrInvalidJob)
	_, err = f.EnqueueAll(ctx, []exq.JobSpec{{Queue: "q", Class: "A"}, {Queue: "q", Class: ""}})
	assert.ErrorIs(t, err, exq.ErrInvalidJob)
	assert.Empty(t, f.Jobs(), "an invalid batch records nothing")
}

type tipsArgs struct {
	UserID int `json:"user_id"`
}

func TestInlineRunsTheWorkerAfterAJSONRoundTrip(t *testing.T) {
	ctx := context.Background()
	var got []any
	var typed tipsArgs
	var jid string
	in := exqtest.NewInline(map[string]exq.Worker{
		"MyApp.Welcome": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			var id any
			require.NoError(t, job.Bind(&id))
			got = append(got, id)
			return nil
		}),
		"MyApp.Tips": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error { return nil }),
	})
	require.NoError(t, in.Register("MyApp.Typed", exq.Typed(func(ctx context.Context, job *exq.Job, a tipsArgs) error {
		typed = a
		jid = job.JID
		return nil
	})))
	require.NoError(t, signup(ctx, in, 42))
	assert.Equal(t, "42", got[0].(interface{ String() string }).String(), "the worker sees JSON, not the Go value")
	j, err := in.Enqueue(ctx, "q", "MyApp.Typed", []any{tipsArgs{UserID: 7}})
	require.NoError(t, err)
	assert.Equal(t, tipsArgs{UserID: 7}, typed)
	assert.Equal(t, j, jid)
}

func TestInlineReturnsTheWorkersErrorToTheCaller(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("smtp down")
	in := exqtest.NewInline(map[string]exq.Worker{
		"MyApp.Welcome": exq.WorkerFunc(func(context.Context, *exq.Job) error { return boom }),
	})
	err := signup(ctx, in, 1)
	assert.ErrorIs(t, err, boom)
	_, err = in.Enqueue(ctx, "q", "Nobody", nil)
	assert.ErrorIs(t, err, exq.ErrUnknownClass)
	res, err := in.EnqueueAll(ctx, []exq.JobSpec{{Queue: "q", Class: "MyApp.Welcome"}, {Queue: "q", Class: "MyApp.Welcome"}})
	assert.ErrorIs(t, err, boom)
	assert.Len(t, res, 1, "stops at the first failure")
	assert.Panics(t, func() {
		in.Register("Panics", exq.WorkerFunc(func(context.Context, *exq.Job) error { panic("bug") }))
		_, _ = in.Enqueue(ctx, "q", "Panics", nil)
	}, "a panic reaches the test, as an exception does in Exq's inline mode")
}

// welcomeArgs names its class, for exq.AddWorker and exq.EnqueueArgs.
type welcomeArgs struct {
	UserID int `json:"user_id"`
}

func (welcomeArgs) Class() string { return "MyApp.WelcomeTyped" }

var _ exq.Registrar = (*exqtest.Inline)(nil)

func TestInlineTakesAddWorkerAndRefusesWhatANodeRefuses(t *testing.T) {
	ctx := context.Background()
	in := exqtest.NewInline(nil)
	var got welcomeArgs
	require.NoError(t, exq.AddWorker(in, func(ctx context.Context, job *exq.Job, a welcomeArgs) error {
		got = a
		return nil
	}))
	_, err := exq.EnqueueArgs(ctx, in, welcomeArgs{UserID: 7}, exq.OnQueue("mail"))
	require.NoError(t, err)
	assert.Equal(t, welcomeArgs{UserID: 7}, got)

	assert.EqualError(t, in.Register("", exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil })), "exqtest: register: class is empty")
	assert.EqualError(t, in.Register("X", nil), `exqtest: register "X": worker is nil`)
	assert.ErrorIs(t, in.Register("MyApp.WelcomeTyped", exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil })), exq.ErrAlreadyRegistered,
		"a class registered twice is refused, as a node refuses it")
}
