package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// This file is the store's part for the admin API (api*.go): listings, searches, moves and
// removals of jobs, node and stats reads, and signals to nodes. Sorted sets are named by their
// key (API.setKey).

// QueueSize reads the length of queue q (LLEN).
func (jq *Store) QueueSize(ctx context.Context, q string) (int64, error) {
	return jq.rdb.LLen(ctx, jq.keys.Queue(q)).Result()
}

// QueueSizes reads the length of each queue of qs in one pipeline of LLENs.
func (jq *Store) QueueSizes(ctx context.Context, qs []string) (map[string]int64, error) {
	cmds := make([]*redis.IntCmd, len(qs))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, q := range qs {
			cmds[i] = p.LLen(ctx, jq.keys.Queue(q))
		}
		return nil
	}); err != nil && !onlyWrongType(err, cmds) {
		return nil, err
	}
	out := make(map[string]int64, len(qs)) // a queue key of another type counts 0 jobs
	for i, q := range qs {
		out[q] = cmds[i].Val()
	}
	return out, nil
}

// RemoveQueue deletes queue q and removes it from the queues set, in one MULTI.
func (jq *Store) RemoveQueue(ctx context.Context, q string) error {
	_, err := jq.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SRem(ctx, jq.keys.Queues(), q)
		p.Del(ctx, jq.keys.Queue(q))
		return nil
	})
	return err
}

// Pause adds q to the paused set: from the moment it returns, no fetch of any exq node of the
// namespace takes a job of q (the fetch script reads the set).
func (jq *Store) Pause(ctx context.Context, q string) error {
	return jq.rdb.SAdd(ctx, jq.keys.Paused(), q).Err()
}

// Resume removes q from the paused set and wakes the nodes, so that idle ones fetch its
// waiting jobs at once instead of at their next poll. The wake-up is best effort: once the
// SREM is done the queue is resumed, so a failed PUBLISH (an ACL without the channel) is
// returned apart, as wakeErr, never as the resume's error.
func (jq *Store) Resume(ctx context.Context, q string) (wakeErr, err error) {
	if err := jq.rdb.SRem(ctx, jq.keys.Paused(), q).Err(); err != nil {
		return nil, err
	}
	return jq.rdb.Publish(ctx, jq.keys.Wake(), q).Err(), nil
}

// Paused lists the paused queues.
func (jq *Store) Paused(ctx context.Context) ([]string, error) {
	m, err := jq.rdb.SMembers(ctx, jq.keys.Paused()).Result()
	return m, namedKey(jq.keys.Paused(), "set", err)
}

// QueueRange reads the jobs of queue q from index start to stop (LRANGE); none when its key
// is of another type, as QueueSizes counts it (a search of every queue for a jid goes on).
func (jq *Store) QueueRange(ctx context.Context, q string, start, stop int64) ([]string, error) {
	jobs, err := jq.rdb.LRange(ctx, jq.keys.Queue(q), start, stop).Result()
	if wrongType(err) {
		return nil, nil
	}
	return jobs, err
}

// namedKey names key and the type it should have in a WRONGTYPE error (Redis names neither):
// one key of another type that a whole answer depends on is a clear error, naming what to fix.
func namedKey(key, kind string, err error) error {
	if wrongType(err) {
		return fmt.Errorf("exq: %s is not a %s: %w", key, kind, err)
	}
	return err
}

// Set kinds: the sorted sets of jobs a method takes by name.
const (
	RetrySet    = "retry"
	ScheduleSet = "schedule"
	DeadSet     = "dead"
)

// ErrUnknownSet is wrapped when a set kind is none of RetrySet, ScheduleSet and DeadSet.
var ErrUnknownSet = errors.New("unknown set")

