package store

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// LimitsRecord is how a queue's cluster-wide limits are stored in the limits hash.
type LimitsRecord struct {
	GlobalLimit int   `json:"global_limit,omitempty"`
	Rate        int   `json:"rate,omitempty"`
	RatePerMS   int64 `json:"rate_per_ms,omitempty"`
}

func recordOf(l Limits) LimitsRecord {
	return LimitsRecord{GlobalLimit: l.Global, Rate: l.RateN, RatePerMS: l.RatePer.Milliseconds()}
}

// Limits are the limits r records.
func (r LimitsRecord) Limits() Limits {
	return Limits{Global: r.GlobalLimit, RateN: r.Rate, RatePer: time.Duration(r.RatePerMS) * time.Millisecond}
}

// PublishLimits writes the limits of queues into the limits hash (a queue without any is
// removed from it) and returns, per queue, the limits stored before when they differ.
func (jq *Store) PublishLimits(ctx context.Context, queues []QueueLimits) (map[string]LimitsRecord, error) {
	if len(queues) == 0 {
		return nil, nil
	}
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = q.Name
	}
	old, err := jq.rdb.HMGet(ctx, jq.keys.Limits(), names...).Result()
	if err != nil {
		return nil, err
	}
	differ := map[string]LimitsRecord{}
	for i, q := range queues {
		var was LimitsRecord
		if s, ok := old[i].(string); ok {
			_ = json.Unmarshal([]byte(s), &was) // unreadable counts as different
		}
		if was != recordOf(q.Limits) || (old[i] != nil && was == LimitsRecord{}) {
			differ[q.Name] = was
		}
	}
	if len(differ) == 0 {
		return nil, nil // as recorded: nothing to write
	}
	_, err = jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range queues {
			if _, ok := differ[q.Name]; !ok {
				continue
			}
			if rec := recordOf(q.Limits); rec == (LimitsRecord{}) {
				p.HDel(ctx, jq.keys.Limits(), q.Name)
			} else {
				b, _ := json.Marshal(rec)
				p.HSet(ctx, jq.keys.Limits(), q.Name, b)
			}
		}
		return nil
	})
	return differ, err
}

// QueueUse is how much of its limits a queue uses now, and its size.
type QueueUse struct {
	Size    int64
	InUse   int64 // live leases
	Started int64 // starts within the rate's window
}

// QueueUses reads, for every queue in qs, its size and, by the server's clock, its live leases
// (a GlobalLimit in limits) and its starts within the rate's window (a Rate in limits), in one
// round trip after reading the clock.
func (jq *Store) QueueUses(ctx context.Context, qs []string, limits map[string]LimitsRecord) (map[string]QueueUse, error) {
	now, err := jq.rdb.Time(ctx).Result()
	if err != nil {
		return nil, err
	}
	secs := func(t time.Time) string {
		return strconv.FormatFloat(float64(t.UnixMicro())/1e6, 'f', 6, 64)
	}
	type cmds struct{ size, inUse, started *redis.IntCmd }
	byQueue := make(map[string]cmds, len(qs))
	if sent, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range qs {
			c := cmds{size: p.LLen(ctx, jq.keys.Queue(q))}
			l := limits[q]
			if l.GlobalLimit > 0 {
				c.inUse = p.ZCount(ctx, jq.keys.Leases(q), "("+secs(now), "+inf")
			}
			if r := l.Limits(); r.RateN > 0 {
				window := r.window()
				c.started = p.ZCount(ctx, jq.keys.Starts(q), "("+secs(now.Add(-window)), "+inf")
			}
			byQueue[q] = c
		}
		return nil
	}); err != nil && !onlyWrongType(err, sent) {
		return nil, err // a queue's key of another type reads as empty: it spoils its own row
	}
	val := func(c *redis.IntCmd) int64 {
		if c == nil {
			return 0
		}
		return c.Val()
	}
	out := make(map[string]QueueUse, len(qs))
	for q, c := range byQueue {
		out[q] = QueueUse{Size: c.size.Val(), InUse: val(c.inUse), Started: val(c.started)}
	}
	return out, nil
}

// PublishedLimits reads the limits the nodes published, per queue (an unreadable record counts
// as none).
func (jq *Store) PublishedLimits(ctx context.Context) (map[string]LimitsRecord, error) {
	raw, err := jq.rdb.HGetAll(ctx, jq.keys.Limits()).Result()
	if err != nil {
		return nil, namedKey(jq.keys.Limits(), "hash", err)
	}
	out := make(map[string]LimitsRecord, len(raw))
	for q, s := range raw {
		var r LimitsRecord
		_ = json.Unmarshal([]byte(s), &r)
		out[q] = r
	}
	return out, nil
}

// DropOwnLeases removes the leases on queue q named after this node: those a previous process
// with the same NodeID left when it died (its jobs go back to their queue at Start). Lease
// numbers restart at 1 in every process, so they would otherwise hold slots until they lapse.
func (jq *Store) DropOwnLeases(ctx context.Context, q string) (int64, error) {
	members, err := jq.rdb.ZRange(ctx, jq.keys.Leases(q), 0, -1).Result()
	if err != nil {
		return 0, err
	}
	prefix := jq.node + ":"
	var mine []any
	for _, m := range members {
		if n, ok := strings.CutPrefix(m, prefix); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			mine = append(mine, m)
		}
	}
	if len(mine) == 0 {
		return 0, nil
	}
	return jq.rdb.ZRem(ctx, jq.keys.Leases(q), mine...).Result()
}

// StopWaiting removes this node from the lease waiters of queues.
func (jq *Store) StopWaiting(ctx context.Context, queues []string) error {
	if len(queues) == 0 {
		return nil
	}
	_, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range queues {
			p.ZRem(ctx, jq.keys.LeaseWaiters(q), jq.node)
		}
		return nil
	})
	return err
}
