package exq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// DefaultRelayMarkTTL is how long PushRelayed remembers a jid it pushed when the caller gives
// no TTL: a repeated push of that jid within it writes nothing. An outbox relay deletes its
// rows right after the push; a relay that dies in between leaves them locked only until its
// database session ends (seconds, or the server's TCP keepalive), far below a day.
const DefaultRelayMarkTTL = 24 * time.Hour

// RelayedJob is one job that an outbox relay (module exqpg) read from a database and pushes
// with PushRelayed.
type RelayedJob struct {
	// Job is the job's JSON document exactly as PrepareJob rendered it (Job.Raw): its jid,
	// queue, retry and unique fields are read from it and written unchanged.
	Job string
	// At is the job's due time. Zero, or a time not after now on the Redis server's clock,
	// pushes the job onto its queue now; a later time adds it to the schedule set, as
	// EnqueueAt does.
	At time.Time
}

// RelayResult is the outcome of one job of a PushRelayed batch, in the batch's order.
type RelayResult struct {
	// JID is the job's id, read from its document ("" when the document was refused before
	// its jid could be read).
	JID string
	// Duplicate is true when an earlier PushRelayed call, within its mark TTL, already handled
	// this jid: nothing was written now.
	Duplicate bool
	// Err is nil when the job was written (or is a duplicate); a *UniqueConflictError when
	// another job holds its unique lock, so that, as for a direct enqueue, nothing was written;
	// an error wrapping ErrInvalidJob when its document was refused (nothing written for it).
	Err error
}

// PushRelayed writes jobs that were prepared earlier (PrepareJob) and kept in a database
// outbox, in one atomic script call per batch, each jid at most once: the push of a job and a
// mark for its jid (P relayed:<jid>, kept markTTL; 0 or less means DefaultRelayMarkTTL) are
// one step, and a jid that has a mark is skipped and reported as a Duplicate. So a relay that
// pushes rows and dies before it deletes them, and the relay that takes the rows over, never
// make a second job. Each written job goes where a direct Enqueue or EnqueueAt would put it,
// unique lock included (its TTL runs to the document's unlocks_at, on the Redis server's
// clock). Results are in the order of jobs; invalid documents are refused one by one, the
// others are written. The error is for the call as a whole (Redis unreachable): then either
// nothing was written, or the whole batch was and a repeat reports every job as a Duplicate.
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
	if len(jobs) == 0 {
		return nil, nil
	}
	if markTTL <= 0 {
		markTTL = DefaultRelayMarkTTL
	}
	now, err := en.serverNow(ctx, "push relayed")
	if err != nil {
		return nil, err
	}
	results := make([]RelayResult, len(jobs))
	items := make([]relayItem, 0, len(jobs))
	idx := make([]int, 0, len(jobs)) // job number of each item
	classes := make([]string, 0, len(jobs))
	for i, j := range jobs {
		it, class, err := relayItemOf(now, j)
		if err != nil {
			results[i] = RelayResult{JID: it.jid, Err: &invalidJobError{op: "push relayed: job " + strconv.Itoa(i), msg: err.Error()}}
			continue
		}
		items = append(items, it)
		idx = append(idx, i)
		classes = append(classes, class)
		results[i].JID = it.jid
	}
	if len(items) == 0 {
		return results, nil
	}
	jids := make([]string, len(items))
	for k, it := range items {
		jids[k] = it.jid
	}
	release := en.hold(jids...)
	defer release()
	statuses, err := en.jq.pushRelayed(ctx, markTTL, items)
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return nil, fmt.Errorf("exq: push relayed (%d jobs): %w", len(jobs), err)
	}
	if err != nil {
		err = fmt.Errorf("exq: push relayed (%d jobs): written on the master: %w", len(jobs), err)
	}
	for k, s := range statuses {
		r := &results[idx[k]]
		switch {
		case s.holder != "":
			r.Err = &UniqueConflictError{JID: s.holder, Token: items[k].token}
		case s.duplicate:
			r.Duplicate = true
		default:
			en.enqueued(items[k].queue, classes[k], items[k].jid, items[k].at)
		}
	}
	return results, err
}

// relayItemOf checks one relayed document as an enqueue would have built it, and says where it
// goes at now. The jid is set as soon as it is read, for the error's result.
func relayItemOf(now time.Time, j RelayedJob) (relayItem, string, error) {
	if len(j.Job) > MaxJobBytes {
		return relayItem{}, "", fmt.Errorf("the job takes %d bytes as JSON, more than MaxJobBytes (%d)", len(j.Job), MaxJobBytes)
	}
	h, err := wire.DecodeHeader(j.Job)
	if err != nil {
		return relayItem{}, "", fmt.Errorf("the document is not a job: %v", err)
	}
	it := relayItem{jid: h.JID, queue: h.Queue, job: j.Job}
	switch {
	case h.JID == "":
		return it, "", errors.New("the document has no jid")
	case h.Class == "":
		return it, "", errors.New("the document's class is empty")
	}
	if err := checkQueueName(h.Queue); err != nil {
		return it, "", fmt.Errorf("the document's queue: %v", err)
	}
	if j.At.After(now) {
		it.at = j.At
	}
	if h.UniqueToken != "" {
		unlocksAt, err := unlocksAtOf(j.Job)
		if err != nil {
			return it, "", err
		}
		it.token = h.UniqueToken
		it.lockTTL = unlocksAt.Sub(now)
	}
	return it, h.Class, nil
}

// unlocksAtOf reads a unique job's unlocks_at (float Unix seconds, as wire.NewJob writes it).
func unlocksAtOf(doc string) (time.Time, error) {
	o, err := wire.ParseObject(doc)
	if err != nil {
		return time.Time{}, fmt.Errorf("the document is not a job: %v", err)
	}
	raw, ok := o.Get("unlocks_at")
	if !ok {
		return time.Time{}, errors.New("the document has a unique_token but no unlocks_at")
	}
	sec, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || sec <= 0 {
		return time.Time{}, fmt.Errorf("the document's unlocks_at is not a positive number: %.40q", raw)
	}
	return wire.ParseTime(sec), nil
}
