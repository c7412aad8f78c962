package exq

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"

	"github.com/exqgo/exq/internal/store"
)

// RemoveOptions change what a removal does.
type RemoveOptions struct {
	// ClearUniqueLocks also releases the unique lock of each removed job, if the job still
	// holds it (Exq's clear_unique_tokens).
	ClearUniqueLocks bool
}

// RemoveJobs removes jobs waiting in queue q, by their exact raw strings (JobRecord.Raw), and
// reports how many were removed.
func (a *API) RemoveJobs(ctx context.Context, q string, raws []string, o RemoveOptions) (int, error) {
	return inBatches(raws, func(batch []any) (int, error) {
		return a.jq.RemoveFromQueue(ctx, q, o.ClearUniqueLocks, batch)
	})
}

// Remove removes jobs from a sorted set by their exact raw strings and reports how many were
// removed. Removing dead jobs leaves stat:failed as it is (it counts failures, not dead jobs).
func (a *API) Remove(ctx context.Context, s Set, raws []string, o RemoveOptions) (int, error) {
	key, err := a.setKey(s)
	if err != nil {
		return 0, err
	}
	return inBatches(raws, func(batch []any) (int, error) {
		return a.jq.RemoveFromSet(ctx, key, o.ClearUniqueLocks, batch)
	})
}

// inBatches calls run on raws store.MoveBatch at a time and adds up what it reports.
func inBatches(raws []string, run func(batch []any) (int, error)) (int, error) {
	total := 0
	for len(raws) > 0 {
		n := min(len(raws), store.MoveBatch)
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
// byte, atomically per batch, and reports how many moved. "Requeue" is exq's one word for this
// move, in the API and the CLI (exq requeue, alias exq retry); it is Exq's dequeue_*_jobs and
// retry_job, and Sidekiq Web's "Retry Now" (retries, dead) and "Add to queue" (scheduled),
// the labels the dashboard keeps. Unlike Sidekiq's SortedEntry#retry it leaves retry_count
// as it is. Jobs no longer in the set are
// skipped, so repeating a call is harmless. Unique locks are neither taken nor checked.
func (a *API) Requeue(ctx context.Context, s Set, raws []string) (int, error) {
	key, err := a.setKey(s)
	if err != nil {
		return 0, err
	}
	return inBatches(raws, func(batch []any) (int, error) {
		return a.jq.RequeueSet(ctx, key, batch)
	})
}

// RequeueJob moves job jid from a sorted set (retry, schedule or dead) to its queue now, byte
// for byte, and returns the record it moved. The job is found by a paged scan and moved by its
// exact raw string in one script, so a job that left the set meanwhile (run by the scheduler,
// moved by another call) is not moved twice: calling again, or for a jid that is not there,
// changes nothing and returns ErrJobNotFound. Unique locks are neither taken nor checked.
func (a *API) RequeueJob(ctx context.Context, s Set, jid string) (JobRecord, error) {
	rec, err := a.Find(ctx, s, jid)
	if err != nil {
		return JobRecord{}, err
	}
	n, err := a.Requeue(ctx, s, []string{rec.Raw})
	if err != nil {
		return JobRecord{}, err
	}
	if n == 0 {
		return JobRecord{}, fmt.Errorf("%w: %s left %s before it could be moved", ErrJobNotFound, jid, s)
	}
	return rec, nil
}

// Kill moves jobs from the retry or schedule set to the dead set, byte for byte, by their
// exact raw strings, atomically per batch, and reports how many moved (Sidekiq Web's "Kill").
// Their time of death is now. The dead set is then trimmed as a node trims it with the default
// DeadTimeout and DeadMaxJobs (180 days, 10 000 jobs). Jobs no longer in the set are skipped,
// so repeating a call is harmless; unique locks stay as they are.
func (a *API) Kill(ctx context.Context, s Set, raws []string) (int, error) {
	if s != RetrySet && s != ScheduledSet {
		return 0, fmt.Errorf("exq: api: kill: jobs move to dead from retry or schedule, not %q", s)
	}
	key, err := a.setKey(s)
	if err != nil {
		return 0, err
	}
	now, err := a.now(ctx)
	if err != nil {
		return 0, fmt.Errorf("exq: api: kill: %w", err)
	}
	return inBatches(raws, func(batch []any) (int, error) {
		return a.jq.KillSet(ctx, key, now, DefaultDeadTimeout, DefaultDeadMaxJobs, batch)
	})
}

// RequeueAll moves every job that is in a sorted set when it starts to its queue now, a page
// at a time, calling progress (if not nil) after each page with the jobs moved so far and the
// number of members at the start. Members that cannot be routed stay in the set. Jobs that
// enter the set during the call, such as jobs it moved that failed again, are left for the
// next call: each job moves at most once, so the call ends however fast jobs fail.
//
// It reads the set twice: once to note a fingerprint (8 bytes) of every member and the
// highest score, once to move the noted members, in score order up to that score.
func (a *API) RequeueAll(ctx context.Context, s Set, progress func(done, total int)) (int, error) {
	key, err := a.setKey(s)
	if err != nil {
		return 0, err
	}
	seed := maphash.MakeSeed()
	there := map[uint64]struct{}{}
	newest := math.Inf(-1)
	err = a.jq.ScanSet(ctx, key, "+inf", func(page []store.Member) error {
		for _, z := range page {
			m := z.Raw
			there[maphash.String(seed, m)] = struct{}{}
			newest = z.Score // pages come in score order
		}
		return nil
	})
	if err != nil || len(there) == 0 {
		return 0, err
	}
	total, done := len(there), 0
	err = a.jq.ScanSet(ctx, key, store.FormatScore(newest), func(page []store.Member) error {
		raws := make([]string, 0, len(page))
		for _, z := range page {
			m := z.Raw
			if h := maphash.String(seed, m); hasKey(there, h) {
				delete(there, h) // seen once: never moved twice
				raws = append(raws, m)
			}
		}
		moved, err := a.Requeue(ctx, s, raws)
		done += moved
		if err != nil {
			return err
		}
		if progress != nil {
			progress(done, total)
		}
		if len(there) == 0 {
			return errScanDone
		}
		return nil
	})
	if errors.Is(err, errScanDone) {
		err = nil
	}
	return done, err
}

func hasKey(m map[uint64]struct{}, k uint64) bool {
	_, ok := m[k]
	return ok
}

// errScanDone ends a scanSet early.
var errScanDone = errors.New("scan done")

// Clear deletes every job of a sorted set.
func (a *API) Clear(ctx context.Context, s Set) error {
	key, err := a.setKey(s)
	if err != nil {
		return err
	}
	return a.jq.ClearSet(ctx, key)
}
