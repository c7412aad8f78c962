package exq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// What happens when a job of a batch dies (a success or a failure takes the same path with
// store.RunSucceeded or store.RunFailed; `grep -rn RunDied --include=*.go .` finds each step):
//   - The engine's failure path, finding the job out of retries (or its args undecodable),
//     records the death in the batch first, settle(…, store.RunDied), and only then writes
//     the job to the dead set. If the record cannot be written, neither is the dead set: the
//     job stays in the node's backup list and is rescued and run again.
//   - internal/flows/settle.go, Items: the records a run's outcome makes, and why recording
//     the batch's first makes each transition happen exactly once.
//   - internal/store/settle_group.go, Store.Settle, runs scripts/batch_settle.lua, which in
//     one atomic step keeps the jid pending (OnSuccess waits until it succeeds, say after a
//     retry from the dead set), marks it as run (it counts for OnComplete), adds it to the
//     batch's dead set and, at the batch's first death, enqueues OnDeath once; a child
//     batch's parents record the death the same way.
//   - Afterwards: Event BatchCallback (Callback "death") for the node that fired it,
//     API.Batch's Dead and DiedAt, and the dead jids on the dashboard's batch page
//     (web/batch.go) and in `exq batch show`.

// Default lifetimes of a batch's data (BatchOptions.TTL and Expiry).
const (
	// DefaultBatchTTL is how long a batch's data stays once it has succeeded.
	DefaultBatchTTL = 24 * time.Hour
	// DefaultBatchExpiry is how long a batch's data stays while it has not succeeded, counted
	// from its creation or its last add (Sidekiq Pro keeps such a batch 30 days).
	DefaultBatchExpiry = 30 * 24 * time.Hour
)

// BatchOptions describe a batch (Sidekiq Pro's model): a set of jobs with callbacks, each an
// ordinary job enqueued exactly once when its condition first holds. See docs/workflows.md.
type BatchOptions struct {
	// ID names the batch; empty means a new random id. A batch that exists is not created
	// again (ErrBatchExists). An id is at most 200 bytes of UTF-8 without spaces, control
	// characters, ':', '{', '}', '*', '?', '[', ']' or '\' (ErrInvalidBatch otherwise).
	ID string
	// Description is shown by the dashboard and the exq command.
	Description string
	// OnSuccess is enqueued once every job of the batch has succeeded. A callback is a
	// JobSpec like the batch's jobs (&exq.JobSpec{Args: Notify{…}} for a typed one; Queue
	// "default" when empty); At, In and Unique are refused.
	OnSuccess *JobSpec
	// OnComplete is enqueued once every job of the batch has run at least once, whether it
	// succeeded or failed (a failed job may still be retrying).
	OnComplete *JobSpec
	// OnDeath is enqueued the first time a job of the batch dies (moves to the dead set).
	OnDeath *JobSpec
	// Parent makes this batch a child of batch Parent: it counts there as one pending member,
	// which succeeds when this batch succeeds, has run when it completes, and dies when a job
	// of it dies, so the parent's callbacks wait for this batch's. Create a child from a running
	// job of the parent (its pending count then cannot reach zero first); from elsewhere, the
	// parent must not have succeeded yet. The parent must be on the same Redis and namespace.
	// A rerun of a parent's job whose success the parent already counted (a node was killed
	// before the acknowledgement) creates nothing and gets an empty id and no error: its first
	// run's child is in the parent.
	Parent string
	// TTL is how long the batch's data stays once it has succeeded. Zero means
	// DefaultBatchTTL.
	TTL time.Duration
	// Expiry is how long the batch's data stays while it has not succeeded, from its creation
	// or its last add. Zero means DefaultBatchExpiry.
	Expiry time.Duration
}

// NewBatch creates a batch with its jobs in one atomic step and returns the batch id and the
// jobs' jids, in order. Every job carries the batch id in its JSON as "bid". Jobs of a batch
// are enqueued now (At, In and Unique are refused). The jobs must run on exq nodes: Sidekiq
// OSS and Exq workers do not record their outcomes in the batch (docs/workflows.md).
func (e *Exq) NewBatch(ctx context.Context, o BatchOptions, jobs []JobSpec) (string, []string, error) {
	return e.enq.newBatch(ctx, o, false, jobs)
}

// NewBatch creates a batch with its jobs; see Exq.NewBatch.
func (c *Client) NewBatch(ctx context.Context, o BatchOptions, jobs []JobSpec) (string, []string, error) {
	return c.enq.newBatch(ctx, o, false, jobs)
}

// OpenBatch creates an empty, open batch to fill in parts (a client holds one at a time): Add
// jobs in as many calls as needed, then Close it. Its success and complete callbacks fire only
// once it is closed, at Close itself if every job has succeeded or run by then. A batch never
// closed stays open (BatchStatus.Open) until its Expiry. See NewBatch and docs/workflows.md.
func (e *Exq) OpenBatch(ctx context.Context, o BatchOptions) (*BatchWriter, error) {
	return e.enq.openBatch(ctx, o)
}

