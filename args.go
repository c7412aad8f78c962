package exq

import (
	"context"
	"fmt"
	"time"
)

// JobArgs is the args of one kind of job, as a type that names its class, so that the class
// string is written once and the enqueue side and the worker side agree on the type:
//
//	type Signup struct {
//		UserID   int    `json:"user_id"`
//		Template string `json:"template"`
//	}
//
//	func (Signup) Class() string { return "MyApp.Signup" }
//
//	exq.AddWorker(e, func(ctx context.Context, job *exq.Job, a Signup) error { … })
//	exq.EnqueueArgs(ctx, e, Signup{UserID: 42, Template: "welcome"})
//
// On the wire the job is {"class":"MyApp.Signup","args":[{"user_id":42,"template":"welcome"}],…}:
// args is a one-element array holding the JSON of the value, so Ruby and Elixir producers
// and consumers of the class see an ordinary job. Class is free-form ("MyApp::Signup" for a
// Sidekiq worker); it must not depend on the value, since AddWorker reads it from A's zero
// value. The value's JSON is encoding/json's, with its struct tags.
//
// A JobArgs may also have a Queue() string method naming the queue its jobs go to when the
// enqueue does not say (OnQueue); without one they go to "default".
type JobArgs interface {
	Class() string
}

// EnqueueArgs enqueues args as a job of args.Class() to run now, on the queue args names
// (its Queue method, "default" without one) or the one OnQueue gives, and returns its jid. It
// works with every Enqueuer: *Exq, *Client and the doubles of package exqtest.
func EnqueueArgs[A JobArgs](ctx context.Context, enq Enqueuer, args A, opts ...EnqueueOption) (string, error) {
	queue, class, list, opts, err := argsJob("enqueue", args, opts)
	if err != nil {
		return "", err
	}
	return enq.Enqueue(ctx, queue, class, list, opts...)
}

// EnqueueArgsIn is EnqueueArgs for a job that runs after d (as Enqueuer.EnqueueIn).
func EnqueueArgsIn[A JobArgs](ctx context.Context, enq Enqueuer, d time.Duration, args A, opts ...EnqueueOption) (string, error) {
	queue, class, list, opts, err := argsJob("enqueue in", args, opts)
	if err != nil {
		return "", err
	}
	return enq.EnqueueIn(ctx, queue, class, d, list, opts...)
}

// EnqueueArgsAt is EnqueueArgs for a job that runs at t (as Enqueuer.EnqueueAt).
func EnqueueArgsAt[A JobArgs](ctx context.Context, enq Enqueuer, t time.Time, args A, opts ...EnqueueOption) (string, error) {
	queue, class, list, opts, err := argsJob("enqueue at", args, opts)
	if err != nil {
		return "", err
	}
	return enq.EnqueueAt(ctx, queue, class, t, list, opts...)
}

// OnQueue puts a job enqueued with EnqueueArgs (In, At) on queue, whatever the args' Queue
// method says. The other enqueue calls take the queue as an argument and refuse it.
func OnQueue(queue string) EnqueueOption { return onQueue(queue) }

type onQueue string

func (q onQueue) apply(*enqueueConfig) error {
	return fmt.Errorf("OnQueue(%q) is for EnqueueArgs; this call takes the queue as its argument", string(q))
}

func (q onQueue) String() string { return fmt.Sprintf("OnQueue(%q)", string(q)) }

// argsJob turns args into what Enqueuer takes: the queue (taken out of opts), the class and
// the one-element args list.
func argsJob[A JobArgs](op string, args A, opts []EnqueueOption) (queue, class string, list []any, rest []EnqueueOption, err error) {
	class, err = classOf(args)
	if err != nil {
		return "", "", nil, nil, fmt.Errorf("exq: %s: %w", op, err)
	}
	queue = DefaultQueue
	if q, ok := any(args).(interface{ Queue() string }); ok {
		queue = q.Queue()
	}
	rest = make([]EnqueueOption, 0, len(opts)+1)
	if k := keyOf(args); k != "" {
		rest = append(rest, Key(k)) // first: a Key option given to the call wins
	}
	for _, o := range opts {
		if q, ok := o.(onQueue); ok {
			queue = string(q)
			continue
		}
		rest = append(rest, o)
	}
	return queue, class, []any{args}, rest, nil
}

// classOf calls args.Class(), turning a panic (a method on a nil pointer) into an error.
func classOf[A JobArgs](args A) (class string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%T.Class() panicked: %v (give Class a value receiver)", args, v)
		}
	}()
	return args.Class(), nil
}

// Registrar is what AddWorker registers workers on: an *Exq, a *Sharded node, or a test
// double such as exqtest's Inline.
type Registrar interface {
	Register(class string, w Worker) error
}

// AddWorker registers fn as the worker of A's class (A's Class method, on its zero value) on
// r: each job's one arg is decoded into an A as Typed does, and fn gets it with the job. On a
// node it is called after Start, while the node runs: give the workers a node has from the
// start to Start itself (Options.Register with WorkerFor), so they are there before its first
// fetch; a job fetched before its worker is added goes back to its queue within
// Options.RegisterGrace rather than fail. A class that has a worker already is
// ErrAlreadyRegistered. A worker that is a struct registers its method:
//
//	exq.AddWorker(e, mailer.Signup) // func (m *Mailer) Signup(ctx context.Context, job *exq.Job, a Signup) error
func AddWorker[A JobArgs](r Registrar, fn func(ctx context.Context, job *Job, args A) error) error {
	return addWorker[A](r, fn == nil, func() Worker { return Typed(fn) })
}

