package exq

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/scripts"
)

// This file is the store's part for nodes: their hash, busy list and signals, as Exq's and
// Sidekiq's UIs read them.

// nodeWrite is one write of this node's state.
type nodeWrite struct {
	info        string // WIRE §3 JSON
	concurrency int    // also a field of its own, where Sidekiq 8.1.2 and later read it
	busy        int
	beat        string
	quiet       bool
	rtt         time.Duration
	rssKB       int64
	handled     []string          // signals handled since the last write, as signals returned them
	busyList    map[string]string // run id → WIRE §4 JSON; nil leaves the busy list as it is
}

// writeNode writes this node's hash (and busy list) and removes the signals it handled, in one
// MULTI, so that the UIs' process table and their list of running jobs always agree.
func (jq *jobQueue) writeNode(ctx context.Context, w nodeWrite) error {
	keys, node := jq.keys, jq.node
	_, err := jq.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		pl.SAdd(ctx, keys.Processes(), node)
		pl.HSet(ctx, keys.Node(node),
			"info", w.info,
			"concurrency", w.concurrency,
			"busy", w.busy,
			"beat", w.beat,
			"quiet", strconv.FormatBool(w.quiet),
			"rtt_us", w.rtt.Microseconds(),
			"rss", w.rssKB)
		pl.Expire(ctx, keys.Node(node), nodeTTL)
		if w.busyList != nil {
			// Under both names: Exq and Sidekiq 6 read <id>:workers, Sidekiq 7 and 8 <id>:work.
			busyKeys := [...]string{keys.Workers(node), keys.Work(node)}
			for _, k := range busyKeys {
				pl.Del(ctx, k)
			}
			if len(w.busyList) > 0 {
				fields := make([]any, 0, 2*len(w.busyList))
				for id, v := range w.busyList {
					fields = append(fields, id, v)
				}
				for _, k := range busyKeys {
					pl.HSet(ctx, k, fields...)
					pl.Expire(ctx, k, nodeTTL)
				}
			}
		}
		if len(w.handled) > 0 {
			// EVAL, not EVALSHA: inside MULTI a NOSCRIPT could not fall back. Signals are rare.
			args := make([]any, len(w.handled))
			for i, s := range w.handled {
				args[i] = s
			}
			scripts.SignalsDone.Eval(ctx, pl, []string{keys.Signals(node)}, args...)
		}
		return nil
	})
	return err
}

// signals reads up to max of this node's oldest signals without removing them; the oldest is
// last (senders LPUSH).
func (jq *jobQueue) signals(ctx context.Context, max int) ([]string, error) {
	return jq.rdb.LRange(ctx, jq.keys.Signals(jq.node), int64(-max), -1).Result()
}

// unregister removes this node from the processes set and deletes its busy list, under both
// names (clean stop). The node hash is left to expire, as Sidekiq does.
func (jq *jobQueue) unregister(ctx context.Context) error {
	_, err := jq.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		pl.SRem(ctx, jq.keys.Processes(), jq.node)
		pl.Del(ctx, jq.keys.Workers(jq.node))
		pl.Del(ctx, jq.keys.Work(jq.node))
		return nil
	})
	return err
}

// prune removes from the processes set every node whose hash has expired (it stopped pinging
// a minute ago), and deletes those nodes' busy lists, and only theirs.
func (jq *jobQueue) prune(ctx context.Context, log *slog.Logger) error {
	keys := jq.keys
	members, err := jq.rdb.SMembers(ctx, keys.Processes()).Result()
	if err != nil || len(members) == 0 {
		return err
	}
	exists := make([]*redis.BoolCmd, len(members))
	if _, err := jq.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, m := range members {
			exists[i] = pl.HExists(ctx, keys.Node(m), "info")
		}
		return nil
	}); err != nil {
		return err
	}
	var gone []string
	for i, m := range members {
		if !exists[i].Val() {
			gone = append(gone, m)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	_, err = jq.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		args := make([]any, len(gone))
		for i, g := range gone {
			args[i] = g
			pl.Del(ctx, keys.Workers(g))
			pl.Del(ctx, keys.Work(g))
		}
		pl.SRem(ctx, keys.Processes(), args...)
		return nil
	})
	if err == nil && log != nil {
		log.Info("exq: pruned processes that stopped pinging", "nodes", gone)
	}
	return err
}

// publishWake sends an empty wake-up: Start uses it to see whether this Redis user may use
// the channel.
func (jq *jobQueue) publishWake(ctx context.Context) error {
	return jq.rdb.Publish(ctx, jq.keys.Wake(), "").Err()
}

// subscribeWake subscribes to the wake-up channel on which enqueues announce new jobs (and the
// scheduler's due times). The subscription lives until ctx ends or it is closed.
func (jq *jobQueue) subscribeWake(ctx context.Context) *redis.PubSub {
	return jq.rdb.Subscribe(ctx, jq.keys.Wake())
}
