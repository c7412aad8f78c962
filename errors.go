package exq

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Sentinel errors. Errors returned by exq wrap them, so test with errors.Is.
var (
	// ErrInvalidOptions is wrapped by Start when an Options field is out of range; the message
	// names the field.
	ErrInvalidOptions error
	// ErrInvalidJob is wrapped by the Enqueue calls when the queue, class, args or an option is
	// not acceptable. Nothing is written to Redis.
	ErrInvalidJob = errors.New("exq: invalid job")
	// ErrJobTooLarge is wrapped (with ErrInvalidJob) by an enqueue whose job document would
	// be larger than MaxJobBytes; nothing is written.
	ErrJobTooLarge = errors.New("exq: job too large")
	// ErrInvalidQueue is wrapped by the API calls that take a queue name (PauseQueue,
	// ResumeQueue) when the name is not acceptable. Nothing is written to Redis.
	ErrInvalidQueue = errors.New("exq: invalid queue name")
	// ErrUnknownClass is the failure of a job whose class has no registered worker. The job is
	// retried or dead-lettered like any failure, so deploying the worker later still runs it.
	ErrUnknownClass = errors.New("exq: no worker registered for class")
	// ErrAlreadyRegistered is wrapped by Register and AddWorker (and by Start, under
	// ErrInvalidOptions, for Options.Register) when the class has a worker already: a class
	// has one worker, and a second registration is a mistake, not a replacement.
	ErrAlreadyRegistered = errors.New("exq: a worker is already registered for class")
	// ErrStopped is returned by calls made on a node after Stop.
	ErrStopped = errors.New("exq: stopped")
	// ErrUniqueConflict is matched by the error of an enqueue whose unique lock is held by
	// another job (a *UniqueConflictError, carrying the holder's jid).
	ErrUniqueConflict = errors.New("exq: unique conflict")
	// ErrNotReplicated is wrapped by the error of an enqueue (Enqueue, EnqueueIn, EnqueueAt,
	// EnqueueAll) made with WaitReplicas set when fewer replicas than asked confirmed the write
	// within WaitTimeout (or the reply of WAIT was lost); the message says how many did. The job
	// WAS written on the master, and the call returns its jid (EnqueueAll its results) with the
	// error: it runs unless the master fails before a replica has it. Enqueue it again only with
	// the same exq.JID and a unique lock, or accept that it may run twice.
	ErrNotReplicated error
	// ErrRedisUnavailable is wrapped by Start when Redis does not answer its PING.
	ErrRedisUnavailable error
	// ErrRedisOOM is matched by the error of a call that Redis refused because it is out of
	// memory (maxmemory reached under the noeviction policy): every kind of enqueue, and Start.
	// Nothing was written. Running nodes carry on meanwhile: they beat, fetch, run and
	// acknowledge jobs, so the queues drain, which frees memory (docs/out-of-memory.md).
	ErrRedisOOM error
	// ErrInvalidPeriodic is wrapped when a PeriodicJob is not acceptable (at Start, under
	// ErrInvalidOptions, and by the API's AddPeriodic and UpdatePeriodic); the message names
	// the schedule and the field. Nothing is written to Redis.
	ErrInvalidPeriodic = errors.New("exq: invalid periodic job")
	// ErrPeriodicNotFound is returned by the API's periodic-job calls when no schedule has the
	// name.
	ErrPeriodicNotFound = errors.New("exq: periodic job not found")
	// ErrPeriodicExists is returned by API.AddPeriodic when a schedule has the name already.
	ErrPeriodicExists = errors.New("exq: periodic job exists")
	// ErrJobNotFound is returned by the API's Find and RequeueJob calls when no job has the jid.
	ErrJobNotFound = errors.New("exq: job not found")
	// ErrUndecodableJob is returned by JobRecord.Job for a stored document that is not a job:
	// not JSON, not an object, no class, or args that are not a list (written by some other
	// program).
	ErrUndecodableJob = errors.New("exq: stored document is not a job")
	// ErrInvalidBatch is wrapped by NewBatch and AddToBatch when the batch or one of its jobs
	// is not acceptable (no jobs, a scheduled or unique job, a bad callback, a jid beginning
	// with "batch:", which the batch layout keeps for its own members); the message says which.
	// Nothing is written to Redis.
	ErrInvalidBatch error
	// ErrBatchNotFound is returned when no batch has the id (never created, or its data has
	// expired), and by AddToBatch when the running job's batch is gone.
	ErrBatchNotFound error
	// ErrBatchExists is returned by NewBatch when BatchOptions.ID names an existing batch.
	ErrBatchExists error
	// ErrNotInBatch is returned by AddToBatch outside a running job of a batch.
	ErrNotInBatch error
	// ErrBatchClosed is returned by BatchWriter.Add when the batch is no longer open.
	ErrBatchClosed error
	// ErrInvalidWorkflow is wrapped by EnqueueWorkflow when the workflow is not acceptable: a
	// cycle, a dependency on an unknown name, a name or a jid used twice, a scheduled or unique
	// job, a jid beginning with "batch:". The message names the job. Nothing is written to
	// Redis.
	ErrInvalidWorkflow error
	// ErrWorkflowNotFound is returned when no workflow has the id (never created, or its data
	// has expired).
	ErrWorkflowNotFound error
	// ErrWorkflowExists is returned by EnqueueWorkflow when WorkflowOptions.ID names an existing
	// workflow.
	ErrWorkflowExists error
	// ErrResultTooLarge is wrapped by SetResult when the encoded result is larger than
	// Options.ResultMaxBytes; nothing is stored.
	ErrResultTooLarge error
	// ErrInvalidProgress is wrapped by SetProgress when the fraction is not a number from 0
	// to 1 or the message is longer than MaxProgressMessage bytes or not UTF-8, and when ctx is
	// not a job's; the message says which. The progress reported before is kept.
	ErrInvalidProgress = errors.New("exq: invalid progress")
	// ErrNoResult is returned by Result when the job has stored no result (or it expired), and
	// by SetResult outside a running job.
	ErrNoResult error
)

