package exq

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/exqgo/exq/internal/bind"
	"github.com/exqgo/exq/internal/wire"
)

// Job is one job as a worker sees it. The fields are read from the job's JSON document (the
// format Exq and Sidekiq share); Raw returns that document exactly as it was stored.
type Job struct {
	// Class names the worker that runs the job ("MyApp.SendEmail", "HardWorker").
	Class string
	// Queue is the queue the job was taken from.
	Queue string
	// JID is the job's id: a UUID for jobs enqueued by exq or Exq, 24 hex characters for
	// jobs from Sidekiq.
	JID string
	// Args is the JSON array of arguments, untouched. Use Bind to decode it.
	Args json.RawMessage
	// MaxRetries is how many retries the job gets in all ("retry" resolved against the node's
	// Options.MaxRetries); 0 means it goes to the dead set at its first failure.
	MaxRetries int
	// RetryCount is how many times the job has failed before this run (0 on the first run).
	RetryCount int
	// EnqueuedAt is when the job was enqueued, or for a scheduled job when it was due. These
	// four times are read in either unit: float seconds (Exq, Sidekiq 6 and 7) or integer
	// milliseconds (Sidekiq 8), told apart by the JSON number's form as Sidekiq 8 does.
	EnqueuedAt time.Time
	// CreatedAt is when the job was first created (Sidekiq's created_at); zero if absent.
	CreatedAt time.Time
	// FailedAt is the time of the job's first failure; zero if it has not failed yet.
	FailedAt time.Time
	// RetriedAt is the time of the job's latest failure; zero if it has not failed yet.
	RetriedAt time.Time
	// ErrorMessage and ErrorClass describe the latest failure, if any.
	ErrorMessage, ErrorClass string

	raw          string
	worker       Worker          // nil when no worker is registered for Class
	outcomeHooks []func(outcome) // called once the run's outcome is stored (middleware.go)
	setMeta      [][2]string     // fields set by SetMeta, written with a retry, snooze or death
	uniqueToken  string
	uniqueUntil  UniqueUntilMode
	// bid, wf and wfJob are the job's batch, workflow and name there ("" for none); node is
	// the node running it (nil outside a node), for AddToBatch and SetResult; progress is its
	// run's, for SetProgress.
	bid, wf, wfJob string
	key            string // its key ("exq_key", Key), "" for none
	node           jobNode
	progress       *atomic.Pointer[wire.Progress]
	// steps is the node's store and settings for Step, nil outside a node; stepsUsed is set by
	// the run's first Step call (step.go).
	steps     *stepConfig
	stepsUsed *atomic.Bool
}

// jobNode is what a running job's own calls (SetResult, ParentResult, AddToBatch) reach of the
// node that runs it: *Exq.
type jobNode interface {
	setResult(ctx context.Context, jid string, v any) error
	readResult(ctx context.Context, jid string, dst any) error
	addToBatch(ctx context.Context, bid, jid string, jobs []JobSpec) ([]string, error)
}

// Key is the key the job was enqueued with (Key, or its args' JobKey method; docs/keys.md),
// "" for a job without one.
func (j *Job) Key() string { return j.key }

// Raw returns the job's JSON document exactly as it was read from Redis.
func (j *Job) Raw() string { return j.raw }

// Bind decodes the job's positional args into dst, one pointer per arg, with encoding/json
// rules: Bind(&userID, &template) for args [42,"welcome"]. A nil pointer skips its arg. The
// number of pointers must equal the number of args, so a job from an older or newer producer
// fails clearly instead of running with zero values.
//
// A number decoded into an interface{} (an `any` arg, or inside a map[string]any or []any)
// is a json.Number, not encoding/json's float64: Ruby and Elixir push integers of any size,
// and a float64 would silently round an id like 12345678901234567890. Call its Int64,
// Float64 or String method, or bind into a typed destination (int64, float64, a struct),
// which decodes as usual.
//
// Its error is an *ArgsDecodeError: a worker that returns it (wrapped or not) sends the job to
// the dead set at once, since its args will never decode.
//
// Pointers to the common built-in types (ints, uints, floats, string, bool, []string,
// json.RawMessage, json.Number, and any for a scalar) decode without reflection, with
// exactly encoding/json's results.
func (j *Job) Bind(dst ...any) error {
	if err := bind.Args(j.Class, j.Args, dst); err != nil {
		return &ArgsDecodeError{Class: j.Class, err: err}
	}
	return nil
}

