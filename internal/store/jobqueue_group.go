package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// WriteOne writes one job with its own script, as an enqueue always did.
func (jq *Store) WriteOne(ctx context.Context, it BatchItem) (holder string, err error) {
	if it.At.IsZero() {
		return jq.Enqueue(ctx, it.Queue, it.Job, it.Lock)
	}
	return jq.EnqueueAt(ctx, it.At, it.Job, it.Lock)
}

// GroupOutcome is what the group script did with one job: written (holder ""), refused on a
// unique conflict (holder), or failed (err, for that job alone).
type GroupOutcome struct {
	Holder string
	Err    error
}

// scriptError is an error a command of the group script returned for one job: a Redis error
// reply, as the one-job script's failure would have been.
type scriptError string

func (e scriptError) Error() string { return string(e) }

// RedisError marks it as a Redis error reply (go-redis' redis.Error).
func (e scriptError) RedisError() {}

var _ redis.Error = scriptError("")

// EnqueueGroup writes items (each as enqueue or enqueueAt would, in order) in one script call
// and returns each one's outcome. err is an error of the whole call: then nothing is known of
// any item (they may have been written). With WaitReplicas, replErr wraps ErrNotReplicated
// when too few replicas confirmed the call; the outcomes stand.
func (jq *Store) EnqueueGroup(ctx context.Context, items []BatchItem) (out []GroupOutcome, replErr, err error) {
	queueNo := map[string]int{}
	var queues []string
	locks := 0
	for _, it := range items {
		if it.At.IsZero() {
			if _, ok := queueNo[it.Queue]; !ok {
				queues = append(queues, it.Queue)
				queueNo[it.Queue] = len(queues)
			}
		}
		if it.Lock != nil {
			locks++
		}
	}
	keys := make([]string, 0, 2+len(queues)+locks)
	keys = append(keys, jq.keys.Schedule(), jq.keys.Queues())
	args := make([]any, 0, 3+len(queues)+6*len(items))
	args = append(args, jq.keys.Wake(), len(queues), len(items))
	for _, q := range queues {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	lockNo := 0
	for _, it := range items {
		q, score := 0, ""
		if it.At.IsZero() {
			q = queueNo[it.Queue]
		} else {
			score = wire.FormatTime(it.At)
		}
		args = append(args, q, score, it.Job)
		if it.Lock == nil {
			args = append(args, 0, "", 0)
			continue
		}
		keys = append(keys, jq.keys.Unique(it.Lock.Token))
		lockNo++
		args = append(args, lockNo, it.Lock.JID, it.Lock.ttlMillis())
	}
	cmd, replErr := jq.evalScript(ctx, scripts.EnqueueGroup, keys, args...)
	res, err := cmd.Slice()
	if err != nil {
		return nil, nil, err
	}
	if len(res) != 2*len(items) {
		return nil, nil, fmt.Errorf("enqueue group: %d values in the reply for %d jobs", len(res), len(items))
	}
	out = make([]GroupOutcome, len(items))
	for i := range items {
		code, _ := res[2*i].(int64)
		val, _ := res[2*i+1].(string)
		switch code {
		case 0:
		case 1:
			out[i].Holder = val
		default:
			out[i].Err = MarkOOM(scriptError(val))
		}
	}
	return out, replErr, nil
}
