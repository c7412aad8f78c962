package exq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// jobQueue is every Redis operation on queues, backup lists and job sets. It is the only code
// that knows key names (through wire.Keys) and runs scripts.
type jobQueue struct {
	rdb  redis.UniversalClient
	keys wire.Keys
	node string
}

// pageSize bounds the work of one recovery script call, so a huge backup list never blocks
// Redis for long.
const pageSize = 100

// enqueue pushes one job onto queue q now.
func (jq *jobQueue) enqueue(ctx context.Context, q, job string) error {
	return scripts.Enqueue.Run(ctx, jq.rdb,
		[]string{jq.keys.Queues(), jq.keys.Queue(q)}, q, job, jq.keys.Wake()).Err()
}

// enqueueAt adds one job to the schedule set, due at at.
func (jq *jobQueue) enqueueAt(ctx context.Context, at time.Time, job string) error {
	return jq.rdb.ZAdd(ctx, jq.keys.Schedule(), redis.Z{Score: score(at), Member: job}).Err()
}

// batchItem is one job of an enqueueAll; a zero at means now.
type batchItem struct {
	queue string
	at    time.Time
	job   string
}

// enqueueAll writes every item in one script call: all of them or none.
func (jq *jobQueue) enqueueAll(ctx context.Context, items []batchItem) error {
	keys := make([]string, 0, 2+len(items))
	keys = append(keys, jq.keys.Schedule(), jq.keys.Queues())
	args := make([]any, 0, 1+3*len(items))
	args = append(args, jq.keys.Wake())
	for _, it := range items {
		keys = append(keys, jq.keys.Queue(it.queue))
		at := ""
		if !it.at.IsZero() {
			at = wire.FormatTime(it.at)
		}
		args = append(args, it.queue, at, it.job)
	}
	return scripts.EnqueueAll.Run(ctx, jq.rdb, keys, args...).Err()
}

// fetchReq asks for up to n jobs of queue.
type fetchReq struct {
	queue string
	n     int
}

// fetch moves up to n jobs of every requested queue into this node's backup lists in one round
// trip and returns them per request, oldest first.
func (jq *jobQueue) fetch(ctx context.Context, reqs []fetchReq) ([][]string, error) {
	keys := make([]string, 0, 2*len(reqs))
	args := make([]any, 0, len(reqs))
	for _, r := range reqs {
		keys = append(keys, jq.keys.Queue(r.queue), jq.keys.Backup(jq.node, r.queue))
		args = append(args, r.n)
	}
	res, err := scripts.Fetch.Run(ctx, jq.rdb, keys, args...).Slice()
	if err != nil {
		return nil, err
	}
	if len(res) != len(reqs) {
		return nil, fmt.Errorf("fetch: %d replies for %d queues", len(res), len(reqs))
	}
	out := make([][]string, len(res))
	for i, r := range res {
		list, _ := r.([]any)
		for _, j := range list {
			if s, ok := j.(string); ok {
				out[i] = append(out[i], s)
			}
		}
	}
	return out, nil
}

// ack removes a finished job from the backup list.
func (jq *jobQueue) ack(ctx context.Context, q, raw string) error {
	return jq.rdb.LRem(ctx, jq.keys.Backup(jq.node, q), -1, raw).Err()
}

// retry stores the rewritten job in the retry set, due at at, and removes the raw one from the
// backup list, atomically. It reports false when the job was no longer in the backup list.
func (jq *jobQueue) retry(ctx context.Context, q, raw, rewritten string, at time.Time) (bool, error) {
	n, err := scripts.Retry.Run(ctx, jq.rdb,
		[]string{jq.keys.Retry(), jq.keys.Backup(jq.node, q)},
		wire.FormatTime(at), rewritten, raw).Int()
	return n == 1, err
}

// dead stores the rewritten job in the dead set, trims it, and removes the raw job from the
// backup list, atomically.
func (jq *jobQueue) dead(ctx context.Context, q, raw, rewritten string, now time.Time, keepFor time.Duration, keepMax int) (bool, error) {
	n, err := scripts.Dead.Run(ctx, jq.rdb,
		[]string{jq.keys.Dead(), jq.keys.Backup(jq.node, q)},
		wire.FormatTime(now), rewritten, raw, wire.FormatTime(now.Add(-keepFor)), keepMax).Int()
	return n == 1, err
}

