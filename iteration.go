package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/exqgo/exq/internal/bind"
	"github.com/exqgo/exq/internal/store"
)

// DefaultIterationSaveEvery is how often an iteration saves its cursor while it runs, unless
// Iteration.SaveEvery says otherwise: Sidekiq 7.3's STATE_FLUSH_INTERVAL.
const DefaultIterationSaveEvery = 5 * time.Second

// Iteration is a worker that walks a cursor, item by item (or page by page), for a job that
// runs long: exq calls Each with the cursor of the next item, and Each processes that item and
// returns the cursor of the one after it, or done once nothing is left. The cursor is saved in
// Redis at most every SaveEvery and always when the run stops before the end, so that:
//
//   - when the node stops (Stop, a TERM signal), the run ends at the next item: its cursor is
//     saved and the job goes back to the front of its queue without counting a retry, to
//     resume from that cursor on whichever node fetches it;
//   - a job rescued from a node that was killed resumes from the cursor saved last: the items
//     processed since that save run again (at most those of SaveEvery);
//   - a failure of Each saves the cursor of the item that failed and is an ordinary failure
//     (retried with backoff, or dead): the retry resumes at that item;
//   - a cancellation (API.CancelJob, or Sidekiq's cancel! from Ruby) is seen at the start and
//     at every save: the run stops, OnCancel runs, and the job goes to the dead set with error
//     "Canceled" and is not retried.
//
// The state is the hash it-<jid> in Sidekiq 7.3's layout (the guide "Long jobs: iteration"), so
// a Sidekiq iterable job and an exq one read and cancel each other's state.
//
// A is the job's args as Typed decodes them: the job has one arg, decoded into A with
// encoding/json (a job with no args leaves A its zero value). C is the cursor, stored as its
// JSON; the first run gets C's zero value (Sidekiq's nil cursor is JSON null). Register an
// Iteration under a class like any Worker, or with IterationFor for a JobArgs type.
//
// The hooks are optional; each gets the cursor the run is at. OnStart runs before the first
// run's first item, OnResume before every later run's; OnStop when a run stops before the end
// (node stopping, a failure, the job's context ended); OnCancel when a cancellation is seen;
// OnComplete once Each said done. Unlike Sidekiq's on_stop, OnStop is not called after
// OnComplete or OnCancel.
type Iteration[A, C any] struct {
	// Each processes the item at cursor and returns the cursor of the next one; done reports
	// that there is none (next is then saved as the last cursor). An error fails the run.
	Each func(ctx context.Context, job *Job, args A, cursor C) (next C, done bool, err error)
	// SaveEvery is the longest time between two saves of the cursor while the run goes on.
	// Zero means DefaultIterationSaveEvery (5 s); a negative value saves after every item.
	SaveEvery time.Duration

	OnStart, OnResume, OnStop, OnCancel, OnComplete func(ctx context.Context, job *Job, args A, cursor C)
}

// IterationFor is the registration of it as the worker of A's class (A's Class method, on its
// zero value), for Options.Register, as WorkerFor is for a function. An Iteration without Each
// makes Start fail with ErrInvalidOptions naming the entry.
func IterationFor[A JobArgs, C any](it Iteration[A, C]) Registration {
	return registration[A](it.Each == nil, func() Worker { return it })
}

// IterationProgress is an iterable job's saved state, as the API and the dashboard show it.
type IterationProgress struct {
	// Executions counts the runs that began (Sidekiq's ex).
	Executions int `json:"executions"`
	// Cursor is the JSON of the cursor of the next item (Sidekiq's c); JSON null before the
	// first save.
	Cursor json.RawMessage `json:"cursor"`
	// Runtime is the time spent iterating over every run up to the last save (Sidekiq's rt).
	Runtime time.Duration `json:"runtime_ns"`
	// Cancelled is when the job was cancelled (Sidekiq's cancelled), zero when it was not.
	Cancelled time.Time `json:"cancelled,omitzero"`
	// Done reports that the iteration completed (exq's exq_done).
	Done bool `json:"done,omitempty"`
}

// errIterationInterrupted is what an Iteration returns when the node stops: the runner puts
// the job back at the front of its queue without counting a retry (interrupt).
var errIterationInterrupted = errors.New("exq: iteration interrupted: the node is stopping")

// errIterationCanceled is what an Iteration returns once it saw its cancellation flag: the
// runner moves the job to the dead set as a CANCEL signal does.
var errIterationCanceled = errors.New("exq: iteration cancelled")

// iterationNode is what an Iteration reaches of the node running it (an *Exq). A job run
// without one (a test double's) iterates to the end with nothing saved.
type iterationNode interface {
	iterationStore() *store.Store
	iterationStopping() <-chan struct{}
	iterationTimeout() time.Duration
	iterationLog() *slog.Logger
}

func (it Iteration[A, C]) saveEvery() time.Duration { return iterSaveEvery(it.SaveEvery) }
func iterSaveEvery(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultIterationSaveEvery
	}
	return max(d, 0)
}