// AddWorkerResult is AddWorker for a function that returns a result, stored as TypedResult
// stores it (see WorkerForResult, its form for Options.Register).
func AddWorkerResult[A JobArgs, R any](r Registrar, fn func(ctx context.Context, job *Job, args A) (R, error)) error {
	return addWorker[A](r, fn == nil, func() Worker { return TypedResult(fn) })
}

// addWorker registers the worker w builds for A's class on r (nilFunc: the function given is
// nil).
func addWorker[A JobArgs](r Registrar, nilFunc bool, w func() Worker) error {
	var zero A
	class, err := classOf(zero)
	if err != nil {
		return fmt.Errorf("exq: add worker: %w", err)
	}
	if nilFunc {
		return fmt.Errorf("exq: add worker %q: func is nil", class)
	}
	if class == "" {
		return fmt.Errorf("exq: add worker: %T.Class() is empty", zero)
	}
	if r == nil {
		return fmt.Errorf("exq: add worker %q: registrar is nil", class)
	}
	return r.Register(class, w())
}

// WorkerFor is the registration of fn as the worker of A's class (A's Class method, on its
// zero value), for Options.Register: each job's one arg is decoded into an A as Typed does.
// It is AddWorker for a node that is not started yet, so the workers are there before the
// node fetches its first job:
//
//	e, err := exq.Start(ctx, exq.Options{
//		Register: []exq.Registration{
//			exq.WorkerFor(sendWelcome), // func(ctx context.Context, job *exq.Job, a Signup) error
//			exq.WorkerFor(mailer.Invoice),
//		},
//	})
//
// A func that is nil or an A whose Class is empty (or panics) makes Start fail with
// ErrInvalidOptions naming the entry.
func WorkerFor[A JobArgs](fn func(ctx context.Context, job *Job, args A) error) Registration {
	return registration[A](fn == nil, func() Worker { return Typed(fn) })
}

// WorkerForResult is WorkerFor for a function that returns a result, stored as TypedResult
// stores it: a workflow's step, whose dependents read the result with ParentResult, or a job
// a client waits for with WaitResult. Neither side writes the class string:
//
//	exq.WorkerForResult(func(ctx context.Context, job *exq.Job, a Resize) (Image, error) { … })
//	exq.WorkflowJob{Name: "resize", Args: Resize{Path: "p.png"}}
func WorkerForResult[A JobArgs, R any](fn func(ctx context.Context, job *Job, args A) (R, error)) Registration {
	return registration[A](fn == nil, func() Worker { return TypedResult(fn) })
}

// registration is the Registration of A's class with the worker w builds, or the reason it
// cannot be made (nilFunc: the function given is nil).
func registration[A JobArgs](nilFunc bool, w func() Worker) Registration {
	var zero A
	class, err := classOf(zero)
	switch {
	case err != nil:
	case class == "":
		err = fmt.Errorf("%T.Class() is empty", zero)
	case nilFunc:
		err = fmt.Errorf("the func for %q is nil", class)
	}
	if err != nil {
		return Registration{Class: class, err: err}
	}
	return Registration{Class: class, Worker: w()}
}

// PeriodicArgs is the PeriodicJob named name that enqueues args, a type that names its class,
// at every tick of spec: Class is args.Class(), Queue args' Queue method ("default" without
// one), and Args the one-element list EnqueueArgs writes ([{"kind":"nightly"}]). Set the other
// fields (Timezone, Description, Queue to override) on the result:
//
//	nightly := exq.PeriodicArgs("nightly-report", "0 3 * * *", Report{Kind: "nightly"})
//	nightly.Timezone = "Europe/Paris"
//	exq.Options{Periodic: []exq.PeriodicJob{nightly}}
//
// A Class method that panics makes the schedule fail its checks (ErrInvalidPeriodic naming
// Class) where it is used.
func PeriodicArgs[A JobArgs](name, spec string, args A) PeriodicJob {
	queue, class, list, _, err := argsJob("periodic", args, nil)
	return PeriodicJob{Name: name, Spec: spec, Queue: queue, Class: class, Args: list, classErr: err}
}

// Enqueuer is what application code needs to enqueue jobs. *Exq (a running node) and *Client
// (enqueue only) implement it, and so do the test doubles in package exqtest, so code that
// depends on Enqueuer can be tested without Redis.
type Enqueuer interface {
	Enqueue(ctx context.Context, queue, class string, args any, opts ...EnqueueOption) (string, error)
	EnqueueIn(ctx context.Context, queue, class string, d time.Duration, args any, opts ...EnqueueOption) (string, error)
	EnqueueAt(ctx context.Context, queue, class string, t time.Time, args any, opts ...EnqueueOption) (string, error)
	EnqueueAll(ctx context.Context, jobs []JobSpec) ([]EnqueueResult, error)
}
