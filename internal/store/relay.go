package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// RelayItem is one job of a PushRelayed call, as an outbox relay read it from a database: its
// jid and document, where it goes (Queue now, or the schedule set when At is set) and, for a
// unique job, its lock.
type RelayItem struct {
	JID   string
	Queue string
	At    time.Time
	Job   string
	Lock  *Lock
}

// RelayStatus is what PushRelayed did with one job: written (the zero value), a Duplicate of
// an earlier push (nothing written), or refused because Holder holds its unique lock.
type RelayStatus struct {
	Duplicate bool
	Holder    string
}

// PushRelayed writes items in one script call (push_relayed.lua), each jid at most once
// within markTTL of its first push: the push and a mark for the jid (P relayed:<jid>) are one
// step. Statuses are in the order of items. With WaitReplicas, an error wrapping
// ErrNotReplicated comes with the statuses: the batch was written.
func (jq *Store) PushRelayed(ctx context.Context, markTTL time.Duration, items []RelayItem) ([]RelayStatus, error) {
	queueNo, queues, locked := batchLayout(len(items), func(i int) (string, bool, bool) {
		return items[i].Queue, items[i].At.IsZero(), items[i].Lock != nil
	})
	keys := make([]string, 0, 2+len(queues)+len(items)+len(locked))
	keys = append(keys, jq.keys.Schedule(), jq.keys.Queues())
	args := make([]any, 0, 5+len(queues)+3*len(items)+3*len(locked))
	args = append(args, jq.keys.Wake(), len(queues), len(items), len(locked), max(markTTL.Milliseconds(), 1))
	for _, q := range queues {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	for _, it := range items {
		keys = append(keys, jq.keys.Relayed(it.JID))
		if it.At.IsZero() {
			args = append(args, queueNo[it.Queue], "", it.Job)
		} else {
			args = append(args, 0, wire.FormatTime(it.At), it.Job)
		}
	}
	for _, i := range locked {
		l := items[i].Lock
		keys = append(keys, jq.keys.Unique(l.Token))
		args = append(args, i+1, l.JID, l.ttlMillis())
	}
	cmd, replErr := jq.evalScript(ctx, scripts.PushRelayed, keys, args...)
	res, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if len(res) != len(items) {
		return nil, fmt.Errorf("push relayed: %d replies for %d jobs", len(res), len(items))
	}
	out := make([]RelayStatus, len(items))
	for i, r := range res {
		switch v := r.(type) {
		case int64:
			out[i].Duplicate = v == 1
		case string:
			out[i].Holder = v
		default:
			return nil, fmt.Errorf("push relayed: unexpected reply %v for job %s", r, strconv.Quote(items[i].JID))
		}
	}
	return out, replErr
}

// The fields of P outbox (wire.Keys.Outbox).
const (
	outboxBacklog   = "backlog"
	outboxFailed    = "failed"
	outboxOldestAt  = "oldest_at"
	outboxUpdatedAt = "updated_at"
)

// OutboxStatus is what the outbox relays last reported in P outbox (the root's OutboxStatus
// has the same fields): Reported is false, and the rest zero, when none ever did; OldestAt is
// zero when no row waited.
type OutboxStatus struct {
	Reported  bool
	Backlog   int64
	Failed    int64
	OldestAt  time.Time
	UpdatedAt time.Time
	Invalid   []string
}

// ReportOutbox writes an outbox relay's report made at now (the Redis server's time): backlog
// rows wait, the oldest for oldestAge (ignored when none waits), failed rows were refused.
// Negative numbers are refused and write nothing.
func (jq *Store) ReportOutbox(ctx context.Context, backlog, failed int64, oldestAge time.Duration, now time.Time) error {
	if backlog < 0 || failed < 0 || oldestAge < 0 {
		return fmt.Errorf("exq: report outbox: negative backlog (%d), failed (%d) or age (%s)", backlog, failed, oldestAge)
	}
	oldest := ""
	if backlog > 0 {
		oldest = wire.FormatTime(now.Add(-oldestAge))
	}
	err := jq.rdb.HSet(ctx, jq.keys.Outbox(), outboxBacklog, backlog, outboxFailed, failed,
		outboxOldestAt, oldest, outboxUpdatedAt, wire.FormatTime(now)).Err()
	if err != nil {
		return fmt.Errorf("exq: report outbox: %w", err)
	}
	return nil
}

// Outbox reads what ReportOutbox wrote. The hash is untrusted (anything may have written it):
// a field that is not a count or a time is left zero and named, with what it held, in
// Invalid; it spoils its own field, never the others. Reported is true when the hash holds an
// updated_at field, readable or not.
func (jq *Store) Outbox(ctx context.Context) (OutboxStatus, error) {
	vals, err := jq.rdb.HMGet(ctx, jq.keys.Outbox(), outboxBacklog, outboxFailed, outboxOldestAt, outboxUpdatedAt).Result()
	if err != nil {
		return OutboxStatus{}, fmt.Errorf("exq: outbox status: %w", namedKey(jq.keys.Outbox(), "hash", err))
	}
	str := func(i int) string { s, _ := vals[i].(string); return s }
	if str(3) == "" {
		return OutboxStatus{}, nil
	}
	s := OutboxStatus{Reported: true}
	bad := func(i int, name, what string) {
		s.Invalid = append(s.Invalid, fmt.Sprintf("%s field %s is not %s: %.40q", jq.keys.Outbox(), name, what, str(i)))
	}
	num := func(i int, name string) int64 {
		n, err := strconv.ParseInt(str(i), 10, 64)
		if err != nil || n < 0 {
			bad(i, name, "a count")
			return 0
		}
		return n
	}
	at := func(i int, name string) time.Time {
		if str(i) == "" {
			return time.Time{}
		}
		f, err := strconv.ParseFloat(str(i), 64)
		if err != nil || !(f > 0 && f <= float64(wire.LatestTime.Unix())) { // NaN fails both
			bad(i, name, "a time")
			return time.Time{}
		}
		return wire.ParseTime(f)
	}
	s.Backlog, s.Failed = num(0, outboxBacklog), num(1, outboxFailed)
	s.OldestAt, s.UpdatedAt = at(2, outboxOldestAt), at(3, outboxUpdatedAt)
	return s, nil
}
