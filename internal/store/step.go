package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Step reads the result job jid saved for its step name, and how many steps the job has
// saved, in one round trip (HGET and HLEN pipelined): the count lets the caller refuse a new
// step past its bound before running it. ok is false when the step has no saved result.
func (jq *Store) Step(ctx context.Context, jid, name string) (val []byte, ok bool, saved int64, err error) {
	k := jq.keys.Steps(jid)
	p := jq.rdb.Pipeline()
	get := p.HGet(ctx, k, name)
	n := p.HLen(ctx, k)
	_, _ = p.Exec(ctx) // each command's error is read below
	if saved, err = n.Result(); err != nil {
		return nil, false, 0, err
	}
	val, err = get.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, saved, nil
	}
	return val, err == nil, saved, err
}

// SaveStep saves val as the result of job jid's step name unless one is saved already (the
// first save wins: a run that lost its reply, or a second run of the same job at the same
// time, finds it), sets the steps' expiry to ttl, and returns the result that stands: val, or
// the one saved before. One MULTI: the save and its expiry cannot come apart.
func (jq *Store) SaveStep(ctx context.Context, jid, name string, val []byte, ttl time.Duration) ([]byte, error) {
	k := jq.keys.Steps(jid)
	p := jq.rdb.TxPipeline()
	p.HSetNX(ctx, k, name, val)
	p.PExpire(ctx, k, max(ttl, time.Millisecond))
	get := p.HGet(ctx, k, name)
	if _, err := p.Exec(ctx); err != nil {
		return nil, err
	}
	return get.Bytes()
}

// ExpireSteps sets when job jid's saved steps expire: ttl from now (at least a millisecond).
// It does nothing when the job saved none.
func (jq *Store) ExpireSteps(ctx context.Context, jid string, ttl time.Duration) error {
	return jq.rdb.PExpire(ctx, jq.keys.Steps(jid), max(ttl, time.Millisecond)).Err()
}

// StepHead is one saved step as a display reads it.
type StepHead struct {
	// Name is the step's name.
	Name string
	// Head is the start of its result, at most the limit asked for.
	Head []byte
	// Size is the result's whole length in bytes.
	Size int
}

// StepHeads reads the steps job jid saved (HSCAN), at most maxSteps of them and the first
// limit bytes of each, with the number saved in all (HLEN). It writes nothing. A key that
// holds no hash is an error.
func (jq *Store) StepHeads(ctx context.Context, jid string, maxSteps int, limit int) ([]StepHead, int64, error) {
	k := jq.keys.Steps(jid)
	total, err := jq.rdb.HLen(ctx, k).Result()
	if err != nil || total == 0 {
		return nil, total, err
	}
	var out []StepHead
	seen := make(map[string]bool)
	var cursor uint64
	for {
		kv, next, err := jq.rdb.HScan(ctx, k, cursor, "", 100).Result()
		if err != nil {
			return nil, 0, err
		}
		for i := 0; i+1 < len(kv) && len(out) < maxSteps; i += 2 {
			if seen[kv[i]] { // HSCAN may return an element twice
				continue
			}
			seen[kv[i]] = true
			v := kv[i+1]
			out = append(out, StepHead{Name: kv[i], Head: []byte(v[:min(len(v), max(limit, 0))]), Size: len(v)})
		}
		cursor = next
		if cursor == 0 || len(out) >= maxSteps {
			return out, total, nil
		}
	}
}

// ExpiredCount reads exq's counter of expired jobs (0 when it does not exist).
func (jq *Store) ExpiredCount(ctx context.Context) (int64, error) {
	s, err := jq.rdb.Get(ctx, jq.keys.ExpiredStat()).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n, nil
}

// CountExpired adds one to exq's counter of expired jobs.
func (jq *Store) CountExpired(ctx context.Context) error {
	return jq.rdb.Incr(ctx, jq.keys.ExpiredStat()).Err()
}
