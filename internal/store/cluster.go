package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ShardNamespaces is exq.ShardNamespaces: n namespaces "{<prefix>0}", "{<prefix>1}", … whose
// hash tags sit on n different masters of a Redis Cluster as its slot map stands now (CLUSTER
// KEYSLOT per candidate, CLUSTER SHARDS or SLOTS once), or the first n names on a single Redis.
func ShardNamespaces(ctx context.Context, rdb redis.UniversalClient, prefix string, n int) ([]string, error) {
	var out []string
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		for i := range n {
			out = append(out, fmt.Sprintf("{%s%d}", prefix, i))
		}
		return out, nil
	}
	masterOf, err := slotMasters(ctx, cc)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for i := 0; len(out) < n && i < 10000; i++ {
		tag := fmt.Sprintf("%s%d", prefix, i)
		slot, err := cc.ClusterKeySlot(ctx, tag).Result()
		if err != nil {
			return nil, fmt.Errorf("exq: shard namespaces: CLUSTER KEYSLOT: %w", err)
		}
		m := masterOf(slot)
		if m == "" || used[m] {
			continue
		}
		used[m] = true
		out = append(out, "{"+tag+"}")
	}
	if len(out) < n {
		return nil, fmt.Errorf("exq: shard namespaces: found %d masters for %d shards", len(out), n)
	}
	return out, nil
}

// slotMasters returns a function naming the master (by its shard's index) that holds a slot,
// from CLUSTER SHARDS (Redis 7), or from CLUSTER SLOTS on an older cluster.
func slotMasters(ctx context.Context, cc *redis.ClusterClient) (func(slot int64) string, error) {
	type span struct {
		start, end int64
		master     string
	}
	var spans []span
	shards, err := cc.ClusterShards(ctx).Result()
	if err == nil {
		for i, sh := range shards {
			for _, r := range sh.Slots {
				spans = append(spans, span{r.Start, r.End, strconv.Itoa(i)})
			}
		}
	} else {
		//lint:ignore SA1019 the fallback for clusters older than Redis 7, which lack CLUSTER SHARDS
		slots, err2 := cc.ClusterSlots(ctx).Result()
		if err2 != nil {
			return nil, fmt.Errorf("exq: shard namespaces: CLUSTER SHARDS: %w; CLUSTER SLOTS: %w", err, err2)
		}
		for _, s := range slots {
			if len(s.Nodes) > 0 {
				spans = append(spans, span{int64(s.Start), int64(s.End), s.Nodes[0].ID + s.Nodes[0].Addr})
			}
		}
	}
	return func(slot int64) string {
		for _, s := range spans {
			if s.start <= slot && slot <= s.end {
				return s.master
			}
		}
		return ""
	}, nil
}
