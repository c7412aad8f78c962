package exq

import (
	"context"

	"github.com/exqgo/exq/internal/scripts"
)

// moveBatch bounds the raw jobs sent in one script call, so no call blocks Redis for long.
const moveBatch = 500

// RemoveOptions change what a removal does.
type RemoveOptions struct {
	// ClearUniqueLocks also releases the unique lock of each removed job, if the job still
	// holds it (Exq's clear_unique_tokens).
	ClearUniqueLocks bool
}

// RemoveJobs removes jobs waiting in queue q, by their exact raw strings (JobRecord.Raw), and
// reports how many were removed.
func (a *API) RemoveJobs(ctx context.Context, q string, raws []string, o RemoveOptions) (int, error) {
	return a.remove(ctx, a.jq.keys.Queue(q), "list", raws, o)
}

// Remove removes jobs from a sorted set by their exact raw strings and reports how many were
// removed. Removing dead jobs leaves stat:failed as it is (it counts failures, not dead jobs).
func (a *API) Remove(ctx context.Context, s Set, raws []string, o RemoveOptions) (int, error) {
	key, err := a.setKey(s)
	if err != nil {
		return 0, err
	}
	return a.remove(ctx, key, "zset", raws, o)
}

func (a *API) remove(ctx context.Context, key, kind string, raws []string, o RemoveOptions) (int, error) {
	clear := "0"
	if o.ClearUniqueLocks {
		clear = "1"
	}
	return inBatches(raws, func(batch []any) (int, error) {
		args := append([]any{kind, a.jq.keys.Prefix, clear}, batch...)
		return scripts.RemoveJobs.Run(ctx, a.rdb, []string{key}, args...).Int()
	})
}

// inBatches calls run on raws moveBatch at a time and adds up what it reports.
func inBatches(raws []string, run func(batch []any) (int, error)) (int, error) {
	total := 0
	for len(raws) > 0 {
		n := min(len(raws), moveBatch)
		batch := make([]any, n)
		for i, r := range raws[:n] {
			batch[i] = r
		}
		done, err := run(batch)
		total += done
		if err != nil {
			return total, err
		}
		raws = raws[n:]
	}
	return total, nil
}

// Requeue moves jobs from a sorted set (retry, schedule or dead) to their queues now, byte for
// byte, atomically per batch, and reports how many moved. Jobs no longer in the set are
// skipped, so repeating a call is harmless. Unique locks are neither taken nor checked.
func (a *API) Requeue(ctx context.Context, s Set, raws []string) (int, error) {
	key, err := a.setKey(s)
	if err != nil {
		return 0, err
	}
	return inBatches(raws, func(batch []any) (int, error) {
		args := append([]any{a.jq.keys.Prefix, a.jq.keys.Wake()}, batch...)
		return scripts.RequeueSet.Run(ctx, a.rdb, []string{key}, args...).Int()
	})
}

// RequeueAll moves every job of a sorted set to its queue now, a page at a time, calling
// progress (if not nil) after each page with the jobs moved so far and the set's size at the
// start. Members that cannot be routed stay in the set.
func (a *API) RequeueAll(ctx context.Context, s Set, progress func(done, total int)) (int, error) {
	key, err := a.setKey(s)
	if err != nil {
		return 0, err
	}
	total, err := a.rdb.ZCard(ctx, key).Result()
	if err != nil {
		return 0, err
	}
	done := 0
	for offset := int64(0); ; {
		raws, err := a.rdb.ZRange(ctx, key, offset, offset+moveBatch-1).Result()
		if err != nil || len(raws) == 0 {
			return done, err
		}
		moved, err := a.Requeue(ctx, s, raws)
		done += moved
		if err != nil {
			return done, err
		}
		// What did not move (unroutable) stays at the front: step over it.
		offset += int64(len(raws) - moved)
		if progress != nil {
			progress(done, int(total))
		}
	}
}

// Clear deletes every job of a sorted set.
func (a *API) Clear(ctx context.Context, s Set) error {
	key, err := a.setKey(s)
	if err != nil {
		return err
	}
	return a.rdb.Del(ctx, key).Err()
}
