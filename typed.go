package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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

// ErrArgsDecode is matched (errors.Is) by an *ArgsDecodeError: the failure of a job whose args
// cannot be decoded into what its worker takes.
var ErrArgsDecode = errors.New("exq: args do not decode")

// ArgsDecodeError is the failure of a job whose args cannot be decoded into what its worker
// takes: not a JSON array, a count other than the worker's, or an arg of another shape (a
// Typed, WorkerFor, AddWorker or TypedResult worker given [1,2] for a struct, or Job.Bind's
// error returned by a worker). Decoding the same args again fails the same way, so the job
// goes to the dead set at once, whatever its retries, with error_class "exq.ArgsDecodeError"
// (search the dead set, the logs or Sidekiq Web for it). Fix the producer or the worker, then
// requeue the job from the dead set. It matches ErrArgsDecode.
type ArgsDecodeError struct {
	// Class is the job's class.
	Class string

	msg string // what did not decode; "" when err says it all
	err error  // encoding/json's, when it said why, or Job.Bind's
}

func (e *ArgsDecodeError) Error() string {
	switch {
	case e.msg == "": // Job.Bind's error, worded already
		return e.err.Error()
	case e.err == nil:
		return "exq: " + e.msg
	}
	return "exq: " + e.msg + ": " + e.err.Error()
}

// Unwrap returns the error that said why (encoding/json's), if any.
func (e *ArgsDecodeError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrArgsDecode) hold.
func (e *ArgsDecodeError) Is(target error) bool { return target == ErrArgsDecode }

// ErrorClass reports "exq.ArgsDecodeError" as the job's error_class.
func (e *ArgsDecodeError) ErrorClass() string { return "exq.ArgsDecodeError" }

// storedMessage leaves out the "exq: " prefix, as error_class says it is exq's.
func (e *ArgsDecodeError) storedMessage() string { return strings.TrimPrefix(e.Error(), "exq: ") }

// permanent reports whether err is a failure that no retry can mend: the job goes to the dead
// set at once.
func permanent(err error) bool {
	var a *ArgsDecodeError
	return errors.As(err, &a)
}