// OpenBatch creates an open batch; see Exq.OpenBatch.
func (c *Client) OpenBatch(ctx context.Context, o BatchOptions) (*BatchWriter, error) {
	return c.enq.openBatch(ctx, o)
}

func (en *enqueuer) openBatch(ctx context.Context, o BatchOptions) (*BatchWriter, error) {
	bid, _, err := en.newBatch(ctx, o, true, nil)
	return &BatchWriter{en: en, id: bid}, err
}

// BatchWriter adds jobs to a batch made by OpenBatch, and closes it.
type BatchWriter struct {
	en *enqueuer
	id string
}

// ID is the batch's id.
func (b *BatchWriter) ID() string { return b.id }

// Add adds jobs to the open batch and returns their jids. A job whose jid is in the batch
// already is not added again: an Add repeated after an error with the same jids (exq.JID)
// adds each job once. After Close it returns ErrBatchClosed.
func (b *BatchWriter) Add(ctx context.Context, jobs []JobSpec) ([]string, error) {
	return flows.AddToBatch(ctx, b.en.flowEnv(), b.id, store.OpenMember, b.en.flowSpecs("add to open batch", jobs, nil))
}

// Close closes the batch, firing its callbacks now if their conditions hold already. A
// second Close changes nothing.
func (b *BatchWriter) Close(ctx context.Context) error {
	fired, err := flows.CloseBatch(ctx, b.en.flowEnv(), b.id)
	for _, f := range fired {
		b.en.events.emit(Event{Kind: BatchCallback, Flow: b.id, Callback: f})
	}
	return err
}

// AddToBatch adds jobs to the batch of the job that is running with ctx, and returns their
// jids. The running job counts as pending until its own outcome is recorded, so the batch
// cannot succeed while it adds. A rerun of a job whose success the batch has already counted
// (a node was killed after the outcome and before the acknowledgement) adds nothing and
// returns no jids: its first run's jobs are in the batch. Outside a running job of a batch it
// returns ErrNotInBatch.
func AddToBatch(ctx context.Context, jobs []JobSpec) ([]string, error) {
	job := JobFromContext(ctx)
	if job == nil || job.bid == "" || job.node == nil {
		return nil, ErrNotInBatch
	}
	if flows.ReservedJID(job.JID) {
		// Written by another producer: as the adder it would stand for a member of the
		// batch's layout (an open batch's mark lets anyone add).
		return nil, fmt.Errorf("exq: add to batch %s: the running job's jid %q is reserved (it begins with %q): %w",
			job.bid, job.JID, flows.ReservedPrefix, ErrInvalidBatch)
	}
	return job.node.addToBatch(ctx, job.bid, job.JID, jobs)
}

// addToBatch adds jobs to batch bid on behalf of its running job jid (AddToBatch).
func (e *Exq) addToBatch(ctx context.Context, bid, jid string, jobs []JobSpec) ([]string, error) {
	return flows.AddToBatch(ctx, e.enq.flowEnv(), bid, jid, e.enq.flowSpecs("add to batch", jobs, nil))
}

// BatchID is the id of the batch the job belongs to ("bid"), or "" for none.
func (j *Job) BatchID() string { return j.bid }

// CallbackOf is, for a batch's callback job, the id of the batch it was enqueued for, and ""
// for any other job.
func (j *Job) CallbackOf() string { return flows.CallbackOf(j.raw) }

// flowEnv is what the writes of batches and workflows use of this enqueuer.
func (en *enqueuer) flowEnv() flows.Env {
	return flows.Env{Store: en.jq, Now: en.serverNow,
		Enqueued: func(q, class, jid string) { en.enqueued(q, class, jid, time.Time{}) }}
}

// flowSpecs hands specs over to internal/flows, each resolved (JobSpec.resolved) and rendered
// by buildAt when the batch or workflow is written (a refusal names the job by its index, and
// by names[i] when given).
func (en *enqueuer) flowSpecs(op string, specs []JobSpec, names []string) []flows.Spec {
	out := make([]flows.Spec, len(specs))
	for i, s := range specs {
		name := func(err error) error {
			var bad *invalidJobError
			if err = inBatch(err, i); names != nil && errors.As(err, &bad) {
				err = fmt.Errorf("%w (workflow job %q)", err, names[i])
			}
			return err
		}
		out[i] = en.flowSpec(op, s, name)
	}
	return out
}

// callbackSpec is flowSpecs for the callback of a batch held by field (BatchOptions.OnSuccess,
// OnComplete, OnDeath): op names it already.
func (en *enqueuer) callbackSpec(op string, s JobSpec) *flows.Spec {
	sp := en.flowSpec(op, s, func(err error) error { return err })
	sp.Label = "the job"
	return &sp
}

