package store

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
)

// This file is the store's part for nodes: their hash, busy list and signals, as Exq's and
// Sidekiq's UIs read them.

// NodeWrite is one write of this node's state.
type NodeWrite struct {
	Info        string // WIRE §3 JSON
	Concurrency int    // also a field of its own, where Sidekiq 8.1.2 and later read it
	Busy        int
	Beat        string
	Quiet       bool
	Rtt         time.Duration
	RSSKB       int64
	Handled     []string          // signals handled since the last write, as signals returned them
	BusyList    map[string]string // run id → WIRE §4 JSON; nil leaves the busy list as it is
	// BusyUpdate replaces the entries of runs already in the busy list (their progress), with
	// BusyList nil: HSET without the DEL, so only the changed entries travel.
	BusyUpdate map[string]string
}

// WriteNode writes this node's hash (and busy list) and removes the signals it handled, in one
// MULTI, so that the UIs' process table and their list of running jobs always agree.
func (jq *Store) WriteNode(ctx context.Context, w NodeWrite) error {
	keys, node := jq.keys, jq.node
	_, err := jq.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		pl.SAdd(ctx, keys.Processes(), node)
		pl.HSet(ctx, keys.Node(node),
			"info", w.Info,
			"concurrency", w.Concurrency,
			"busy", w.Busy,
			"beat", w.Beat,
			"quiet", strconv.FormatBool(w.Quiet),
			"rtt_us", w.Rtt.Microseconds(),
			"rss", w.RSSKB)
		pl.Expire(ctx, keys.Node(node), NodeTTL)
		// Under both names: Exq and Sidekiq 6 read <id>:workers, Sidekiq 7 and 8 <id>:work.
		busyKeys := [...]string{keys.Workers(node), keys.Work(node)}
		set := func(entries map[string]string) {
			if len(entries) == 0 {
				return
			}
			fields := make([]any, 0, 2*len(entries))
			for id, v := range entries {
				fields = append(fields, id, v)
			}
			for _, k := range busyKeys {
				pl.HSet(ctx, k, fields...)
				pl.Expire(ctx, k, NodeTTL)
			}
		}
		if w.BusyList != nil {
			for _, k := range busyKeys {
				pl.Del(ctx, k)
			}
			set(w.BusyList)
		} else {
			set(w.BusyUpdate)
		}
		if len(w.Handled) > 0 {
			// EVAL, not EVALSHA: inside MULTI a NOSCRIPT could not fall back. Signals are rare.
			args := make([]any, len(w.Handled))
			for i, s := range w.Handled {
				args[i] = s
			}
			scripts.SignalsDone.Eval(ctx, pl, []string{keys.Signals(node)}, args...)
		}
		return nil
	})
	return err
}

// Signals reads up to max of this node's oldest signals without removing them; the oldest is
// last (senders LPUSH).
func (jq *Store) Signals(ctx context.Context, max int) ([]string, error) {
	return jq.rdb.LRange(ctx, jq.keys.Signals(jq.node), int64(-max), -1).Result()
}

// Unregister removes this node from the processes set and deletes its busy list, under both
// names (clean stop). The node hash is left to expire, as Sidekiq does.
func (jq *Store) Unregister(ctx context.Context) error {
	_, err := jq.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		pl.SRem(ctx, jq.keys.Processes(), jq.node)
		pl.Del(ctx, jq.keys.Workers(jq.node))
		pl.Del(ctx, jq.keys.Work(jq.node))
		return nil
	})
	return err
}

// Prune removes from the processes set every node whose hash has expired (it stopped pinging
// a minute ago), and deletes those nodes' busy lists, and only theirs. It returns the nodes
// left in the set, which the foreign-run watch reads instead of the set (one SMEMBERS a ping).
// A read finds the candidates; the removal checks each again (removeGone), so a node that
// pings between the two keeps its membership and busy list.
func (jq *Store) Prune(ctx context.Context, log *slog.Logger) ([]string, error) {
	keys := jq.keys
	members, err := jq.rdb.SMembers(ctx, keys.Processes()).Result()
	if err != nil || len(members) == 0 {
		return members, err
	}
	exists := make([]*redis.BoolCmd, len(members))
	if _, err := jq.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, m := range members {
			exists[i] = pl.HExists(ctx, keys.Node(m), "info")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var candidates []string
	for i, m := range members {
		if !exists[i].Val() {
			candidates = append(candidates, m)
		}
	}
	if len(candidates) == 0 {
		return members, nil
	}
	gone, err := jq.removeGone(ctx, candidates)
	if err != nil {
		return nil, err
	}
	if len(gone) > 0 && log != nil {
		log.Info("exq: pruned processes that stopped pinging", "nodes", gone)
	}
	removed := make(map[string]bool, len(gone))
	for _, g := range gone {
		removed[g] = true
	}
	left := make([]string, 0, len(members)-len(gone))
	for _, m := range members {
		if !removed[m] {
			left = append(left, m)
		}
	}
	return left, nil
}

// removeGone removes each node of candidates whose hash has no info when the script runs
// (scripts.Prune), with its busy lists, and returns those it removed.
func (jq *Store) removeGone(ctx context.Context, candidates []string) ([]string, error) {
	keys := make([]string, 0, 1+3*len(candidates))
	keys = append(keys, jq.keys.Processes())
	args := make([]any, len(candidates))
	for i, c := range candidates {
		keys = append(keys, jq.keys.Node(c), jq.keys.Workers(c), jq.keys.Work(c))
		args[i] = c
	}
	return scripts.Prune.Run(ctx, jq.rdb, keys, args...).StringSlice()
}

// PublishWake sends an empty wake-up: Start uses it to see whether this Redis user may use
// the channel.
func (jq *Store) PublishWake(ctx context.Context) error {
	return jq.rdb.Publish(ctx, jq.keys.Wake(), "").Err()
}

// Wakeups is a subscription to the wake-up channel on which enqueues announce new jobs (and
// the scheduler's due times).
type Wakeups struct{ ps *redis.PubSub }

// SubscribeWake subscribes to the wake-up channel. The subscription lives until ctx ends or
// it is closed. go-redis re-subscribes by itself after a reconnect.
func (jq *Store) SubscribeWake(ctx context.Context) *Wakeups {
	return &Wakeups{ps: jq.rdb.Subscribe(ctx, jq.keys.Wake())}
}

// wakeHealthCheck is how long the wake-up subscription stays silent before go-redis PINGs it to
// see that its connection lives (go-redis' default is 3 s, a third of an idle node's commands
// on its own). A dead one is replaced then; until it is, the idle node finds jobs by its
// capped poll and its blocking wait, which do not depend on wake-ups.
const wakeHealthCheck = 15 * time.Second

// Each calls f with the payload of every wake-up until the subscription is closed.
func (w *Wakeups) Each(f func(payload string)) {
	for msg := range w.ps.Channel(redis.WithChannelHealthCheckInterval(wakeHealthCheck)) {
		f(msg.Payload)
	}
}

// Close ends the subscription.
func (w *Wakeups) Close() error { return w.ps.Close() }
