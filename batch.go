package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

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
	// again (ErrBatchExists).
	ID string
	// Description is shown by the dashboard and the exq command.
	Description string
	// OnSuccess is enqueued once every job of the batch has succeeded.
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

// batchEvents are the callbacks' names, as stored and as BatchStatus reports their times.
var batchEvents = [...]string{"success", "complete", "death"}

// inFlow is the option that gives a job its batch and workflow fields. It is unexported: a
// caller cannot put a job into a batch except through NewBatch and AddToBatch.
type inFlow struct{ f *wire.NewJob }

func (o inFlow) apply(c *enqueueConfig) error { c.flow = o.f; return nil }

func (o inFlow) String() string { return "inFlow" }

// NewBatch creates a batch with its jobs in one atomic step and returns the batch id and the
// jobs' jids, in order. Every job carries the batch id in its JSON as "bid". Jobs of a batch
// are enqueued now (At, In and Unique are refused). The jobs must run on exq nodes: Sidekiq
// OSS and Exq workers do not record their outcomes in the batch (docs/workflows.md).
func (e *Exq) NewBatch(ctx context.Context, o BatchOptions, jobs []JobSpec) (string, []string, error) {
	return e.enq.newBatch(ctx, o, jobs)
}

// NewBatch creates a batch with its jobs; see Exq.NewBatch.
func (c *Client) NewBatch(ctx context.Context, o BatchOptions, jobs []JobSpec) (string, []string, error) {
	return c.enq.newBatch(ctx, o, jobs)
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
	return job.node.enq.addToBatch(ctx, job.bid, job.JID, jobs)
}

// BatchID is the id of the batch the job belongs to ("bid"), or "" for none.
func (j *Job) BatchID() string { return j.bid }

// CallbackOf is, for a batch's callback job, the id of the batch it was enqueued for, and ""
// for any other job.
func (j *Job) CallbackOf() string {
	obj, err := wire.ParseObject(j.raw)
	if err != nil {
		return ""
	}
	raw, ok := obj.Get("callback_bid")
	var bid string
	if !ok || json.Unmarshal(raw, &bid) != nil {
		return ""
	}
	return bid
}

func badBatch(op, format string, a ...any) error {
	return fmt.Errorf("exq: %s: %s: %w", op, fmt.Sprintf(format, a...), ErrInvalidBatch)
}

// buildFlowJobs validates and renders the jobs of a batch or a workflow; flow gives each its
// fields (nil entries: none). The EnqueueHooks of the jobs hear the write's result through
// finishFlow; when a job is refused, those of the jobs built before it hear the refusal.
func (en *enqueuer) buildFlowJobs(ctx context.Context, now time.Time, op string, specs []JobSpec, flow func(i int) *wire.NewJob, bad func(op, format string, a ...any) error) ([]flowJob, error) {
	out := make([]flowJob, 0, len(specs))
	fail := func(err error) ([]flowJob, error) {
		finishFlow(out, err)
		return nil, err
	}
	for i, s := range specs {
		if !s.At.IsZero() || s.In != 0 {
			return fail(bad(op, "job %d is scheduled (At or In): jobs of a batch or workflow are enqueued now", i))
		}
		opts := s.Options
		if f := flow(i); f != nil {
			opts = append(append(make([]EnqueueOption, 0, len(opts)+1), opts...), inFlow{f})
		}
		b, err := en.buildAt(ctx, now, op, s.Queue, s.Class, s.Args, time.Time{}, opts)
		if err != nil {
			return fail(inBatch(err, i))
		}
		out = append(out, flowJob{jid: b.jid, queue: s.Queue, class: s.Class, doc: b.doc, done: b.done})
		if b.lock != nil {
			return fail(bad(op, "job %d is unique: a unique lock would decide alone whether it runs", i))
		}
	}
	return out, nil
}

// finishFlow tells the EnqueueHooks of jobs how their write went: written (err nil, or a
// shortfall of replicas), or not.
func finishFlow(jobs []flowJob, err error) {
	written := err == nil || errors.Is(err, ErrNotReplicated)
	for _, j := range jobs {
		jid := j.jid
		if !written {
			jid = ""
		}
		for _, f := range j.done {
			f(jid, err)
		}
	}
}