// flowSpec is one job of flowSpecs; name names it in a refusal.
func (en *enqueuer) flowSpec(op string, s JobSpec, name func(error) error) flows.Spec {
	s, resolveErr := s.resolved()
	return flows.Spec{Queue: s.Queue, Scheduled: !s.At.IsZero() || s.In != 0,
		Build: func(ctx context.Context, now time.Time, f *wire.NewJob) (store.FlowJob, bool, error) {
			if resolveErr != nil {
				return store.FlowJob{}, false, name(&invalidJobError{op: op, msg: resolveErr.Error()})
			}
			// The option that gives the job its flow fields is not one a caller can pass.
			opts := append(slices.Clip(s.Options), optionFunc{"inFlow", func(c *enqueueConfig) error { c.flow = f; return nil }})
			b, err := en.buildAt(ctx, now, op, s.Queue, s.Class, s.Args, time.Time{}, opts)
			return store.FlowJob{JID: b.jid, Queue: s.Queue, Class: s.Class, Doc: b.doc, Done: b.done}, b.lock != nil, name(err)
		}}
}

func (en *enqueuer) newBatch(ctx context.Context, o BatchOptions, open bool, specs []JobSpec) (string, []string, error) {
	op := map[bool]string{false: "new batch", true: "open batch"}[open]
	b := flows.Batch{ID: o.ID, Description: o.Description, Parent: o.Parent, TTL: o.TTL, Expiry: o.Expiry, Open: open}
	for i, cb := range []*JobSpec{o.OnSuccess, o.OnComplete, o.OnDeath} {
		if cb != nil {
			b.Callbacks[i] = en.callbackSpec(op+": "+flows.CallbackFields[i]+" callback", *cb)
		}
	}
	if job := JobFromContext(ctx); job != nil && o.Parent != "" && job.bid == o.Parent {
		if flows.ReservedJID(job.JID) {
			return "", nil, fmt.Errorf("exq: %s: child of %s: the running job's jid %q is reserved (it begins with %q): %w",
				op, o.Parent, job.JID, flows.ReservedPrefix, ErrInvalidBatch)
		}
		b.Adder = job.JID // a child created by a running job of its parent
	}
	return flows.NewBatch(ctx, en.flowEnv(), b, en.flowSpecs(op, specs, nil))
}

// BatchStatus is what is known of one batch.
type BatchStatus struct {
	// ID and Description are as created.
	ID, Description string
	// Total is how many jobs were added; Pending how many have not succeeded; Failed how many
	// of those have failed at least once (dead ones included); Dead how many died.
	Total, Pending, Failed, Dead int
	// CreatedAt is when the batch was created; CompletedAt when every job had run at least
	// once; SucceededAt when every job had succeeded; DiedAt when a job first died. Zero when
	// it has not happened. Each is when its callback was enqueued.
	CreatedAt, CompletedAt, SucceededAt, DiedAt time.Time
	// Callbacks are the jids of the callback jobs, by event ("success", "complete", "death").
	Callbacks map[string]string
	// Open is true for a batch made by OpenBatch and not yet closed.
	Open bool
}

// Batch reads one batch's status; ErrBatchNotFound when there is no such batch.
func (a *API) Batch(ctx context.Context, bid string) (BatchStatus, error) {
	if err := flows.CheckID(bid); err != nil {
		// No batch has such an id (NewBatch refuses it); its keys would be another batch's
		// ("b1:pending" read b1's pending hash as a batch).
		return BatchStatus{}, fmt.Errorf("exq: api: batch %q: not a batch id: %v: %w", bid, err, ErrBatchNotFound)
	}
	st, err := flows.ReadBatch(ctx, a.jq, bid)
	return BatchStatus(st), err
}

// Batches lists the batches whose data is still kept, newest first.
func (a *API) Batches(ctx context.Context, o ListOptions) ([]BatchStatus, error) {
	start, stop, err := o.bounds()
	if err != nil {
		return nil, err
	}
	list, err := flows.ListBatches(ctx, a.jq, start, stop-start+1)
	out := make([]BatchStatus, 0, len(list))
	for _, st := range list {
		if flows.CheckID(st.ID) == nil { // a listed id no batch can have names another batch's key
			out = append(out, BatchStatus(st))
		}
	}
	return out, err
}

// BatchJobs lists up to limit jids of batch bid: which is "pending" (not yet succeeded), "dead",
// "all", "foreign" (pending, running on a Sidekiq or Exq node, which records nothing in a batch)
// or "unaccounted" (pending, in no queue, set, backup or busy list: run by such a node, or
// lost). The last two read every queue and set in pages (docs/workflows.md, Exq nodes only).
func (a *API) BatchJobs(ctx context.Context, bid, which string, limit int) ([]string, error) {
	if err := flows.CheckID(bid); err != nil {
		return nil, fmt.Errorf("exq: api: batch %q: not a batch id: %v: %w", bid, err, ErrBatchNotFound)
	}
	return flows.BatchJobs(ctx, a.jq, bid, which, limit)
}