// setKey is the key of the sorted set of kind set.
func (jq *Store) setKey(set string) (string, error) {
	switch set {
	case RetrySet:
		return jq.keys.Retry(), nil
	case ScheduleSet:
		return jq.keys.Schedule(), nil
	case DeadSet:
		return jq.keys.Dead(), nil
	}
	return "", fmt.Errorf("%w %q (want retry, schedule or dead)", ErrUnknownSet, set)
}

// members turns a reply of scored members into Members.
func members(zs []redis.Z) []Member {
	out := make([]Member, len(zs))
	for i, z := range zs {
		m, _ := z.Member.(string)
		out[i] = Member{Score: z.Score, Raw: m}
	}
	return out
}

// SetRange reads the members of sorted set set with their scores from rank start to stop,
// highest score first with rev (ZRANGE / ZREVRANGE WITHSCORES).
func (jq *Store) SetRange(ctx context.Context, set string, start, stop int64, rev bool) ([]Member, error) {
	key, err := jq.setKey(set)
	if err != nil {
		return nil, err
	}
	var zs []redis.Z
	if rev {
		zs, err = jq.rdb.ZRevRangeWithScores(ctx, key, start, stop).Result()
	} else {
		zs, err = jq.rdb.ZRangeWithScores(ctx, key, start, stop).Result()
	}
	return members(zs), err
}

// SetSize reads the number of members of sorted set set (ZCARD).
func (jq *Store) SetSize(ctx context.Context, set string) (int64, error) {
	key, err := jq.setKey(set)
	if err != nil {
		return 0, err
	}
	return jq.rdb.ZCard(ctx, key).Result()
}

// ClearSet deletes sorted set set.
func (jq *Store) ClearSet(ctx context.Context, set string) error {
	key, err := jq.setKey(set)
	if err != nil {
		return err
	}
	return jq.rdb.Del(ctx, key).Err()
}

// MembersAt reads, per score (as Redis reads it: formatted by FormatScore), the members of
// sorted set set with exactly that score, in one pipeline.
func (jq *Store) MembersAt(ctx context.Context, set string, scores []string) (map[string][]string, error) {
	key, err := jq.setKey(set)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.StringSliceCmd, len(scores))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, score := range scores {
			cmds[i] = p.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: score, Max: score})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(scores))
	for i, score := range scores {
		out[score] = cmds[i].Val()
	}
	return out, nil
}

// RemoveFromQueue removes the raw jobs of batch from queue q, releasing their unique locks
// with clear (remove_jobs.lua).
func (jq *Store) RemoveFromQueue(ctx context.Context, q string, clear bool, batch []any) (int, error) {
	return jq.removeJobs(ctx, jq.keys.Queue(q), "list", clear, batch)
}

// RemoveFromSet removes the raw jobs of batch from sorted set set, releasing their unique
// locks with clear (remove_jobs.lua).
func (jq *Store) RemoveFromSet(ctx context.Context, set string, clear bool, batch []any) (int, error) {
	key, err := jq.setKey(set)
	if err != nil {
		return 0, err
	}
	return jq.removeJobs(ctx, key, "zset", clear, batch)
}

