package exq

import (
	"cmp"
	"context"
	"strconv"
	"time"

	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/relay"
)

// DefaultRelayMarkTTL is how long PushRelayed remembers a pushed jid when markTTL is 0 or less:
// far above the seconds for which a relay that died holds its rows.
const DefaultRelayMarkTTL = 24 * time.Hour

// RelayedJob is one job that an outbox relay (module exqpg) read from a database.
type RelayedJob struct {
	// Job is the document exactly as PrepareJob rendered it (Job.Raw), written unchanged.
	Job string
	// At is the due time: zero, or not after now on the Redis server's clock, pushes the job
	// onto its queue now; a later time adds it to the schedule set, as EnqueueAt does.
	At time.Time
}

// RelayResult is the outcome of one job of a PushRelayed batch, in the batch's order.
type RelayResult struct {
	// JID is the job's id ("" when its document was refused before the jid could be read).
	JID string
	// Duplicate: an earlier push of this jid, within its mark TTL, handled it; nothing written.
	Duplicate bool
	// Err is nil when the job was written or is a Duplicate; a *UniqueConflictError when
	// another job holds its unique lock (nothing written, as for a direct enqueue); an error
	// wrapping ErrInvalidJob when its document was refused.
	Err error
}

// PushRelayed writes jobs prepared earlier (PrepareJob) and kept in a database outbox, in one
// script call, each jid at most once: the push and a mark for the jid (P relayed:<jid>, kept
// markTTL) are one step, so a relay that dies between its push and its delete never makes a
// second job. A job goes where Enqueue or EnqueueAt would put it, unique lock included;
// invalid documents are refused one by one. The error is for the whole call: nothing was
// written, or the whole batch was and a repeat reports Duplicates (docs/outbox.md).
func (c *Client) PushRelayed(ctx context.Context, markTTL time.Duration, jobs []RelayedJob) ([]RelayResult, error) {
	return c.enq.pushRelayed(ctx, markTTL, jobs)
}

// PushRelayed is Client.PushRelayed on a node's connection; see there.
func (e *Exq) PushRelayed(ctx context.Context, markTTL time.Duration, jobs []RelayedJob) ([]RelayResult, error) {
	if e.stopped.Load() {
		return nil, ErrStopped
	}
	return e.enq.pushRelayed(ctx, markTTL, jobs)
}

func (en *enqueuer) pushRelayed(ctx context.Context, markTTL time.Duration, jobs []RelayedJob) ([]RelayResult, error) {
	now, err := en.serverNow(ctx, "push relayed")
	if len(jobs) == 0 || err != nil {
		return nil, err
	}
	in := make([]relay.Job, len(jobs))
	for i, j := range jobs {
		in[i] = relay.Job{Doc: j.Job, At: j.At}
	}
	rs, err := relay.Push(ctx, en.jq, in, relay.Options{Now: now, MarkTTL: cmp.Or(max(markTTL, 0), DefaultRelayMarkTTL),
		MaxBytes: MaxJobBytes, CheckQueue: names.CheckQueue, Hold: en.hold,
		Written: func(r relay.Result) { en.enqueued(r.Queue, r.Class, r.JID, r.At) },
		Invalid: func(i int, err error) error {
			return &invalidJobError{op: "push relayed: job " + strconv.Itoa(i), msg: err.Error()}
		},
		Conflict: func(holder, token string) error { return &UniqueConflictError{JID: holder, Token: token} }})
	out := make([]RelayResult, len(rs))
	for i, r := range rs {
		out[i] = RelayResult{JID: r.JID, Duplicate: r.Duplicate, Err: r.Err}
	}
	return out, err
}

// OutboxStatus is what the outbox relays (module exqpg) last reported in Redis about their
// Postgres table. Reported is false (and the rest zero) when none ever did. Backlog committed
// jobs wait; Failed rows were refused (they stay with their error until fixed or deleted).
// OldestAt is when the oldest waiting row was written (zero when none waits), UpdatedAt when a
// relay last reported (every few seconds: an old one means none runs), on the Redis clock.
// Invalid names each stored field that could not be read (it is left zero; the others are
// read whatever it holds).
type OutboxStatus struct {
	Reported            bool
	Backlog, Failed     int64
	OldestAt, UpdatedAt time.Time
	Invalid             []string
}

// Outbox returns what the outbox relays last reported; see OutboxStatus.
func (a *API) Outbox(ctx context.Context) (OutboxStatus, error) {
	s, err := a.jq.Outbox(ctx)
	return OutboxStatus(s), err
}

// ReportOutbox records an outbox relay's view of its table for API.Outbox: backlog rows
// waiting, failed rows refused, the age of the oldest waiting row. exqpg's relays call it.
func (c *Client) ReportOutbox(ctx context.Context, backlog, failed int64, oldestAge time.Duration) error {
	return c.enq.reportOutbox(ctx, backlog, failed, oldestAge)
}

// ReportOutbox is Client.ReportOutbox on a node's connection.
func (e *Exq) ReportOutbox(ctx context.Context, backlog, failed int64, oldestAge time.Duration) error {
	return e.enq.reportOutbox(ctx, backlog, failed, oldestAge)
}

func (en *enqueuer) reportOutbox(ctx context.Context, backlog, failed int64, oldestAge time.Duration) error {
	now, err := en.serverNow(ctx, "report outbox")
	if err == nil {
		err = en.jq.ReportOutbox(ctx, backlog, failed, oldestAge, now)
	}
	return err
}