func (en *enqueuer) newBatch(ctx context.Context, o BatchOptions, specs []JobSpec) (string, []string, error) {
	const op = "new batch"
	if len(specs) == 0 {
		return "", nil, badBatch(op, "no jobs: a batch is created with its first jobs")
	}
	if o.TTL < 0 || o.Expiry < 0 {
		return "", nil, badBatch(op, "TTL and Expiry must not be negative")
	}
	bid := o.ID
	if bid == "" {
		bid = wire.NewJID()
	} else if err := checkFlowID(bid); err != nil {
		return "", nil, badBatch(op, "ID: %v", err)
	}
	if o.Parent != "" {
		if err := checkFlowID(o.Parent); err != nil {
			return "", nil, badBatch(op, "Parent: %v", err)
		}
		if o.Parent == bid {
			return "", nil, badBatch(op, "Parent is the batch itself")
		}
	}
	now, err := en.serverNow(ctx, op)
	if err != nil {
		return "", nil, err
	}
	fields := [][2]string{
		{"description", o.Description},
		{"ttl", strconv.FormatInt(max(int64(cmpDur(o.TTL, DefaultBatchTTL)/time.Second), 1), 10)},
	}
	var queues []string
	var callbacks []flowJob // their hooks hear the batch's write: the callbacks are stored with it
	for i, cb := range []*JobSpec{o.OnSuccess, o.OnComplete, o.OnDeath} {
		if cb == nil {
			continue
		}
		name := batchEvents[i]
		built, err := en.buildFlowJobs(ctx, now, op+": callback "+name, []JobSpec{*cb},
			func(int) *wire.NewJob { return &wire.NewJob{CallbackOf: bid} }, badBatch)
		if err != nil {
			finishFlow(callbacks, err)
			return "", nil, err
		}
		callbacks = append(callbacks, built...)
		fields = append(fields, [2]string{"cb:" + name, built[0].doc}, [2]string{"cbq:" + name, cb.Queue},
			[2]string{"cbjid:" + name, built[0].jid})
		if !contains(queues, cb.Queue) {
			queues = append(queues, cb.Queue)
		}
	}
	fields = append(fields, [2]string{"queues", strings.Join(queues, "\n")})
	jobs, err := en.buildFlowJobs(ctx, now, op, specs, func(int) *wire.NewJob { return &wire.NewJob{Bid: bid} }, badBatch)
	if err != nil {
		finishFlow(callbacks, err)
		return "", nil, err
	}
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		if seen[j.jid] {
			err := badBatch(op, "job %d: jid %q is used twice", i, j.jid)
			finishFlow(append(callbacks, jobs...), err)
			return "", nil, err
		}
		seen[j.jid] = true
	}
	hooked := append(callbacks, jobs...)
	token := wire.NewJID()
	adder := ""
	if job := JobFromContext(ctx); job != nil && o.Parent != "" && job.bid == o.Parent {
		adder = job.JID // a child created by a running job of its parent
	}
	status, _, err := en.jq.batchWrite(ctx, bid, "create", token, o.Parent, adder, now, cmpDur(o.Expiry, DefaultBatchExpiry), fields, jobs)
	switch {
	case err != nil && !errors.Is(err, ErrNotReplicated):
		err = fmt.Errorf("exq: %s (%d jobs): %w", op, len(specs), err)
	case status == batchExists:
		err = fmt.Errorf("exq: %s %s: %w", op, bid, ErrBatchExists)
	case status == batchNoParent:
		err = fmt.Errorf("exq: %s %s: parent batch %s does not exist or has succeeded: %w", op, bid, o.Parent, ErrBatchNotFound)
	case status == batchDone:
		// A rerun of a parent's job that already succeeded: its first run's child exists.
		finishFlow(hooked, errors.New("exq: new batch: not written: a rerun of a job whose child batch exists"))
		return "", nil, nil
	case err != nil:
		err = fmt.Errorf("exq: %s %s: written on the master: %w", op, bid, err)
	}
	finishFlow(hooked, err)
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return "", nil, err
	}
	for _, j := range jobs {
		en.enqueued(j.queue, j.class, j.jid, time.Time{})
	}
	return bid, flowJIDs(jobs), err
}