// removeJobs removes the raw jobs of batch from key, a list or sorted set as kind says
// ("list", "zset"), releasing their unique locks with clear (remove_jobs.lua). The Lock
// keys are read from the jobs here, so that the script declares every key it touches.
func (jq *Store) removeJobs(ctx context.Context, key, kind string, clear bool, batch []any) (int, error) {
	keys := []string{key}
	args := []any{kind}
	locks := map[string]int{}
	for _, b := range batch {
		raw, _ := b.(string)
		n, jid := 0, ""
		if token, id, ok := jobLock(raw); ok && clear {
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

// RequeueSet moves the raw jobs of batch from sorted set key to their queues (requeue_set.lua).
// Jobs without a queue are left out, so they stay in the set.
func (jq *Store) RequeueSet(ctx context.Context, set string, batch []any) (int, error) {
	key, err := jq.setKey(set)
	if err != nil {
		return 0, err
	}
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

// KillSet moves the raw jobs of batch from sorted set key (retry or schedule) to the dead
// set, scored now, trimming it to keepFor and keepMax (kill.lua).
func (jq *Store) KillSet(ctx context.Context, set string, now time.Time, keepFor time.Duration, keepMax int, batch []any) (int, error) {
	key, err := jq.setKey(set)
	if err != nil {
		return 0, err
	}
	args := append([]any{wire.FormatTime(now), wire.FormatTime(now.Add(-keepFor)), keepMax}, batch...)
	return scripts.Kill.Run(ctx, jq.rdb, []string{key, jq.keys.Dead()}, args...).Int()
}

// ScanSet reads the members of sorted set set whose score is at most max and calls visit with
// them, a page (MoveBatch) at a time in score order. It pages by score, not by rank, so members
// that visit removes, or that others add or remove below the page reached, neither shift a
// member out of the scan nor bring one back: each member present throughout is visited once.
// Members sharing the last score of a page are told apart by how many of them are still in the
// set after visit.
func (jq *Store) ScanSet(ctx context.Context, set, max string, visit func(page []Member) error) error {
	key, err := jq.setKey(set)
	if err != nil {
		return err
	}
	lo, skip := "-inf", int64(0)
	for {
		page, err := jq.rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: lo, Max: max, Offset: skip, Count: MoveBatch}).Result()
		if err != nil || len(page) == 0 {
			return err
		}
		if err := visit(members(page)); err != nil {
			return err
		}
		if len(page) < MoveBatch {
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
		if next := FormatScore(last); next == lo {
			skip += stay
		} else {
			lo, skip = next, stay
		}
	}
}

// FormatScore writes a score as Redis reads it back exactly.
func FormatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// LiveNodes reads the processes set and keeps the members whose hash still has its info,
// sorted. It only reads: a stale member (a node that died without signing off) is skipped,
// and left for the nodes' own pruning (presence.Pinger.Run), so that a read-only Redis user, or a
// read-only dashboard, can list processes and never deletes one.
func (jq *Store) LiveNodes(ctx context.Context) ([]string, error) {
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
	}); err != nil && !onlyWrongType(err, alive) {
		return nil, err
	}
	live := ids[:0]
	for i, id := range ids {
		if alive[i].Val() { // a member naming a key of another type ("queues") is no node
			live = append(live, id)
		}
	}
	sort.Strings(live)
	return live, nil
}

// nodeHashes reads one hash per live node (key(id)) in one pipeline of HGETALLs, after
// liveNodes. With more keys, each node's hashes under them are read too and merged into one
// map, the fields of an earlier key winning (the busy list under its two names).
// NodeInfos reads the hash of every live node, after LiveNodes.
func (jq *Store) NodeInfos(ctx context.Context) ([]string, []map[string]string, error) {
	return jq.nodeHashes(ctx, jq.keys.Node)
}

// NodeBusy reads the busy list of every live node (under Sidekiq 7's and 8's names, merged).
func (jq *Store) NodeBusy(ctx context.Context) ([]string, []map[string]string, error) {
	return jq.nodeHashes(ctx, jq.keys.Workers, jq.keys.Work)
}

func (jq *Store) nodeHashes(ctx context.Context, key func(id string) string, more ...func(id string) string) ([]string, []map[string]string, error) {
	ids, err := jq.LiveNodes(ctx)
	if err != nil || len(ids) == 0 {
		return nil, nil, err
	}
	hashes, err := jq.hashesOf(ctx, ids, append([]func(string) string{key}, more...)...)
	return ids, hashes, err
}

// hashesOf reads, in one pipeline of HGETALLs, the hashes of each node of ids under each key
// of keyFns, merged into one map a node, the fields of an earlier key winning.
func (jq *Store) hashesOf(ctx context.Context, ids []string, keyFns ...func(id string) string) ([]map[string]string, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids)*len(keyFns))
	_, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			for k, fn := range keyFns {
				cmds[i*len(keyFns)+k] = p.HGetAll(ctx, fn(id))
			}
		}
		return nil
	})
	if err != nil && onlyWrongType(err, cmds) {
		err = nil // a node's key of another type reads as empty: one bad key spoils its own node
	}
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
	return hashes, err
}

