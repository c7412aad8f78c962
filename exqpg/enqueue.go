package exqpg

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/exqgo/exq"
)

// Enqueue writes a job to run now into the outbox, inside tx, and returns its jid at once. The
// job is the document a direct exq Enqueue would write (exq.PrepareJob: same jid, retry and
// unique fields, same refusals); it reaches its Redis queue after tx commits, when a relay
// pushes it, exactly once. If tx rolls back, there is no job.
//
// What differs from a direct enqueue: a unique job's lock is taken when the relay pushes it,
// so a conflict is not this call's error: the relay drops the job and logs the holder's jid,
// as the direct enqueue would have written nothing. Job defaults are exq's (MaxRetries 25,
// timestamps in seconds); per-job options (exq.MaxRetries) apply as usual. EnqueueHooks of a
// node or Client do not run.
func (o *Outbox) Enqueue(ctx context.Context, tx Tx, queue, class string, args any, opts ...exq.EnqueueOption) (string, error) {
	return o.one(ctx, tx, "enqueue", exq.JobSpec{Queue: queue, Class: class, Args: args, Options: opts})
}

// EnqueueIn is Enqueue for a job that runs d after now. now is this process's clock at the
// call (the outbox cannot ask Redis): the relay pushes the job to the schedule set with that
// due time, or onto its queue if the time has passed when it is relayed.
func (o *Outbox) EnqueueIn(ctx context.Context, tx Tx, queue, class string, d time.Duration, args any, opts ...exq.EnqueueOption) (string, error) {
	return o.one(ctx, tx, "enqueue in", exq.JobSpec{Queue: queue, Class: class, Args: args, In: d, Options: opts})
}

// EnqueueAt is Enqueue for a job that runs at t; a zero t is refused, as exq's EnqueueAt
// does. A time that has passed when the job is relayed puts it onto its queue at once.
func (o *Outbox) EnqueueAt(ctx context.Context, tx Tx, queue, class string, t time.Time, args any, opts ...exq.EnqueueOption) (string, error) {
	if t.IsZero() {
		return "", fmt.Errorf("exqpg: enqueue at %s to %s: %w: time is zero", class, queue, exq.ErrInvalidJob)
	}
	return o.one(ctx, tx, "enqueue at", exq.JobSpec{Queue: queue, Class: class, Args: args, At: t, Options: opts})
}

func (o *Outbox) one(ctx context.Context, tx Tx, op string, spec exq.JobSpec) (string, error) {
	res, err := o.write(ctx, tx, op, []exq.JobSpec{spec})
	if err != nil {
		return "", err
	}
	return res[0], nil
}

// EnqueueAll writes a batch of jobs into the outbox with one INSERT inside tx and returns their
// jids in the order of jobs. A job that exq would refuse makes the whole call fail and write
// nothing.
func (o *Outbox) EnqueueAll(ctx context.Context, tx Tx, jobs []exq.JobSpec) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	return o.write(ctx, tx, "enqueue all", jobs)
}

// maxRowsPerInsert keeps an INSERT under Postgres's 65535 parameters (4 per row).
const maxRowsPerInsert = 10000

func (o *Outbox) write(ctx context.Context, tx Tx, op string, jobs []exq.JobSpec) ([]string, error) {
	if tx == nil {
		return nil, fmt.Errorf("exqpg: %s: the transaction is nil", op)
	}
	now := time.Now()
	jids := make([]string, len(jobs))
	rows := make([]any, 0, 4*len(jobs))
	for i, spec := range jobs {
		j, err := exq.PrepareJob(now, spec)
		if err != nil {
			if len(jobs) > 1 {
				return nil, fmt.Errorf("exqpg: %s: job %d: %w", op, i, err)
			}
			return nil, err // exq's own error names the call and what was wrong
		}
		var runAt *time.Time
		if at := dueTime(now, spec); at.After(latestRunAt) {
			// Refused here too, whatever the core's version: such a row would be set aside.
			return nil, fmt.Errorf("exqpg: %s %s to %s: %w: time %s is after year 9999, the latest exq schedules",
				op, spec.Class, spec.Queue, exq.ErrInvalidJob, at.UTC().Format(time.RFC3339))
		} else if at.After(now) {
			runAt = &at
		}
		jids[i] = j.JID
		rows = append(rows, j.JID, j.Queue, j.Raw(), runAt)
	}
	for start := 0; start < len(jobs); start += maxRowsPerInsert {
		end := min(start+maxRowsPerInsert, len(jobs))
		if _, err := tx.Exec(ctx, o.insertSQL(end-start), rows[4*start:4*end]...); err != nil {
			return nil, fmt.Errorf("exqpg: %s (%d jobs): %w", op, len(jobs), err)
		}
	}
	return jids, nil
}

// dueTime is when spec runs, as PrepareJob reads it: At, or In from now; zero for now.
func dueTime(now time.Time, spec exq.JobSpec) time.Time {
	switch {
	case !spec.At.IsZero():
		return spec.At
	case spec.In > 0:
		return now.Add(spec.In)
	}
	return time.Time{}
}

func (o *Outbox) insertSQL(rows int) string {
	var b strings.Builder
	b.Grow(len(o.insert) + 20*rows)
	b.WriteString(o.insert)
	for r := range rows {
		if r > 0 {
			b.WriteByte(',')
		}
		n := 4 * r
		b.WriteString("($" + strconv.Itoa(n+1) + ",$" + strconv.Itoa(n+2) + ",$" + strconv.Itoa(n+3) + ",$" + strconv.Itoa(n+4) + ")")
	}
	return b.String()
}

// In returns an exq.Enqueuer whose calls write into the outbox inside tx, so that everything
// that takes an Enqueuer works transactionally, the typed calls first:
//
//	jid, err := exq.EnqueueArgs(ctx, outbox.In(tx), Signup{UserID: 42})
//
// Its EnqueueAll results carry no unique conflicts (the lock is taken when the job is relayed).
func (o *Outbox) In(tx Tx) exq.Enqueuer { return txEnqueuer{o: o, tx: tx} }

type txEnqueuer struct {
	o  *Outbox
	tx Tx
}

func (t txEnqueuer) Enqueue(ctx context.Context, queue, class string, args any, opts ...exq.EnqueueOption) (string, error) {
	return t.o.Enqueue(ctx, t.tx, queue, class, args, opts...)
}

func (t txEnqueuer) EnqueueIn(ctx context.Context, queue, class string, d time.Duration, args any, opts ...exq.EnqueueOption) (string, error) {
	return t.o.EnqueueIn(ctx, t.tx, queue, class, d, args, opts...)
}

func (t txEnqueuer) EnqueueAt(ctx context.Context, queue, class string, at time.Time, args any, opts ...exq.EnqueueOption) (string, error) {
	return t.o.EnqueueAt(ctx, t.tx, queue, class, at, args, opts...)
}

func (t txEnqueuer) EnqueueAll(ctx context.Context, jobs []exq.JobSpec) ([]exq.EnqueueResult, error) {
	jids, err := t.o.EnqueueAll(ctx, t.tx, jobs)
	if err != nil {
		return nil, err
	}
	res := make([]exq.EnqueueResult, len(jids))
	for i, jid := range jids {
		res[i] = exq.EnqueueResult{JID: jid}
	}
	return res, nil
}
