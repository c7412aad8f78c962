package store

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// UndeclaredBeats reads the heartbeat score of every other node that publishes no deadline
// (nodes of versions that beat without one), in one round trip.
func (jq *Store) UndeclaredBeats(ctx context.Context) (map[string]float64, error) {
	var beats *redis.ZSliceCmd
	var deadlines *redis.StringSliceCmd
	_, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		beats = p.ZRangeWithScores(ctx, jq.keys.Heartbeats(), 0, -1)
		deadlines = p.ZRange(ctx, jq.keys.HeartbeatDeadlines(), 0, -1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	published := map[string]bool{}
	for _, n := range deadlines.Val() {
		published[n] = true
	}
	out := map[string]float64{}
	for _, z := range beats.Val() {
		node, ok := z.Member.(string)
		if ok && !published[node] && node != jq.node {
			out[node] = z.Score
		}
	}
	return out, nil
}

// BackupListName is the name of this node's backup list of queue q, for log messages.
func (jq *Store) BackupListName(q string) string { return jq.keys.Backup(jq.node, q) }
