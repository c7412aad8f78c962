package exq

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// This file is the store's part for the admin API (api*.go): listings, searches, moves and
// removals of jobs, node and stats reads, and signals to nodes. Sorted sets are named by their
// key (API.setKey).

// queueSize reads the length of queue q (LLEN).
func (jq *jobQueue) queueSize(ctx context.Context, q string) (int64, error) {
	return jq.rdb.LLen(ctx, jq.keys.Queue(q)).Result()
}

// queueSizes reads the length of each queue of qs in one pipeline of LLENs.
func (jq *jobQueue) queueSizes(ctx context.Context, qs []string) (map[string]int64, error) {
	cmds := make([]*redis.IntCmd, len(qs))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, q := range qs {
			cmds[i] = p.LLen(ctx, jq.keys.Queue(q))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(qs))
	for i, q := range qs {
		out[q] = cmds[i].Val()
	}
	return out, nil
}

// removeQueue deletes queue q and removes it from the queues set, in one MULTI.
func (jq *jobQueue) removeQueue(ctx context.Context, q string) error {
	_, err := jq.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SRem(ctx, jq.keys.Queues(), q)
		p.Del(ctx, jq.keys.Queue(q))
		return nil
	})
	return err
}

// pause adds q to the paused set: from the moment it returns, no fetch of any exq node of the
// namespace takes a job of q (the fetch script reads the set).
func (jq *jobQueue) pause(ctx context.Context, q string) error {
	return jq.rdb.SAdd(ctx, jq.keys.Paused(), q).Err()
}

// resume removes q from the paused set and wakes the nodes, so that idle ones fetch its
// waiting jobs at once instead of at their next poll. The wake-up is best effort: once the
// SREM is done the queue is resumed, so a failed PUBLISH (an ACL without the channel) is
// returned apart, as wakeErr, never as the resume's error.
func (jq *jobQueue) resume(ctx context.Context, q string) (wakeErr, err error) {
	if err := jq.rdb.SRem(ctx, jq.keys.Paused(), q).Err(); err != nil {
		return nil, err
	}
	return jq.rdb.Publish(ctx, jq.keys.Wake(), q).Err(), nil
}

// paused lists the paused queues.
func (jq *jobQueue) paused(ctx context.Context) ([]string, error) {
	return jq.rdb.SMembers(ctx, jq.keys.Paused()).Result()
}

// queueRange reads the jobs of queue q from index start to stop (LRANGE).
func (jq *jobQueue) queueRange(ctx context.Context, q string, start, stop int64) ([]string, error) {
	return jq.rdb.LRange(ctx, jq.keys.Queue(q), start, stop).Result()
}

// setRange reads the members of sorted set key with their scores from rank start to stop,
// highest score first with rev (ZRANGE / ZREVRANGE WITHSCORES).
func (jq *jobQueue) setRange(ctx context.Context, key string, start, stop int64, rev bool) ([]redis.Z, error) {
	if rev {
		return jq.rdb.ZRevRangeWithScores(ctx, key, start, stop).Result()
	}
	return jq.rdb.ZRangeWithScores(ctx, key, start, stop).Result()
}

// setSize reads the number of members of sorted set key (ZCARD).
func (jq *jobQueue) setSize(ctx context.Context, key string) (int64, error) {
	return jq.rdb.ZCard(ctx, key).Result()
}

// clearSet deletes sorted set key.
func (jq *jobQueue) clearSet(ctx context.Context, key string) error {
	return jq.rdb.Del(ctx, key).Err()
}

// removeJobs removes the raw jobs of batch from key, a list or sorted set as kind says
// ("list", "zset"), releasing their unique locks when clear is "1" (remove_jobs.lua). The lock
// keys are read from the jobs here, so that the script declares every key it touches.
func (jq *jobQueue) removeJobs(ctx context.Context, key, kind, clear string, batch []any) (int, error) {
	keys := []string{key}
	args := []any{kind}
	locks := map[string]int{}
	for _, b := range batch {
		raw, _ := b.(string)
		n, jid := 0, ""
		if token, id, ok := jobLock(raw); ok && clear == "1" {
			jid = id
			if n = locks[token]; n == 0 {
				keys = append(keys, jq.keys.Unique(token))
				n = len(keys) - 1
				locks[token] = n
			}
		}
		args = append(args, n, jid, raw)
	}
	return scripts.RemoveJobs.Run(ctx, jq.rdb, keys, args...).Int()
}

