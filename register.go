package exq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/exqgo/exq/internal/registry"
)

// DefaultRegisterGrace is Options.RegisterGrace's default.
const DefaultRegisterGrace = 10 * time.Second

// NoRegisterGrace, as Options.RegisterGrace, makes a job whose class has no worker fail at
// once, from the node's start on (the zero value of the field means DefaultRegisterGrace).
const NoRegisterGrace = -1

// registerWait is how long a fetched job whose class has no worker waits, holding its slot,
// for the worker to be registered before it goes back to its queue. It bounds how often a
// node that is still registering fetches such a job again: once per registerWait per slot.
const registerWait = time.Second

// Registration is one worker given to Start in Options.Register: the class it runs and the
// Worker. WorkerFor builds one from a typed function; a literal works for any Worker:
//
//	exq.Registration{Class: "Billing::Invoice", Worker: exq.Typed(invoice)}
//
// The ways to register a worker, one per case (docs/jobs.md, "Registering workers"):
//   - at start, for an args type with Class(): Options.Register with WorkerFor(fn), the
//     recommended way (WorkerForResult(fn) for a function that returns a result);
//   - at start, for a class string chosen elsewhere or any Worker: Options.Register with a
//     Registration literal (Typed(fn) for typed args; Options.Workers, a map, does the same);
//   - while the node runs: AddWorker(e, fn) (AddWorkerResult) for an args type with Class(),
//     e.Register(class, w) for any other Worker;
//   - in a test: AddWorker (or Register) on an exqtest double.
type Registration struct {
	// Class is the job class the worker runs ("MyApp.Signup", "Billing::Invoice").
	Class string
	// Worker runs the jobs of Class.
	Worker Worker

	err error // what WorkerFor could not build; Start reports it naming the field
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

// check reports what makes r unusable.
func (r Registration) check() error {
	switch {
	case r.err != nil:
		return r.err
	case r.Class == "":
		return errors.New("class is empty")
	case r.Worker == nil:
		return fmt.Errorf("class %q has a nil worker", r.Class)
	}
	return nil
}

// checkRegistrations validates Options.Workers and Options.Register together: no entry is
// incomplete and no class has two workers.
func checkRegistrations(ws map[string]Worker, regs []Registration) error {
	for i, r := range regs {
		field := fmt.Sprintf("Register[%d]", i)
		if err := r.check(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidOptions, field, err)
		}
		if _, ok := ws[r.Class]; ok {
			return fmt.Errorf("%w: %s: %w: %q is in Workers too", ErrInvalidOptions, field, ErrAlreadyRegistered, r.Class)
		}
		for j := range i {
			if regs[j].Class == r.Class {
				return fmt.Errorf("%w: %s: %w: %q is Register[%d] too", ErrInvalidOptions, field, ErrAlreadyRegistered, r.Class, j)
			}
		}
	}
	return nil
}

// Register adds the worker for class while the node runs (for a worker known at start, use
// Options.Register; for an args type with Class(), AddWorker); ErrAlreadyRegistered if the class
// has one (from Options.Workers, Options.Register or an earlier call). Workers given to Start
// (Options.Register, Options.Workers) are there before the first fetch; one registered here
// within Options.RegisterGrace of Start, or before RegistrationDone, still gets the jobs
// that were fetched before it: they go back to their queue rather than fail.
func (e *Exq) Register(class string, w Worker) error {
	if class == "" {
		return errors.New("exq: register: class is empty")
	}
	if w == nil {
		return fmt.Errorf("exq: register %q: worker is nil", class)
	}
	if !e.registry.Add(class, w) {
		return fmt.Errorf("exq: register: %w: %q", ErrAlreadyRegistered, class)
	}
	return nil
}

// RegistrationDone tells the node that every worker is registered: from now on a job whose
// class has no worker fails at once with exq.UnknownClass (retried or dead like any failure)
// instead of going back to its queue for the rest of Options.RegisterGrace. A program that
// registers workers after Start calls it when it is done; one that gives them all to Start
// may call it at once, or set RegisterGrace to NoRegisterGrace.
func (e *Exq) RegistrationDone() { e.registry.Done() }

// newRegistry builds the registry of a node from its validated Options: Workers, then
// Register (withDefaults has refused duplicates already).
func newRegistry(ws map[string]Worker, regs []Registration, grace time.Duration) *registry.Registry[Worker] {
	workers := make(map[string]Worker, len(ws)+len(regs))
	maps.Copy(workers, ws)
	for _, reg := range regs {
		workers[reg.Class] = reg.Worker
	}
	return registry.New(workers, grace)
}

// awaitWorker is the path of a fetched job whose class has no worker while registration is
// open (the workers of a deploy are being registered): the job waits a moment, holding its
// slot, for its worker, and runs if it comes. Otherwise, while registration is still open, it
// goes back to the enqueue end of its queue, unchanged: not a failure, no retry used, and
// jobs behind it run first. It reports whether the job was put back (or the shutdown took
// it); false means run it: with the worker found, or as an unknown class once registration
// is over.
func (e *Exq) awaitWorker(r *run, job *Job) bool {
	if w := e.registry.Await(job.Class, registerWait, e.done); w != nil {
		job.worker = w
		return false
	}
	select {
	case <-e.done: // stopping: back to its queue rather than a failure
	default:
		if !e.registry.Registering() {
			return false // registration is over: an ordinary unknown class
		}
	}
	if !r.claim() {
		return true // handed back by the shutdown
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(&r.ctx), e.opts.RedisTimeout)
	defer cancel()
	moved, err := e.jq.PutBack(ctx, r.queue, r.raw)
	switch {
	case err != nil:
		e.log.Error("exq: could not put back a job whose class has no worker yet; it stays in this node's backup list until it is recovered",
			"queue", r.queue, "class", job.Class, "jid", job.JID, "error", err)
	case moved:
		e.registry.PutBacks.Add(1)
		e.log.Debug("exq: no worker registered yet for this class; the job went back to its queue", "queue", r.queue, "class", job.Class, "jid", job.JID)
	}
	return true
}
