package exq

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// welcomeEmail is the typed args of the first-day scenario: `exq enqueue mail App.WelcomeEmail
// '[1,2]'` against its worker.
type welcomeEmail struct {
	UserID int `json:"user_id"`
}

func (welcomeEmail) Class() string { return "App.WelcomeEmail" }
func (welcomeEmail) Queue() string { return "mail" }

// TestArgsThatCanNeverDecodeSendTheJobToTheDeadSetAtOnce: a job whose args do not fit its
// worker (a typed one, or one returning Job.Bind's error, wrapped or not) is not retried 25
// times: it goes to the dead set at its first run, with error_class exq.ArgsDecodeError and
// the reason, and the worker's own code never runs.
func TestArgsThatCanNeverDecodeSendTheJobToTheDeadSetAtOnce(t *testing.T) {
	t.Parallel()
	var typedRuns, boundRuns atomic.Int32
	bound := WorkerFunc(func(ctx context.Context, job *Job) error {
		var id int
		if err := job.Bind(&id); err != nil {
			return fmt.Errorf("welcome: %w", err)
		}
		boundRuns.Add(1)
		return nil
	})
	for _, tc := range []struct {
		name, class string
		args        []any
		want        string
	}{
		{"typed, two args", "App.WelcomeEmail", []any{1, 2}, "App.WelcomeEmail: a typed worker takes exactly one arg (the JSON of a exq.welcomeEmail), the job has 2"},
		{"typed, a number for a struct", "App.WelcomeEmail", []any{1}, "App.WelcomeEmail: arg 1 is not a exq.welcomeEmail: json: cannot unmarshal number"},
		{"typed, a wrong field type", "App.WelcomeEmail", []any{map[string]any{"user_id": "x"}}, `is not a exq.welcomeEmail`},
		{"Bind, two args for one", "App.Bound", []any{1, 2}, "welcome: exq: bind App.Bound: job has 2 args, want 1"},
		{"Bind, a string for an int", "App.Bound", []any{"x"}, "welcome: exq: bind App.Bound: arg 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			e := v.start(Options{Queues: []Queue{{Name: "mail"}},
				Register: []Registration{
					WorkerFor(func(context.Context, *Job, welcomeEmail) error { typedRuns.Add(1); return nil }),
					{Class: "App.Bound", Worker: bound},
				}})
			ctx := context.Background()
			jid, err := e.Enqueue(ctx, "mail", tc.class, tc.args) // as `exq enqueue` writes it
			require.NoError(t, err)
			testutil.WaitFor(t, "the job is dead", func() bool { return v.zcard(v.keys.Dead()) == 1 })
			m := decode(t, v.zset(v.keys.Dead())[0].Member.(string))
			assert.Equal(t, jid, m["jid"])
			assert.Equal(t, "exq.ArgsDecodeError", m["error_class"])
			assert.Contains(t, m["error_message"], tc.want)
			assert.Zero(t, v.zcard(v.keys.Retry()), "never in the retry set")
		})
	}
	assert.Zero(t, typedRuns.Load())
	assert.Zero(t, boundRuns.Load())
}

// TestArgsDecodeErrorMatchesItsSentinelAndNamesTheClass: what a worker, middleware or
// listener sees of the failure.
func TestArgsDecodeErrorMatchesItsSentinelAndNamesTheClass(t *testing.T) {
	t.Parallel()
	job := &Job{Class: "App.WelcomeEmail", Args: []byte(`[1,2]`)}
	err := WorkerFor(func(context.Context, *Job, welcomeEmail) error { return nil }).Worker.Perform(context.Background(), job)
	require.ErrorIs(t, err, ErrArgsDecode)
	var de *ArgsDecodeError
	require.True(t, errors.As(err, &de))
	assert.Equal(t, "App.WelcomeEmail", de.Class)
	assert.Equal(t, "exq.ArgsDecodeError", errorClass(fmt.Errorf("mw: %w", err)))
	assert.True(t, permanent(fmt.Errorf("mw: %w", err)))
	assert.ErrorIs(t, job.Bind(new(int)), ErrArgsDecode)
	assert.NoError(t, (&Job{Args: []byte(`[7]`)}).Bind(new(int)))
	assert.False(t, permanent(errors.New("smtp: 421")), "an ordinary failure is retried")
}