// jobLock reads the unique_token and jid of a raw job: ok only when both are strings.
func jobLock(raw string) (token, jid string, ok bool) {
	var doc struct {
		Token *string `json:"unique_token"`
		JID   *string `json:"jid"`
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &fields) != nil ||
		json.Unmarshal(fields["unique_token"], &doc.Token) != nil || json.Unmarshal(fields["jid"], &doc.JID) != nil ||
		doc.Token == nil || doc.JID == nil {
		return "", "", false
	}
	return *doc.Token, *doc.JID, true
}

// requeueSet moves the raw jobs of batch from sorted set key to their queues (requeue_set.lua).
// Jobs without a queue are left out, so they stay in the set.
func (jq *jobQueue) requeueSet(ctx context.Context, key string, batch []any) (int, error) {
	keys := []string{key, jq.keys.Queues()}
	args := []any{jq.keys.Wake()}
	qs := queueNumbers{keys: &keys, jq: jq}
	for _, b := range batch {
		raw, _ := b.(string)
		if q, ok := jobQueueName(raw); ok {
			args = append(args, qs.number(q), q, raw)
		}
	}
	if len(args) == 1 {
		return 0, nil
	}
	return scripts.RequeueSet.Run(ctx, jq.rdb, keys, args...).Int()
}

// killSet moves the raw jobs of batch from sorted set key (retry or schedule) to the dead
// set, scored now, trimming it to keepFor and keepMax (kill.lua).
func (jq *jobQueue) killSet(ctx context.Context, key string, now time.Time, keepFor time.Duration, keepMax int, batch []any) (int, error) {
	args := append([]any{wire.FormatTime(now), wire.FormatTime(now.Add(-keepFor)), keepMax}, batch...)
	return scripts.Kill.Run(ctx, jq.rdb, []string{key, jq.keys.Dead()}, args...).Int()
}

// scanSet reads the members of sorted set key whose score is at most max and calls visit with
// them, a page (moveBatch) at a time in score order. It pages by score, not by rank, so members
// that visit removes, or that others add or remove below the page reached, neither shift a
// member out of the scan nor bring one back: each member present throughout is visited once.
// Members sharing the last score of a page are told apart by how many of them are still in the
// set after visit.
func (jq *jobQueue) scanSet(ctx context.Context, key, max string, visit func(page []redis.Z) error) error {
	lo, skip := "-inf", int64(0)
	for {
		page, err := jq.rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: lo, Max: max, Offset: skip, Count: moveBatch}).Result()
		if err != nil || len(page) == 0 {
			return err
		}
		if err := visit(page); err != nil {
			return err
		}
		if len(page) < moveBatch {
			return nil
		}
		last := page[len(page)-1].Score
		var ties []*redis.FloatCmd
		_, err = jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, z := range page {
				if z.Score == last {
					m, _ := z.Member.(string)
					ties = append(ties, p.ZScore(ctx, key, m))
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		stay := int64(0)
		for _, c := range ties {
			if c.Err() == nil {
				stay++
			}
		}
		if next := formatScore(last); next == lo {
			skip += stay
		} else {
			lo, skip = next, stay
		}
	}
}

// formatScore writes a score as Redis reads it back exactly.
func formatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// liveNodes reads the processes set and keeps the members whose hash still has its info,
// sorted. It only reads: a stale member (a node that died without signing off) is skipped,
// and left for the nodes' own pruning (pinger.run), so that a read-only Redis user, or a
// read-only dashboard, can list processes and never deletes one.
func (jq *jobQueue) liveNodes(ctx context.Context) ([]string, error) {
	ids, err := jq.rdb.SMembers(ctx, jq.keys.Processes()).Result()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	alive := make([]*redis.BoolCmd, len(ids))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			alive[i] = p.HExists(ctx, jq.keys.Node(id), "info")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	live := ids[:0]
	for i, id := range ids {
		if alive[i].Val() {
			live = append(live, id)
		}
	}
	sort.Strings(live)
	return live, nil
}