// Perform runs the iteration from the saved cursor (Worker).
func (it Iteration[A, C]) Perform(ctx context.Context, job *Job) error {
	if it.Each == nil {
		return fmt.Errorf("exq: iteration %s has no Each", job.Class)
	}
	var args A
	if err := decodeIterationArgs(job, &args); err != nil {
		return err
	}
	node, _ := job.node.(iterationNode)
	var jq *store.Store
	var stopping <-chan struct{}
	timeout := 5 * time.Second
	if node != nil {
		jq, stopping, timeout = node.iterationStore(), node.iterationStopping(), node.iterationTimeout()
	}
	// Writes run to their end even when the job's context ends: the cursor must be saved then.
	wctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), timeout)
	}
	var st store.IterationState
	if jq != nil {
		c, cancel := wctx()
		var err error
		st, err = jq.Iteration(c, job.JID)
		cancel()
		if err != nil {
			return fmt.Errorf("exq: iteration: read the state of %s: %w", job.JID, err)
		}
	}
	var cursor C
	if len(st.Cursor) > 0 {
		if err := json.Unmarshal(st.Cursor, &cursor); err != nil {
			return &ArgsDecodeError{Class: job.Class, msg: fmt.Sprintf("%s: saved cursor %.200q is not a %T", job.Class, st.Cursor, cursor), err: err}
		}
	}
	call := func(h func(context.Context, *Job, A, C)) {
		if h != nil {
			h(ctx, job, args, cursor)
		}
	}
	cancelled := func() error {
		call(it.OnCancel)
		if jq != nil {
			c, cancel := wctx()
			_ = jq.DeleteIteration(c, job.JID)
			cancel()
		}
		return errIterationCanceled
	}
	if st.Done {
		return nil // completed by an earlier run whose acknowledgement was lost
	}
	if st.Cancelled > 0 {
		return cancelled()
	}
	select {
	case <-stopping: // fetched as the node began to stop: back to the queue, the state untouched
		return errIterationInterrupted
	default:
	}
	executions := st.Executions + 1
	began := time.Now()
	runtime := func() float64 { return st.Runtime + time.Since(began).Seconds() }
	save := func() (int64, error) {
		if jq == nil {
			return 0, nil
		}
		b, err := json.Marshal(cursor)
		if err != nil {
			return 0, fmt.Errorf("exq: iteration: cursor %T does not encode: %w", cursor, err)
		}
		c, cancel := wctx()
		defer cancel()
		at, err := jq.SaveIteration(c, job.JID, executions, b, runtime())
		if err != nil {
			return 0, fmt.Errorf("exq: iteration: save the cursor of %s: %w", job.JID, err)
		}
		return at, nil
	}
	if executions == 1 {
		call(it.OnStart)
	} else {
		call(it.OnResume)
	}
	every := it.saveEvery()
	saved := time.Now()
	for {
		select {
		case <-ctx.Done():
			cause := context.Cause(ctx)
			if errors.Is(cause, errCanceled) {
				return cancelled()
			}
			if !errors.Is(cause, errBuried) { // a buried node's job runs elsewhere: its cursor is not ours
				_, _ = save()
			}
			call(it.OnStop)
			return ctx.Err()
		case <-stopping:
			if _, err := save(); err != nil {
				call(it.OnStop)
				return err // left for the shutdown to hand back, or a retry, from the last cursor saved
			}
			call(it.OnStop)
			return errIterationInterrupted
		default:
		}
		next, done, err := it.Each(ctx, job, args, cursor)
		if err != nil {
			_, _ = save() // at the item that failed, which the retry runs again
			call(it.OnStop)
			return err
		}
		cursor = next
		if done {
			if jq != nil {
				b, err := json.Marshal(cursor)
				if err != nil {
					b = []byte("null")
				}
				c, cancel := wctx()
				err = jq.CompleteIteration(c, job.JID, executions, b, runtime())
				cancel()
				if err != nil && node != nil {
					// The job succeeds anyway; its state expires with its TTL.
					node.iterationLog().Warn("exq: iteration: could not mark the state done; it expires by itself",
						"class", job.Class, "jid", job.JID, "error", err)
				}
			}
			call(it.OnComplete)
			return nil
		}
		if time.Since(saved) >= every {
			at, err := save()
			saved = time.Now()
			if err != nil {
				call(it.OnStop)
				return err
			}
			if at > 0 {
				return cancelled()
			}
		}
	}
}

// decodeIterationArgs decodes a job's one arg into dst as Typed does; a job with no args
// leaves dst as it is.
func decodeIterationArgs[A any](job *Job, dst *A) error {
	var args []json.RawMessage
	if err := json.Unmarshal(job.Args, &args); err != nil {
		return &ArgsDecodeError{Class: job.Class, msg: fmt.Sprintf("%s: args are not a JSON array", job.Class), err: err}
	}
	switch len(args) {
	case 0:
		return nil
	case 1:
		if err := bind.Decode(args[0], dst); err != nil {
			return &ArgsDecodeError{Class: job.Class, msg: fmt.Sprintf("%s: arg %.200s is not a %T", job.Class, args[0], *dst), err: err}
		}
		return nil
	default:
		return &ArgsDecodeError{Class: job.Class,
			msg: fmt.Sprintf("%s: an iteration takes one arg (the JSON of a %T), the job has %d", job.Class, *dst, len(args))}
	}
}

// iterProgressOf is the public view of a saved state. A cursor that is not valid JSON (the hash
// may have been written by anyone) shows as a JSON string holding it, so --json stays valid.
func iterProgressOf(st store.IterationState) IterationProgress {
	p := IterationProgress{Executions: st.Executions, Runtime: time.Duration(st.Runtime * float64(time.Second)), Done: st.Done}
	const maxCursor = 4096
	switch c := st.Cursor; {
	case len(c) == 0:
		p.Cursor = json.RawMessage("null")
	case len(c) <= maxCursor && json.Valid(c):
		p.Cursor = json.RawMessage(c)
	default:
		s := string(c)
		if len(s) > maxCursor {
			s = s[:maxCursor] + "…"
		}
		b, _ := json.Marshal(s)
		p.Cursor = b
	}
	if st.Cancelled > 0 {
		p.Cancelled = time.Unix(st.Cancelled, 0).UTC()
	}
	return p
}
