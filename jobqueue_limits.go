package exq

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// limitsRecord is how a queue's cluster-wide limits are stored in the limits hash.
type limitsRecord struct {
	GlobalLimit int   `json:"global_limit,omitempty"`
	Rate        int   `json:"rate,omitempty"`
	RatePerMS   int64 `json:"rate_per_ms,omitempty"`
}

func recordOf(q Queue) limitsRecord {
	return limitsRecord{GlobalLimit: q.GlobalLimit, Rate: q.Rate.N, RatePerMS: q.Rate.Per.Milliseconds()}
}

func (r limitsRecord) rate() Rate {
	return Rate{N: r.Rate, Per: time.Duration(r.RatePerMS) * time.Millisecond}
}

// publishLimits writes the limits of queues into the limits hash (a queue without any is
// removed from it) and returns, per queue, the limits stored before when they differ.
func (jq *jobQueue) publishLimits(ctx context.Context, queues []Queue) (map[string]limitsRecord, error) {
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
	differ := map[string]limitsRecord{}
	for i, q := range queues {
		var was limitsRecord
		if s, ok := old[i].(string); ok {
			_ = json.Unmarshal([]byte(s), &was) // unreadable counts as different
		}
		if was != recordOf(q) || (old[i] != nil && was == limitsRecord{}) {
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
			if rec := recordOf(q); rec == (limitsRecord{}) {
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

// queueControl is what Redis holds on how queue q is controlled.
type queueControl struct {
	paused  bool
	limits  limitsRecord
	inUse   int64 // live leases
	started int64 // starts within the rate's window
}

// queueControls reads, for every queue in qs, whether it is paused, its published limits, its
// live leases and its starts within the rate's window, by the server's clock, in one round
// trip after reading the clock.
func (jq *jobQueue) queueControls(ctx context.Context, qs []string) (map[string]queueControl, error) {
	now, err := jq.rdb.Time(ctx).Result()
	if err != nil {
		return nil, err
	}
	paused := jq.rdb.SMembers(ctx, jq.keys.Paused())
	if paused.Err() != nil {
		return nil, paused.Err()
	}
	limits, err := jq.rdb.HGetAll(ctx, jq.keys.Limits()).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]queueControl, len(qs))
	type counts struct{ inUse, started *redis.IntCmd }
	cmds := make(map[string]counts, len(qs))
	secs := func(t time.Time) string {
		return strconv.FormatFloat(float64(t.UnixMicro())/1e6, 'f', 6, 64)
	}
	_, err = jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range qs {
			var c queueControl
			if s, ok := limits[q]; ok {
				_ = json.Unmarshal([]byte(s), &c.limits)
			}
			out[q] = c
			var cs counts
			if c.limits.GlobalLimit > 0 {
				cs.inUse = p.ZCount(ctx, jq.keys.Leases(q), "("+secs(now), "+inf")
			}
			if r := c.limits.rate(); r.N > 0 {
				window := queueLimits{rate: r}.window()
				cs.started = p.ZCount(ctx, jq.keys.Starts(q), "("+secs(now.Add(-window)), "+inf")
			}
			cmds[q] = cs
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, q := range paused.Val() {
		if c, ok := out[q]; ok {
			c.paused = true
			out[q] = c
		}
	}
	for q, cs := range cmds {
		c := out[q]
		if cs.inUse != nil {
			c.inUse = cs.inUse.Val()
		}
		if cs.started != nil {
			c.started = cs.started.Val()
		}
		out[q] = c
	}
	return out, nil
}

// limitedQueues lists the queues with published limits.
func (jq *jobQueue) limitedQueues(ctx context.Context) ([]string, error) {
	return jq.rdb.HKeys(ctx, jq.keys.Limits()).Result()
}

// dropOwnLeases removes the leases on queue q named after this node: those a previous process
// with the same NodeID left when it died (its jobs go back to their queue at Start). Lease
// numbers restart at 1 in every process, so they would otherwise hold slots until they lapse.
func (jq *jobQueue) dropOwnLeases(ctx context.Context, q string) (int64, error) {
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
