package store

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
)

// NodeInfoOf reads the "info" field of each node of ids, in one round trip; "" where none.
func (jq *Store) NodeInfoOf(ctx context.Context, ids []string) ([]string, error) {
	cmds := make([]*redis.StringCmd, len(ids))
	_, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGet(ctx, jq.keys.Node(id), "info")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, err
	}
	out := make([]string, len(ids))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// BusyOf reads the busy list of each node of ids (under both its names, merged), in one
// round trip.
func (jq *Store) BusyOf(ctx context.Context, ids []string) ([]map[string]string, error) {
	return jq.hashesOf(ctx, ids, jq.keys.Workers, jq.keys.Work)
}

// Foreign marks are kept per batch or workflow, at most this many.
const maxForeignMarks = 1000

// MarkForeign notes that job jid of batch id (workflow false) or workflow id (workflow true)
// was seen running on node, a node that is not exq (scripts.ForeignMark). It reports whether
// the batch or workflow exists (the note is then written, unless the notes are full).
func (jq *Store) MarkForeign(ctx context.Context, id string, workflow bool, jid, node string) (bool, error) {
	keys := []string{jq.keys.Batch(id), jq.keys.BatchForeign(id)}
	if workflow {
		keys = []string{jq.keys.Workflow(id), jq.keys.WorkflowForeign(id)}
	}
	cmd, replErr := jq.evalScript(ctx, scripts.ForeignMark, keys, jid, node, maxForeignMarks)
	n, err := cmd.Int()
	if err != nil {
		return false, err
	}
	return n >= 0, replErr
}

// ForeignMarks reads the notes of batch id (workflow false) or workflow id: jid → node.
func (jq *Store) ForeignMarks(ctx context.Context, id string, workflow bool) (map[string]string, error) {
	key := jq.keys.BatchForeign(id)
	if workflow {
		key = jq.keys.WorkflowForeign(id)
	}
	return jq.rdb.HGetAll(ctx, key).Result()
}
