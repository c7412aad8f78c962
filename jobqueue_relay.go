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
