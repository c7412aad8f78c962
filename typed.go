package exq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Typed adapts a function of one typed argument to a Worker. The rule: the job has exactly
// one arg, and it is decoded into A with encoding/json; for a struct A that arg is a JSON
// object. The wire format stays plain JSON, so a Ruby or Elixir producer enqueues
// [{"user_id": 42, "template": "welcome"}] and a Go one enqueues []any{SignupArgs{...}}.
// A job whose args do not fit fails with an error naming A (and is retried or dead like any
// failure); it never panics. JobFromContext(ctx) gives the rest of the job.
//
//	type SignupArgs struct {
//		UserID   int    `json:"user_id"`
//		Template string `json:"template"`
//	}
//	e.Register("MyApp.Signup", exq.Typed(func(ctx context.Context, a SignupArgs) error { … }))
//	e.Enqueue(ctx, "default", "MyApp.Signup", []any{SignupArgs{UserID: 42, Template: "welcome"}})
func Typed[A any](f func(ctx context.Context, args A) error) Worker {
	return typedWorker[A]{f: f}
}

type typedWorker[A any] struct {
	f func(context.Context, A) error
}

func (t typedWorker[A]) Perform(ctx context.Context, job *Job) error {
	var a A
	var args []json.RawMessage
	if err := json.Unmarshal(job.Args, &args); err != nil {
		return fmt.Errorf("exq: %s: args are not a JSON array: %w", job.Class, err)
	}
	if len(args) != 1 {
		return fmt.Errorf("exq: %s: a Typed worker takes exactly one arg (the JSON of a %T), the job has %d", job.Class, a, len(args))
	}
	dec := json.NewDecoder(bytes.NewReader(args[0]))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return fmt.Errorf("exq: %s: arg %s is not a %T: %w", job.Class, args[0], a, err)
	}
	return t.f(ctx, a)
}