// newJob builds the worker's view of a decoded document.
func newJob(h wire.Header, raw, queue string, nodeMaxRetries int) *Job {
	j := &Job{Args: json.RawMessage(h.Args)}
	j.fill(h, raw, queue, nodeMaxRetries)
	return j
}

// fill sets every field of j but Args from a decoded document: a node fills the Job that is
// part of the job's run (one allocation for both), with its Args copied where the run has room.
func (j *Job) fill(h wire.Header, raw, queue string, nodeMaxRetries int) {
	j.Class, j.Queue, j.JID = h.Class, queue, h.JID
	j.MaxRetries, j.RetryCount = h.MaxRetries(nodeMaxRetries), h.Count()
	j.raw = raw
	j.uniqueToken, j.uniqueUntil = string(h.UniqueToken), UniqueUntilMode(h.UniqueUntil)
	j.bid, j.wf, j.wfJob = h.Bid, h.Workflow, h.WorkflowJob
	j.key = h.Key
	j.EnqueuedAt = h.EnqueuedAt.Stamp()
	j.CreatedAt = h.CreatedAt.Stamp()
	j.FailedAt = h.FailedAt.Stamp()
	j.RetriedAt = h.RetriedAt.Stamp()
	if h.ErrorMessage != nil {
		j.ErrorMessage = *h.ErrorMessage
	}
	if h.ErrorClass != nil {
		j.ErrorClass = *h.ErrorClass
	}
}

// Worker runs jobs of one class. Perform returns nil when the job succeeded; an error (or a
// panic) makes it a failure that is retried with backoff or, once its retries are used up,
// moved to the dead set. ctx ends when the node stops and the shutdown grace period is over.
//
// A Worker may also have a Timeout() time.Duration method (its run time, instead of
// Options.JobTimeout; negative means none) and a NextRetry(job *Job, err error) time.Duration
// method (the delay before the coming retry after err, instead of Options.Backoff; zero or
// less leaves it to Options.Backoff).
type Worker interface {
	Perform(ctx context.Context, job *Job) error
}

// WorkerFunc lets a plain function be a Worker. Middleware calls the same type Handler.
type WorkerFunc func(ctx context.Context, job *Job) error

// Perform calls f.
func (f WorkerFunc) Perform(ctx context.Context, job *Job) error { return f(ctx, job) }

// jobKey is the context key of the running job.
type jobKey struct{}

// JobFromContext returns the job whose run ctx belongs to, or nil outside a job, for code
// below a worker that has only its ctx (a worker itself gets the *Job).
func JobFromContext(ctx context.Context) *Job {
	j, _ := ctx.Value(jobKey{}).(*Job)
	return j
}

// outcome is what the engine stored for one run of a job, reported to the functions that
// middleware registered with Job.onOutcome (LogJobs).
type outcome struct {
	name       string    // done, retry, dead, snoozed, handed back, rescued, left in backup
	retryCount int       // the job's retry_count as stored
	at         time.Time // when it runs again (retry, snoozed)
	err        error     // the failure (retry, dead, left in backup); nil otherwise
	errorClass string    // error_class as stored, with err
}

// storedIf is o when its write succeeded (ok), else "left in backup": the document in the
// backup list, unchanged, keeps the retry_count it had before the run.
func (o outcome) storedIf(ok bool, before int) outcome {
	if !ok {
		o.name, o.retryCount, o.at = "left in backup", before, time.Time{}
	}
	return o
}

// onOutcome registers f to be called once the run's outcome is stored.
func (j *Job) onOutcome(f func(outcome)) { j.outcomeHooks = append(j.outcomeHooks, f) }

// UniqueUntilMode says when a unique job's lock is released.
type UniqueUntilMode string

// The release points of a unique lock (Exq's unique_until).
const (
	// UntilSuccess releases the lock when the job succeeds or dies; retries and snoozes keep
	// it. A duplicate is refused while the job waits, runs and retries.
	UntilSuccess UniqueUntilMode = "success"
	// UntilStart releases the lock just before the job's first run, so a duplicate may be
	// enqueued while it runs. A duplicate is refused while the job waits.
	UntilStart UniqueUntilMode = "start"
	// UntilExpiry never releases the lock: it expires UniqueOpts.For after the job's enqueue
	// (or due) time. At most one such job per For: "once per hour" is UntilExpiry.
	UntilExpiry UniqueUntilMode = "expiry"
)
