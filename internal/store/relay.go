package exq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/exqgo/exq/internal/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// relayItem is one job of a pushRelayed call: its document, where it goes (queue now, or the
// schedule set when at is set) and, for a unique job, its lock's token and TTL.
type relayItem struct {
	jid, queue, job string
	at              time.Time
	token           string
	lockTTL         time.Duration
}

// relayStatus is what push_relayed.lua did with one job.
type relayStatus struct {
	duplicate bool
	holder    string // the jid holding the job's unique lock; nothing was written
}

// pushRelayed writes items in one script call, each jid at most once within markTTL of its
// first push (push_relayed.lua). Statuses are in the order of items.
func (jq *jobQueue) pushRelayed(ctx context.Context, markTTL time.Duration, items []relayItem) ([]relayStatus, error) {
	queueNo := map[string]int{}
	var queues []string
	var locked []int
	for i, it := range items {
		if it.at.IsZero() {
			if _, ok := queueNo[it.queue]; !ok {
				queues = append(queues, it.queue)
				queueNo[it.queue] = len(queues)
			}
		}
		if it.token != "" {
			locked = append(locked, i)
		}
	}
	keys := make([]string, 0, 2+len(queues)+len(items)+len(locked))
	keys = append(keys, jq.keys.Schedule(), jq.keys.Queues())
	args := make([]any, 0, 5+len(queues)+3*len(items)+3*len(locked))
	args = append(args, jq.keys.Wake(), len(queues), len(items), len(locked), max(markTTL.Milliseconds(), 1))
	for _, q := range queues {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	for _, it := range items {
		keys = append(keys, jq.keys.Relayed(it.jid))
		if it.at.IsZero() {
			args = append(args, queueNo[it.queue], "", it.job)
		} else {
			args = append(args, 0, wire.FormatTime(it.at), it.job)
		}
	}
	for _, i := range locked {
		it := items[i]
		l := lock{key: jq.keys.Unique(it.token), jid: it.jid, ttl: it.lockTTL}
		keys = append(keys, l.key)
		args = append(args, i+1, l.jid, l.ttlMillis())
	}
	cmd, replErr := jq.evalScript(ctx, scripts.PushRelayed, keys, args...)
	res, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if len(res) != len(items) {
		return nil, fmt.Errorf("push relayed: %d replies for %d jobs", len(res), len(items))
	}
	out := make([]relayStatus, len(items))
	for i, r := range res {
		switch v := r.(type) {
		case int64:
			out[i].duplicate = v == 1
		case string:
			out[i].holder = v
		default:
			return nil, fmt.Errorf("push relayed: unexpected reply %v for job %s", r, strconv.Quote(items[i].jid))
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

// reportOutbox writes an outbox relay's status: oldestAt zero when no row waits.
func (jq *jobQueue) reportOutbox(ctx context.Context, backlog, failed int64, oldestAt, now time.Time) error {
	oldest := ""
	if !oldestAt.IsZero() {
		oldest = wire.FormatTime(oldestAt)
	}
	return jq.rdb.HSet(ctx, jq.keys.Outbox(), outboxBacklog, backlog, outboxFailed, failed,
		outboxOldestAt, oldest, outboxUpdatedAt, wire.FormatTime(now)).Err()
}

// outbox reads what reportOutbox wrote; ok is false when no relay ever reported.
func (jq *jobQueue) outbox(ctx context.Context) (backlog, failed int64, oldestAt, updatedAt time.Time, ok bool, err error) {
	vals, err := jq.rdb.HMGet(ctx, jq.keys.Outbox(), outboxBacklog, outboxFailed, outboxOldestAt, outboxUpdatedAt).Result()
	if err != nil {
		return 0, 0, time.Time{}, time.Time{}, false, err
	}
	str := func(i int) string { s, _ := vals[i].(string); return s }
	if str(3) == "" {
		return 0, 0, time.Time{}, time.Time{}, false, nil
	}
	num := func(i int, name string) (int64, error) {
		n, err := strconv.ParseInt(str(i), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s field %s is not a count: %.40q", jq.keys.Outbox(), name, str(i))
		}
		return n, nil
	}
	at := func(i int, name string) (time.Time, error) {
		if str(i) == "" {
			return time.Time{}, nil
		}
		f, err := strconv.ParseFloat(str(i), 64)
		if err != nil || f <= 0 {
			return time.Time{}, fmt.Errorf("%s field %s is not a time: %.40q", jq.keys.Outbox(), name, str(i))
		}
		return wire.ParseTime(f), nil
	}
	if backlog, err = num(0, outboxBacklog); err != nil {
		return
	}
	if failed, err = num(1, outboxFailed); err != nil {
		return
	}
	if oldestAt, err = at(2, outboxOldestAt); err != nil {
		return
	}
	if updatedAt, err = at(3, outboxUpdatedAt); err != nil {
		return
	}
	return backlog, failed, oldestAt, updatedAt, true, nil
}
