package flows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Events are a batch's callbacks' names, as stored and as BatchStatus reports their times.
var Events = [...]string{"success", "complete", "death"}

// CallbackFields are the fields of the root's BatchOptions that hold the callbacks of Events,
// by which errors name them.
var CallbackFields = [...]string{"OnSuccess", "OnComplete", "OnDeath"}

// Batch is a batch to create (the root's BatchOptions, checked here).
type Batch struct {
	ID, Description, Parent string
	// Adder is the jid of the running job of Parent that creates the batch, or "".
	Adder string
	// Open creates the batch open and with no jobs: AddToBatch with store.OpenMember adds
	// them, and CloseBatch lets its callbacks fire.
	Open        bool
	TTL, Expiry time.Duration
	// Callbacks are the jobs of Events, nil where none.
	Callbacks [len(Events)]*Spec
}

// NewBatch creates batch b with its jobs in one write and returns its id and the jobs' jids,
// or an empty id and no error for a rerun of a parent's job whose child exists already.
func NewBatch(ctx context.Context, env Env, b Batch, specs []Spec) (string, []string, error) {
	op, mode := "new batch", "create"
	if b.Open {
		op, mode = "open batch", "open"
	} else if len(specs) == 0 {
		return "", nil, badBatch(op, "no jobs: a batch is created with its first jobs (or opened: OpenBatch)")
	}
	if b.TTL < 0 || b.Expiry < 0 {
		return "", nil, badBatch(op, "TTL and Expiry must not be negative")
	}
	bid := b.ID
	if bid == "" {
		bid = wire.NewJID()
	} else if err := CheckID(bid); err != nil {
		return "", nil, badBatch(op, "ID: %v", err)
	}
	if b.Parent != "" {
		if err := CheckID(b.Parent); err != nil {
			return "", nil, badBatch(op, "Parent: %v", err)
		}
		if b.Parent == bid {
			return "", nil, badBatch(op, "Parent is the batch itself")
		}
	}
	now, err := env.Now(ctx, op)
	if err != nil {
		return "", nil, err
	}
	fields := [][2]string{{"description", b.Description}, {"ttl", ttlSeconds(b.TTL, BatchTTL)}}
	var queues []string
	var callbacks []store.FlowJob // their hooks hear the batch's write: the callbacks are stored with it
	for i, cb := range b.Callbacks {
		if cb == nil {
			continue
		}
		name := Events[i]
		built, err := build(ctx, now, op+": "+CallbackFields[i]+" callback", []Spec{*cb},
			func(int) *wire.NewJob { return &wire.NewJob{CallbackOf: bid} }, badBatch)
		if err != nil {
			finish(callbacks, err)
			return "", nil, err
		}
		callbacks = append(callbacks, built...)
		fields = append(fields, [2]string{"cb:" + name, built[0].Doc}, [2]string{"cbq:" + name, cb.Queue},
			[2]string{"cbjid:" + name, built[0].JID})
		if !slices.Contains(queues, cb.Queue) {
			queues = append(queues, cb.Queue)
		}
	}
	fields = append(fields, [2]string{"queues", strings.Join(queues, "\n")})
	jobs, err := build(ctx, now, op, specs, func(int) *wire.NewJob { return &wire.NewJob{Bid: bid} }, badBatch)
	if err != nil {
		finish(callbacks, err)
		return "", nil, err
	}
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		if seen[j.JID] {
			err := badBatch(op, "job %d: jid %q is used twice", i, j.JID)
			finish(append(callbacks, jobs...), err)
			return "", nil, err
		}
		seen[j.JID] = true
	}
	hooked := append(callbacks, jobs...)
	status, _, err := env.Store.BatchWrite(ctx, bid, mode, wire.NewJID(), b.Parent, b.Adder, now, orDefault(b.Expiry, BatchExpiry), fields, jobs)
	switch {
	case failed(err):
		err = fmt.Errorf("exq: %s (%d jobs): %w", op, len(specs), err)
	case status == store.BatchExistsReply:
		err = fmt.Errorf("exq: %s %s: %w", op, bid, ErrBatchExists)
	case status == store.BatchNoParent:
		err = fmt.Errorf("exq: %s %s: parent batch %s does not exist or has succeeded: %w", op, bid, b.Parent, ErrBatchNotFound)
	case status == store.BatchDone:
		// A rerun of a parent's job that already succeeded: its first run's child exists.
		finish(hooked, errors.New("exq: new batch: not written: a rerun of a job whose child batch exists"))
		return "", nil, nil
	case err != nil:
		err = fmt.Errorf("exq: %s %s: written on the master: %w", op, bid, err)
	}
	finish(hooked, err)
	if failed(err) {
		return "", nil, err
	}
	return bid, enqueued(env, jobs), err
}