// requeue hands raws (newest first) from the backup list back to the consumption end of q.
func (jq *jobQueue) requeue(ctx context.Context, q string, raws []string) (int, error) {
	args := make([]any, 0, 2+len(raws))
	args = append(args, jq.keys.Wake(), q)
	for _, r := range raws {
		args = append(args, r)
	}
	return scripts.Requeue.Run(ctx, jq.rdb,
		[]string{jq.keys.Backup(jq.node, q), jq.keys.Queue(q)}, args...).Int()
}

// recoverBackup moves every job of this node's backup list for q back to the consumption end
// of q, oldest in-flight job first, a page per call.
func (jq *jobQueue) recoverBackup(ctx context.Context, q string) (int, error) {
	total := 0
	for {
		res, err := scripts.Recover.Run(ctx, jq.rdb,
			[]string{jq.keys.Backup(jq.node, q), jq.keys.Queue(q)}, pageSize).Int64Slice()
		if err != nil {
			return total, err
		}
		if len(res) != 2 {
			return total, fmt.Errorf("recover: unexpected reply %v", res)
		}
		total += int(res[1])
		if res[0] == 0 || res[1] == 0 {
			return total, nil
		}
	}
}

// knownQueues lists the queues in the queues set.
func (jq *jobQueue) knownQueues(ctx context.Context) ([]string, error) {
	return jq.rdb.SMembers(ctx, jq.keys.Queues()).Result()
}

// moveDue moves up to page due jobs of zset (schedule or retry) to their queues and reports
// how many members it took.
func (jq *jobQueue) moveDue(ctx context.Context, zset string, now time.Time, page int) (int, error) {
	return scripts.Schedule.Run(ctx, jq.rdb, []string{zset, jq.keys.Dead()},
		wire.FormatTime(now), page, jq.keys.Prefix, jq.keys.Wake(),
		"poison-"+uuid.NewString()+"-", wire.PoisonClass, wire.PoisonErrorClass).Int()
}

// score is t as a sorted-set score (float seconds, microsecond precision).
func score(t time.Time) float64 {
	f, _ := strconv.ParseFloat(wire.FormatTime(t), 64)
	return f
}

// beat records that this node is alive (server clock).
func (jq *jobQueue) beat(ctx context.Context) error {
	return scripts.Beat.Run(ctx, jq.rdb, []string{jq.keys.Heartbeats()}, jq.node).Err()
}

// staleNode is a node whose last beat is too old, with the score seen.
type staleNode struct {
	node, score string
}

// staleNodes lists nodes that have not beaten for maxAge (server clock).
func (jq *jobQueue) staleNodes(ctx context.Context, maxAge time.Duration) ([]staleNode, error) {
	res, err := scripts.Stale.Run(ctx, jq.rdb, []string{jq.keys.Heartbeats()}, maxAge.Seconds()).StringSlice()
	if err != nil {
		return nil, err
	}
	out := make([]staleNode, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		out = append(out, staleNode{node: res[i], score: res[i+1]})
	}
	return out, nil
}

// rescueBackup moves the backup list of dead node n for queue q back to q, a page per call,
// while n's heartbeat is still the stale one. It reports the jobs moved.
func (jq *jobQueue) rescueBackup(ctx context.Context, n staleNode, q string) (int, error) {
	total := 0
	for {
		left, moved, err := jq.rescuePage(ctx, n, q, pageSize)
		total += moved
		if err != nil || left == 0 || moved == 0 {
			return total, err
		}
	}
}

// rescuePage moves up to page entries; it reports the entries left and moved.
func (jq *jobQueue) rescuePage(ctx context.Context, n staleNode, q string, page int) (left, moved int, err error) {
	res, err := scripts.Rescue.Run(ctx, jq.rdb,
		[]string{jq.keys.Backup(n.node, q), jq.keys.Queue(q), jq.keys.Heartbeats()},
		n.node, n.score, page, jq.keys.Wake(), q).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("rescue: unexpected reply %v", res)
	}
	return int(res[0]), int(res[1]), nil
}

// bury forgets dead node n (busy list and heartbeat) unless it beat again.
func (jq *jobQueue) bury(ctx context.Context, n staleNode) (bool, error) {
	r, err := scripts.Bury.Run(ctx, jq.rdb, []string{jq.keys.Heartbeats(), jq.keys.Workers(n.node)}, n.node, n.score).Int()
	return r == 1, err
}
