package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
)

// This file is the store's part of the nodes' housekeeping: what expires by itself in Redis
// (a batch's or workflow's data) leaves its id in a listing index, and what a node of an
// earlier release buried leaves its records; nodes, never readers, remove both, in bounded
// steps.

// FlowIndex names a listing index: BatchIndex or WorkflowIndex.
type FlowIndex int

// The listing indexes.
const (
	BatchIndex FlowIndex = iota
	WorkflowIndex
)

func (jq *Store) indexKeys(idx FlowIndex) (index string, hash func(string) string) {
	if idx == WorkflowIndex {
		return jq.keys.Workflows(), jq.keys.Workflow
	}
	return jq.keys.Batches(), jq.keys.Batch
}

// TrimIndex looks at about count ids of the index from cursor (ZSCAN: a pass from cursor 0
// until it returns 0 sees every id that stays in the index all along) and removes those whose
// data has expired (trim_index.lua checks each again as it removes it). It returns the cursor
// to go on from, 0 when the pass is done, and how many ids it removed.
func (jq *Store) TrimIndex(ctx context.Context, idx FlowIndex, cursor uint64, count int64) (next uint64, removed int, err error) {
	index, hash := jq.indexKeys(idx)
	page, next, err := jq.rdb.ZScan(ctx, index, cursor, "", count).Result()
	if err != nil {
		return 0, 0, err
	}
	ids := make([]string, 0, len(page)/2)
	for i := 0; i < len(page); i += 2 { // member, score
		ids = append(ids, page[i])
	}
	if len(ids) == 0 {
		return next, 0, nil
	}
	exists := make([]*redis.IntCmd, len(ids))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			exists[i] = p.Exists(ctx, hash(id))
		}
		return nil
	}); err != nil {
		return 0, 0, err
	}
	keys := []string{index}
	var gone []any
	for i, id := range ids {
		if exists[i].Val() == 0 {
			keys = append(keys, hash(id))
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return next, 0, nil
	}
	removed, err = scripts.TrimIndex.Run(ctx, jq.rdb, keys, gone...).Int()
	return next, removed, err
}

// HasFlowIndexes reports whether the namespace holds a listing index of batches or workflows
// at all (EXISTS, a read): a namespace without one is not written to by the trim (no claim
// key in a Redis that only Sidekiq or Exq nodes and plain jobs use).
func (jq *Store) HasFlowIndexes(ctx context.Context) (bool, error) {
	for _, k := range []string{jq.keys.Batches(), jq.keys.Workflows()} { // one key a call: a cluster may hold them in two slots
		n, err := jq.rdb.Exists(ctx, k).Result()
		if err != nil || n > 0 {
			return n > 0, err
		}
	}
	return false, nil
}

// ClaimIndexTrim claims the next pass over the listing indexes for this node for d, by the
// Redis server's clock (SET NX PX of exq's own key index_trim): of the nodes of a namespace,
// one passes at a time, and none more often than every d. It reports whether this node got it.
func (jq *Store) ClaimIndexTrim(ctx context.Context, d time.Duration) (bool, error) {
	ok, err := jq.rdb.SetNX(ctx, jq.keys.IndexTrim(), jq.node, max(d, time.Millisecond)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return ok, err
}

// RenewIndexTrim extends this node's claim on the pass it is on to d from now, so that no other
// node starts a pass beside it while it goes on (SET XX PX: a claim that lapsed is not taken
// back; passes are idempotent, so two at once cost work, never data). It reports whether the
// claim was still there.
func (jq *Store) RenewIndexTrim(ctx context.Context, d time.Duration) (bool, error) {
	ok, err := jq.rdb.SetXX(ctx, jq.keys.IndexTrim(), jq.node, max(d, time.Millisecond)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return ok, err
}

// Replies of sweep_node.lua.
const (
	SweepAlive    = 0
	SweepDone     = 1
	SweepJobsLeft = 2
)

// GoneNodes scans about count fields of heartbeat_epochs from cursor (HSCAN) and returns the
// nodes among them that are in no heartbeat: nodes buried by a node that does not remove
// their incarnation (an earlier release), or caught between a burial and their next join.
func (jq *Store) GoneNodes(ctx context.Context, cursor uint64, count int64) (gone []string, next uint64, err error) {
	page, next, err := jq.rdb.HScan(ctx, jq.keys.HeartbeatEpochs(), cursor, "", count).Result()
	if err != nil {
		return nil, 0, err
	}
	var nodes []string
	for i := 0; i < len(page); i += 2 { // field, value
		nodes = append(nodes, page[i])
	}
	if len(nodes) == 0 {
		return nil, next, nil
	}
	scores := make([]*redis.FloatCmd, len(nodes))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range nodes {
			scores[i] = p.ZScore(ctx, jq.keys.Heartbeats(), n)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, err
	}
	for i, n := range nodes {
		if errors.Is(scores[i].Err(), redis.Nil) {
			gone = append(gone, n)
		} else if scores[i].Err() != nil {
			return nil, 0, scores[i].Err()
		}
	}
	return gone, next, nil
}

// SweepNode forgets gone node's incarnation token and set of backup queues when it is in no
// heartbeat and none of the backup lists its set names holds a job (sweep_node.lua). It
// returns the script's reply.
func (jq *Store) SweepNode(ctx context.Context, node string) (int, error) {
	queues, err := jq.rdb.SMembers(ctx, jq.keys.BackupQueues(node)).Result()
	if err != nil {
		return 0, err
	}
	keys := []string{jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs(), jq.keys.BackupQueues(node)}
	args := []any{node}
	for _, q := range queues {
		keys = append(keys, jq.keys.Backup(node, q))
		args = append(args, q)
	}
	r, err := scripts.SweepNode.Run(ctx, jq.rdb, keys, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("sweep node %s: %w", node, err)
	}
	return r, nil
}