// onlyWrongType reports whether every failed command of cmds failed with WRONGTYPE (err is
// their pipeline's error): a reader of many records then reads such a record as empty, so that
// one key of another type (a set member naming another kind of key, or a key written by
// something else) spoils its own record, never the whole listing.
func onlyWrongType[C redis.Cmder](err error, cmds []C) bool {
	if !wrongType(err) {
		return false
	}
	for _, c := range cmds {
		if e := c.Err(); e != nil && e != redis.Nil && !wrongType(e) {
			return false
		}
	}
	return true
}

// Counts are the processed and failed counters of a span.
type Counts struct{ Processed, Failed int64 }

// Stats reads the all-time counters in one MGET; a missing one is 0.
func (jq *Store) Stats(ctx context.Context) (Counts, error) {
	vals, _, err := jq.countersPresent(ctx, []string{jq.keys.Stat("processed"), jq.keys.Stat("failed")})
	if err != nil {
		return Counts{}, err
	}
	return Counts{Processed: vals[0], Failed: vals[1]}, nil
}

// DayStats reads the counters of each UTC day of days in one MGET (a 90-day graph is one
// round trip); a missing one is 0.
func (jq *Store) DayStats(ctx context.Context, days []time.Time) ([]Counts, error) {
	out, _, err := jq.spanStats(ctx, days, jq.keys.StatDay)
	return out, err
}

// SecondStats reads the counters of each second of seconds in one MGET, and reports per
// second whether either counter exists.
func (jq *Store) SecondStats(ctx context.Context, seconds []time.Time) ([]Counts, []bool, error) {
	return jq.spanStats(ctx, seconds, jq.keys.StatSecond)
}

func (jq *Store) spanStats(ctx context.Context, at []time.Time, key func(kind string, at time.Time) string) ([]Counts, []bool, error) {
	keys := make([]string, 0, 2*len(at))
	for _, t := range at {
		keys = append(keys, key("processed", t), key("failed", t))
	}
	vals, present, err := jq.countersPresent(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Counts, len(at))
	exists := make([]bool, len(at))
	for i := range at {
		out[i] = Counts{Processed: vals[2*i], Failed: vals[2*i+1]}
		exists[i] = present[2*i] || present[2*i+1]
	}
	return out, exists, nil
}

// countersPresent is counters that also reports which keys exist.
func (jq *Store) countersPresent(ctx context.Context, keys []string) ([]int64, []bool, error) {
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

// SendSignal pushes signal onto node's signal list and sets the list's TTL, in one MULTI.
func (jq *Store) SendSignal(ctx context.Context, node, signal string) error {
	key := jq.keys.Signals(node)
	_, err := jq.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, key, signal)
		p.Expire(ctx, key, NodeTTL)
		return nil
	})
	return err
}

// OldestJobs reads the next job to run (the oldest) of every queue in qs, "" for an empty one
// (or one whose key is of another type).
func (jq *Store) OldestJobs(ctx context.Context, qs []string) ([]string, error) {
	cmds := make([]*redis.StringCmd, len(qs))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, q := range qs {
			cmds[i] = p.LIndex(ctx, jq.keys.Queue(q), -1)
		}
		return nil
	}); err != nil && err != redis.Nil && !onlyWrongType(err, cmds) {
		return nil, err // a queue key of another type reads as empty, as in QueueSizes
	}
	out := make([]string, len(qs))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// ServerInfo reads INFO's default sections (one section per call before Redis 7) from the
// server that holds the namespace: on a Redis Cluster, the master of its slot.
func (jq *Store) ServerInfo(ctx context.Context) (string, error) {
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