// init sets the sentinel errors that the internal packages return, so that errors.Is matches
// them. They are set here, not in their declarations, because `go doc` shows a variable's
// initializer, which would name an internal package.
func init() {
	ErrInvalidOptions = store.ErrInvalidOptions
	ErrNotReplicated = store.ErrNotReplicated
	ErrRedisUnavailable = store.ErrRedisUnavailable
	ErrRedisOOM = store.ErrOOM
	ErrInvalidBatch = flows.ErrInvalidBatch
	ErrBatchNotFound = flows.ErrBatchNotFound
	ErrBatchExists = flows.ErrBatchExists
	ErrNotInBatch = flows.ErrNotInBatch
	ErrBatchClosed = flows.ErrBatchClosed
	ErrInvalidWorkflow = flows.ErrInvalidWorkflow
	ErrWorkflowNotFound = flows.ErrWorkflowNotFound
	ErrWorkflowExists = flows.ErrWorkflowExists
	ErrResultTooLarge = flows.ErrResultTooLarge
	ErrNoResult = flows.ErrNoResult
}

// PanicError is the failure of a job whose worker panicked. Its error_class is "panic", its
// error_message the panic value, and its error_backtrace (docs/jobs.md: Backtraces) the stack.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the goroutine's stack where the panic happened.
	Stack []byte

	pcs []uintptr // the same stack, for error_backtrace
}

// newPanicError records a recovered panic with the stack it happened on. Call it in the
// deferred function that recovered v: the panicking frames are still below it.
func newPanicError(v any) *PanicError {
	pcs := make([]uintptr, 100)
	return &PanicError{Value: v, Stack: debug.Stack(), pcs: pcs[:runtime.Callers(1, pcs)]}
}

// backtrace is the stack where the panic happened, in Ruby's format (wire.PanicBacktrace).
func (p *PanicError) backtrace() []string { return wire.PanicBacktrace(p.pcs, p.Stack) }

// Error returns the panic value as text; it becomes the job's error_message.
func (p *PanicError) Error() string { return fmt.Sprint(p.Value) }

// ErrorClass reports "panic" as the job's error_class.
func (p *PanicError) ErrorClass() string { return "panic" }

// unknownClassError is the failure of a job whose class has no worker.
type unknownClassError struct{ class string }

func (u *unknownClassError) Error() string {
	return fmt.Sprintf("%s %q", ErrUnknownClass.Error(), u.class)
}

func (u *unknownClassError) Is(target error) bool { return target == ErrUnknownClass }

func (u *unknownClassError) ErrorClass() string { return "exq.UnknownClass" }

// storedMessage leaves out what error_class already says: Sidekiq's Web UI shows
// "exq.UnknownClass: no worker registered for class "X"".
func (u *unknownClassError) storedMessage() string {
	return fmt.Sprintf("no worker registered for class %q", u.class)
}

// maxErrorMessage bounds error_message (WIRE.md §2).
const maxErrorMessage = 10000

// storedMessager is a failure made by exq whose error_message should not repeat its
// error_class or the "exq: " prefix of its Go error (the UIs show "error_class: error_message").
type storedMessager interface{ storedMessage() string }

// errorMessage is err's error_message: its message (or, for a failure exq made, the part that
// error_class does not already say) cut to the wire limit, on a rune boundary. An error that
// wraps one of exq's keeps its whole text: the wrapper's words are the caller's.
func errorMessage(err error) string {
	msg := err.Error()
	if m, ok := err.(storedMessager); ok {
		msg = m.storedMessage()
	}
	if len(msg) <= maxErrorMessage {
		return msg
	}
	msg = msg[:maxErrorMessage]
	for !utf8.ValidString(msg) {
		msg = msg[:len(msg)-1]
	}
	return msg
}