// AddToBatch adds jobs to batch bid from its running job adder and returns their jids (none
// for a rerun of a job whose success the batch counted: its first run's jobs are in it). An
// adder store.OpenMember adds to an open batch from outside it (a client): the batch must be
// open, and jids already in the batch are not added again, so an add sent twice with the same
// jids adds once.
func AddToBatch(ctx context.Context, env Env, bid, adder string, specs []Spec) ([]string, error) {
	op := "add to batch"
	if adder == store.OpenMember {
		op = "add to open batch"
	}
	if len(specs) == 0 {
		return nil, nil
	}
	now, err := env.Now(ctx, op)
	if err != nil {
		return nil, err
	}
	jobs, err := build(ctx, now, op, specs, func(int) *wire.NewJob { return &wire.NewJob{Bid: bid} }, badBatch)
	if err != nil {
		return nil, err
	}
	status, _, err := env.Store.BatchWrite(ctx, bid, "add", adder, "", "", now, BatchExpiry, nil, jobs)
	switch {
	case failed(err):
		err = fmt.Errorf("exq: %s %s (%d jobs): %w", op, bid, len(specs), err)
	case status == store.BatchGone:
		err = fmt.Errorf("exq: %s %s: %w", op, bid, ErrBatchNotFound)
	case status == store.BatchClosed:
		err = fmt.Errorf("exq: %s %s: %w", op, bid, ErrBatchClosed)
	case status == store.BatchNotMember:
		err = fmt.Errorf("exq: %s %s: job %s is not a job of the batch: %w", op, bid, adder, ErrNotInBatch)
	case status == store.BatchDone:
		finish(jobs, errors.New("exq: add to batch: not written: a rerun of a job that already succeeded"))
		return nil, nil
	case err != nil:
		err = fmt.Errorf("exq: %s %s: written on the master: %w", op, bid, err)
	}
	finish(jobs, err)
	if failed(err) {
		return nil, err
	}
	return enqueued(env, jobs), err
}

// CloseBatch closes open batch bid (NewBatch with Open) and returns the callbacks that fired
// at the close (every job had succeeded or run by then). One script records the close as the
// success of store.OpenMember, so a close sent again, or of a batch that is not open, changes
// nothing and fires nothing.
func CloseBatch(ctx context.Context, env Env, bid string) ([]string, error) {
	const op = "close batch"
	if err := CheckID(bid); err != nil {
		return nil, badBatch(op, "ID: %v", err)
	}
	now, err := env.Now(ctx, op)
	if err != nil {
		return nil, err
	}
	changed, fired, err := env.Store.BatchSettle(ctx, bid, store.OpenMember, store.RunSucceeded, now)
	if err != nil {
		return nil, fmt.Errorf("exq: %s %s: %w", op, bid, err)
	}
	if !changed {
		ok, err := env.Store.BatchExists(ctx, bid)
		if err != nil {
			return nil, fmt.Errorf("exq: %s %s: %w", op, bid, err)
		}
		if !ok {
			return nil, fmt.Errorf("exq: %s %s: %w", op, bid, ErrBatchNotFound)
		}
	}
	return fired, nil
}

// BatchStatus has the fields of the root's BatchStatus (documented there), which converts it.
type BatchStatus struct {
	ID, Description                             string
	Total, Pending, Failed, Dead                int
	CreatedAt, CompletedAt, SucceededAt, DiedAt time.Time
	Callbacks                                   map[string]string
	Open                                        bool
}

// ReadBatch reads batch bid; ErrBatchNotFound when there is none.
func ReadBatch(ctx context.Context, st *store.Store, bid string) (BatchStatus, error) {
	s, err := st.BatchRead(ctx, bid)
	if err != nil {
		return BatchStatus{}, fmt.Errorf("exq: api: batch %s: %w", bid, err)
	}
	if len(s.Fields) == 0 {
		return BatchStatus{}, fmt.Errorf("exq: api: batch %s: %w", bid, ErrBatchNotFound)
	}
	return batchStatusOf(bid, s), nil
}

func batchStatusOf(bid string, st store.BatchState) BatchStatus {
	f := st.Fields
	fresh, _ := strconv.ParseInt(f["fresh"], 10, 64)
	if st.Open {
		fresh-- // the open member is counted in "fresh" as a member that has not run
	}
	fresh = min(max(fresh, 0), st.Pending)
	s := BatchStatus{ID: bid, Description: f["description"], Total: int(st.Total), Pending: int(st.Pending),
		Failed: int(st.Pending - fresh), Dead: int(st.Dead),
		CreatedAt: store.SecondsField(f, "created_at"), CompletedAt: store.SecondsField(f, "complete_at"),
		SucceededAt: store.SecondsField(f, "success_at"), DiedAt: store.SecondsField(f, "death_at"), Open: st.Open}
	for _, ev := range Events {
		if jid := f["cbjid:"+ev]; jid != "" {
			if s.Callbacks == nil {
				s.Callbacks = map[string]string{}
			}
			s.Callbacks[ev] = jid
		}
	}
	return s
}

// ListBatches lists up to count batches from offset, newest first. It only reads: the ids of
// expired batches are skipped, and left for the nodes to trim (TrimIndexes).
func ListBatches(ctx context.Context, st *store.Store, offset, count int64) ([]BatchStatus, error) {
	ids, err := st.BatchIDs(ctx, offset, count)
	if err != nil {
		return nil, fmt.Errorf("exq: api: batches: %w", err)
	}
	out := make([]BatchStatus, 0, len(ids))
	for _, id := range ids {
		s, err := st.BatchRead(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("exq: api: batches: %w", err)
		}
		if len(s.Fields) == 0 {
			continue // expired
		}
		out = append(out, batchStatusOf(id, s))
	}
	return out, nil
}

// BatchJobs lists up to limit jids of batch bid: which is "pending", "dead" or "all", or
// "foreign" or "unaccounted" (AuditBatch).
func BatchJobs(ctx context.Context, st *store.Store, bid, which string, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 100
	}
	switch which {
	case "pending", "dead", "all":
	case "foreign", "unaccounted":
		return AuditBatch(ctx, st, bid, which, limit)
	default:
		return nil, fmt.Errorf("exq: api: batch jobs: which is %q, not pending, dead, all, foreign or unaccounted", which)
	}
	jids, err := st.BatchMembers(ctx, bid, which, int64(limit))
	if err != nil {
		return nil, fmt.Errorf("exq: api: batch %s jobs: %w", bid, err)
	}
	return jids, nil
}