func (en *enqueuer) addToBatch(ctx context.Context, bid, adder string, specs []JobSpec) ([]string, error) {
	const op = "add to batch"
	if len(specs) == 0 {
		return nil, nil
	}
	now, err := en.serverNow(ctx, op)
	if err != nil {
		return nil, err
	}
	jobs, err := en.buildFlowJobs(ctx, now, op, specs, func(int) *wire.NewJob { return &wire.NewJob{Bid: bid} }, badBatch)
	if err != nil {
		return nil, err
	}
	status, _, err := en.jq.batchWrite(ctx, bid, "add", adder, "", "", now, DefaultBatchExpiry, nil, jobs)
	switch {
	case err != nil && !errors.Is(err, ErrNotReplicated):
		err = fmt.Errorf("exq: %s %s (%d jobs): %w", op, bid, len(specs), err)
	case status == batchGone:
		err = fmt.Errorf("exq: %s %s: %w", op, bid, ErrBatchNotFound)
	case status == batchNotMember:
		err = fmt.Errorf("exq: %s %s: job %s is not a job of the batch: %w", op, bid, adder, ErrNotInBatch)
	case status == batchDone:
		// A rerun of a job whose success the batch counted: its first run's jobs are in it.
		finishFlow(jobs, errors.New("exq: add to batch: not written: a rerun of a job that already succeeded"))
		return nil, nil
	case err != nil:
		err = fmt.Errorf("exq: %s %s: written on the master: %w", op, bid, err)
	}
	finishFlow(jobs, err)
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return nil, err
	}
	for _, j := range jobs {
		en.enqueued(j.queue, j.class, j.jid, time.Time{})
	}
	return flowJIDs(jobs), err
}

func flowJIDs(jobs []flowJob) []string {
	jids := make([]string, len(jobs))
	for i, j := range jobs {
		jids[i] = j.jid
	}
	return jids
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// cmpDur is d, or def when d is zero.
func cmpDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// checkFlowID refuses a batch or workflow id that would make its keys ambiguous or unreadable.
func checkFlowID(id string) error {
	if len(id) > 200 {
		return fmt.Errorf("longer than 200 bytes")
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f || r == ':' || r == '*' || r == '?' || r == '[' || r == ']' || r == '\\' {
			return fmt.Errorf("%q holds %q: use letters, digits, '-', '_' or '.'", id, r)
		}
	}
	return nil
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
}

// Batch reads one batch's status; ErrBatchNotFound when there is no such batch.
func (a *API) Batch(ctx context.Context, bid string) (BatchStatus, error) {
	st, err := a.jq.batchRead(ctx, bid)
	if err != nil {
		return BatchStatus{}, fmt.Errorf("exq: api: batch %s: %w", bid, err)
	}
	if len(st.fields) == 0 {
		return BatchStatus{}, fmt.Errorf("exq: api: batch %s: %w", bid, ErrBatchNotFound)
	}
	return batchStatusOf(bid, st), nil
}

func batchStatusOf(bid string, st batchState) BatchStatus {
	f := st.fields
	fresh, _ := strconv.ParseInt(f["fresh"], 10, 64)
	fresh = min(max(fresh, 0), st.pending)
	s := BatchStatus{ID: bid, Description: f["description"], Total: int(st.total), Pending: int(st.pending),
		Failed: int(st.pending - fresh), Dead: int(st.dead),
		CreatedAt: secondsField(f, "created_at"), CompletedAt: secondsField(f, "complete_at"),
		SucceededAt: secondsField(f, "success_at"), DiedAt: secondsField(f, "death_at")}
	for _, ev := range batchEvents {
		if jid := f["cbjid:"+ev]; jid != "" {
			if s.Callbacks == nil {
				s.Callbacks = map[string]string{}
			}
			s.Callbacks[ev] = jid
		}
	}
	return s
}

// Batches lists the batches whose data is still kept, newest first.
func (a *API) Batches(ctx context.Context, o ListOptions) ([]BatchStatus, error) {
	start, stop, err := o.bounds()
	if err != nil {
		return nil, err
	}
	ids, err := a.jq.batchIDs(ctx, start, stop-start+1)
	if err != nil {
		return nil, fmt.Errorf("exq: api: batches: %w", err)
	}
	out := make([]BatchStatus, 0, len(ids))
	var gone []string
	for _, id := range ids {
		st, err := a.jq.batchRead(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("exq: api: batches: %w", err)
		}
		if len(st.fields) == 0 {
			gone = append(gone, id)
			continue
		}
		out = append(out, batchStatusOf(id, st))
	}
	if err := a.jq.forgetBatches(ctx, gone...); err != nil {
		a.log.Warn("exq: api: could not trim expired batches from the listing", "error", err)
	}
	return out, nil
}

// BatchJobs lists up to limit jids of batch bid: which is "pending" (not yet succeeded), "dead"
// or "all".
func (a *API) BatchJobs(ctx context.Context, bid, which string, limit int) ([]string, error) {
	switch which {
	case "pending", "dead", "all":
	default:
		return nil, fmt.Errorf("exq: api: batch jobs: which is %q, not pending, dead or all", which)
	}
	if limit <= 0 {
		limit = 100
	}
	jids, err := a.jq.batchMembers(ctx, bid, which, int64(limit))
	if err != nil {
		return nil, fmt.Errorf("exq: api: batch %s jobs: %w", bid, err)
	}
	return jids, nil
}