// nodeHashes reads one hash per live node (key(id)) in one pipeline of HGETALLs, after
// liveNodes. With more keys, each node's hashes under them are read too and merged into one
// map, the fields of an earlier key winning (the busy list under its two names).
func (jq *jobQueue) nodeHashes(ctx context.Context, key func(id string) string, more ...func(id string) string) ([]string, []map[string]string, error) {
	ids, err := jq.liveNodes(ctx)
	if err != nil || len(ids) == 0 {
		return nil, nil, err
	}
	keyFns := append([]func(string) string{key}, more...)
	cmds := make([]*redis.MapStringStringCmd, len(ids)*len(keyFns))
	_, err = jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			for k, fn := range keyFns {
				cmds[i*len(keyFns)+k] = p.HGetAll(ctx, fn(id))
			}
		}
		return nil
	})
	hashes := make([]map[string]string, len(ids))
	for i := range ids {
		hashes[i] = cmds[i*len(keyFns)].Val()
		if hashes[i] == nil {
			hashes[i] = map[string]string{}
		}
		for k := 1; k < len(keyFns); k++ {
			for f, v := range cmds[i*len(keyFns)+k].Val() {
				if _, ok := hashes[i][f]; !ok {
					hashes[i][f] = v
				}
			}
		}
	}
	return ids, hashes, err
}

// stats reads the two counters processed and failed in one MGET; a missing one is 0.
func (jq *jobQueue) stats(ctx context.Context, processed, failed string) (Stats, error) {
	vals, err := jq.counters(ctx, []string{processed, failed})
	if err != nil {
		return Stats{}, err
	}
	return Stats{Processed: vals[0], Failed: vals[1]}, nil
}

// counters reads integer counters in one MGET; a missing one is 0.
func (jq *jobQueue) counters(ctx context.Context, keys []string) ([]int64, error) {
	vals, _, err := jq.countersPresent(ctx, keys)
	return vals, err
}

// countersPresent is counters that also reports which keys exist.
func (jq *jobQueue) countersPresent(ctx context.Context, keys []string) ([]int64, []bool, error) {
	vals, err := jq.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, nil, err
	}
	out, present := make([]int64, len(vals)), make([]bool, len(vals))
	for i, v := range vals {
		s, ok := v.(string)
		present[i] = ok
		out[i], _ = strconv.ParseInt(s, 10, 64)
	}
	return out, present, nil
}

// sendSignal pushes signal onto node's signal list and sets the list's TTL, in one MULTI.
func (jq *jobQueue) sendSignal(ctx context.Context, node, signal string) error {
	key := jq.keys.Signals(node)
	_, err := jq.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, key, signal)
		p.Expire(ctx, key, nodeTTL)
		return nil
	})
	return err
}

// oldestJobs reads the next job to run (the oldest) of every queue in qs, "" for an empty one.
func (jq *jobQueue) oldestJobs(ctx context.Context, qs []string) ([]string, error) {
	cmds := make([]*redis.StringCmd, len(qs))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, q := range qs {
			cmds[i] = p.LIndex(ctx, jq.keys.Queue(q), -1)
		}
		return nil
	}); err != nil && err != redis.Nil {
		return nil, err
	}
	out := make([]string, len(qs))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// serverInfo reads INFO's default sections (one section per call before Redis 7) from the
// server that holds the namespace: on a Redis Cluster, the master of its slot.
func (jq *jobQueue) serverInfo(ctx context.Context) (string, error) {
	var node redis.Cmdable = jq.rdb
	if c, ok := jq.rdb.(interface {
		MasterForKey(context.Context, string) (*redis.Client, error)
	}); ok {
		m, err := c.MasterForKey(ctx, jq.keys.Queues())
		if err != nil {
			return "", err
		}
		node = m
	}
	return node.Info(ctx).Result()
}