// errorClass is the short name of a failure for error_class: what the error reports through an
// ErrorClass() string method, else the Go type of the first error in its chain that is not a
// plain fmt.Errorf wrapper (so fmt.Errorf("send: %w", opErr) reports "*net.OpError").
func errorClass(err error) string {
	var c interface{ ErrorClass() string }
	if errors.As(err, &c) {
		return c.ErrorClass()
	}
	for {
		t := fmt.Sprintf("%T", err)
		if !strings.HasPrefix(t, "*fmt.wrapError") {
			return t
		}
		next := errors.Unwrap(err)
		if next == nil {
			return t
		}
		err = next
	}
}

// errTimeout is the cause of a job context whose run time (Options.JobTimeout or the worker's
// Timeout) has passed.
var errTimeout = errors.New("exq: job timed out")

// TimeoutError is the failure of a job that ran longer than its timeout. Its error_class is
// "exq.Timeout"; it is retried like any failure.
type TimeoutError struct {
	// After is the timeout that passed.
	After time.Duration
	// Err is what the worker returned once its context was cancelled (often nil or
	// context.DeadlineExceeded).
	Err error
}

func (t *TimeoutError) Error() string {
	if t.Err == nil || errors.Is(t.Err, context.DeadlineExceeded) {
		return fmt.Sprintf("exq: job timed out after %s", t.After)
	}
	return fmt.Sprintf("exq: job timed out after %s: %v", t.After, t.Err)
}

// Unwrap returns what the worker returned.
func (t *TimeoutError) Unwrap() error { return t.Err }

// storedMessage leaves out what error_class "exq.Timeout" already says.
func (t *TimeoutError) storedMessage() string {
	if t.Err == nil || errors.Is(t.Err, context.DeadlineExceeded) {
		return fmt.Sprintf("ran longer than %s", t.After)
	}
	return fmt.Sprintf("ran longer than %s, then returned: %v", t.After, t.Err)
}

// ErrorClass reports "exq.Timeout" as the job's error_class.
func (t *TimeoutError) ErrorClass() string { return "exq.Timeout" }

// errShutdown is the cause of job contexts cancelled when the shutdown grace period ends. By
// then their jobs have been handed back to their queues, so whatever the worker returns is
// not written.
var errShutdown = errors.New("exq: node stopping: shutdown grace period over")

// errBuried is the cause of the contexts of a node's runs from before it was taken for dead
// (paused, or cut off, past its heartbeat window) and buried: their jobs were rescued and may
// run elsewhere, so their outcomes are not written. A fetch of such a node fails with it until
// the node has joined the heartbeats again.
var errBuried = store.ErrBuried

// errCanceled is the cause of a job context cancelled by a CANCEL signal. Such a job goes to
// the dead set with error_message "Canceled", whatever its retries.
var errCanceled = errors.New("exq: job canceled by a CANCEL signal")

// UniqueConflictError is returned when a unique job's lock is held by another job. It
// matches ErrUniqueConflict.
type UniqueConflictError struct {
	// JID is the job that holds the lock.
	JID string
	// Token is the lock's token.
	Token string
}

func (u *UniqueConflictError) Error() string {
	return fmt.Sprintf("exq: unique conflict: job %s holds the lock %q", u.JID, u.Token)
}

// Is makes errors.Is(err, ErrUniqueConflict) hold.
func (u *UniqueConflictError) Is(target error) bool { return target == ErrUniqueConflict }

// invalidJobError is the error of an enqueue whose input is unacceptable; tooLarge marks a job
// over MaxJobBytes, which matches ErrJobTooLarge as well.
type invalidJobError struct {
	op, msg  string
	tooLarge bool
}

func (e *invalidJobError) Error() string { return "exq: " + e.op + ": " + e.msg }

func (e *invalidJobError) Is(target error) bool {
	return target == ErrInvalidJob || (e.tooLarge && target == ErrJobTooLarge)
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

// Snooze, returned by a worker, puts its job back to run again after d (Exq's snooze). It is
// not a failure: retry_count stays, the run counts as processed, and a unique lock held until
// success is kept. The job waits in the retry set, with error_message "Snoozed for <d> seconds".
func Snooze(d time.Duration) error { return &SnoozeError{Delay: d} }

// SnoozeError is the value Snooze returns; middleware can recognise it with errors.As.
type SnoozeError struct {
	// Delay is how long the job waits before it runs again.
	Delay time.Duration
}

func (s *SnoozeError) Error() string { return fmt.Sprintf("exq: snoozed for %s", s.Delay) }

// Sentinel errors of durable steps (Step).
var (
	// ErrInvalidStep is wrapped by Step when its name is not acceptable or it is called
	// outside a job; fn is not called.
	ErrInvalidStep = errors.New("exq: invalid step")
	// ErrStepTooLarge is wrapped by Step when fn's result is more than MaxStepBytes of JSON:
	// nothing is saved, and the step runs again on the job's next attempt.
	ErrStepTooLarge = errors.New("exq: step result too large")
	// ErrTooManySteps is wrapped by Step when the job has saved MaxSteps steps already; fn is
	// not called.
	ErrTooManySteps = errors.New("exq: too many steps")
)
