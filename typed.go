package exq

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/exqgo/exq/internal/bind"
)

// Typed adapts a function of one typed argument to a Worker. The rule: the job has exactly
// one arg, and it is decoded into A with encoding/json (as Job.Bind does: a number in an
// interface{} becomes a json.Number); for a struct A that arg is a JSON object. The wire
// format stays plain JSON, so a Ruby or Elixir producer enqueues
// [{"user_id": 42, "template": "welcome"}] and a Go one calls EnqueueArgs. A job whose args do
// not fit fails with an error naming A (and is retried or dead like any failure); it never
// panics.
//
// For an args type that names its class (JobArgs), WorkerFor (at start) and AddWorker (while
// the node runs) register the function under that class. Typed is for the other cases: a
// class string chosen elsewhere (a Ruby or Elixir producer's) for a type that is not a
// JobArgs, in a Registration literal at start or with Register while the node runs:
//
//	exq.Registration{Class: "Billing::Invoice", Worker: exq.Typed(invoice)}
//	e.Register("Billing::Invoice", exq.Typed(func(ctx context.Context, job *exq.Job, a Invoice) error { … }))
func Typed[A any](f func(ctx context.Context, job *Job, args A) error) Worker {
	return typedWorker[A]{f: f}
}

type typedWorker[A any] struct {
	f func(context.Context, *Job, A) error
}

func (t typedWorker[A]) Perform(ctx context.Context, job *Job) error {
	var a A
	var args []json.RawMessage
	if err := json.Unmarshal(job.Args, &args); err != nil {
		return &ArgsDecodeError{Class: job.Class, msg: fmt.Sprintf("%s: args are not a JSON array", job.Class), err: err}
	}
	if len(args) != 1 {
		return &ArgsDecodeError{Class: job.Class,
			msg: fmt.Sprintf("%s: a typed worker takes exactly one arg (the JSON of a %T), the job has %d", job.Class, a, len(args))}
	}
	if err := bind.Decode(args[0], &a); err != nil {
		return &ArgsDecodeError{Class: job.Class, msg: fmt.Sprintf("%s: arg %s is not a %T", job.Class, args[0], a), err: err}
	}
	return t.f(ctx, job, a)
}

// TypedResult is Typed for a worker that returns a result: on success (a nil error) the result
// is stored as by SetResult before the job counts as succeeded, so a client waiting for it
// and a workflow's dependents find it. A result that cannot be stored fails the run.
func TypedResult[A, R any](f func(ctx context.Context, job *Job, args A) (R, error)) Worker {
	return Typed(func(ctx context.Context, job *Job, args A) error {
		r, err := f(ctx, job, args)
		if err != nil {
			return err
		}
		return SetResult(ctx, r)
	})
}
