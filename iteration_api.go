package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/exqgo/exq/internal/store"
)

// The node's and the admin API's side of iterations (iteration.go): what a running Iteration
// reaches of its node, the progress reads, and CancelJob, which sets an iteration's flag.

func (e *Exq) iterationStore() *store.Store       { return e.jq }
func (e *Exq) iterationStopping() <-chan struct{} { return e.done }
func (e *Exq) iterationTimeout() time.Duration    { return e.opts.RedisTimeout }
func (e *Exq) iterationLog() *slog.Logger         { return e.log }

// IterationProgress reads the saved state of iterable job jid; ok is false when it has none
// (not an iterable job, not started, or finished long ago).
func (a *API) IterationProgress(ctx context.Context, jid string) (p IterationProgress, ok bool, err error) {
	st, err := a.jq.Iteration(ctx, jid)
	if err != nil {
		return IterationProgress{}, false, fmt.Errorf("exq: api: iteration progress of %s: %w", jid, err)
	}
	if !st.Exists {
		return IterationProgress{}, false, nil
	}
	return iterProgressOf(st), true, nil
}

// addIterations fills the Iteration of the busy jobs that have a saved state, in one round trip.
func (a *API) addIterations(ctx context.Context, busy []BusyJob) error {
	if len(busy) == 0 {
		return nil
	}
	jids := make([]string, 0, len(busy))
	for _, b := range busy {
		if j, err := b.Job(); err == nil && j.JID != "" {
			jids = append(jids, j.JID)
		}
	}
	its, err := a.IterationProgresses(ctx, jids)
	if err != nil {
		return err
	}
	for i := range busy {
		if j, err := busy[i].Job(); err == nil {
			if p, ok := its[j.JID]; ok {
				busy[i].Iteration = &p
			}
		}
	}
	return nil
}

// IterationProgresses reads the saved states of jids in one round trip; jids without one are
// not in the map.
func (a *API) IterationProgresses(ctx context.Context, jids []string) (map[string]IterationProgress, error) {
	sts, err := a.jq.Iterations(ctx, jids)
	if err != nil {
		return nil, fmt.Errorf("exq: api: iteration progress: %w", err)
	}
	out := make(map[string]IterationProgress, len(sts))
	for jid, st := range sts {
		out[jid] = iterProgressOf(st)
	}
	return out, nil
}

// CancelJob cancels job jid wherever it is, and returns the node running it ("" when it was
// waiting):
//   - waiting in a queue, the retry set or the schedule set, or as a keyed job in its key's
//     list or its queue's delayed set (docs/keys.md): it moves to the dead set (error
//     "Canceled" is not written: the document is unchanged) and never runs; a sequence held by
//     the cancelled job (its failed run waiting for a retry) goes on with its next job;
//   - running: a CANCEL signal goes to its node; the job goes to the dead set with
//     error_message "Canceled" once its worker returns (an Iteration stops at its next item);
//     a job running on a Sidekiq or Exq node gets no signal (they have none for it), only the
//     flag below, which a Sidekiq 7.3 iterable job honours at its next save;
//   - in every case the cancellation flag of Sidekiq 7.3's iteration state (it-<jid>) is set
//     first, so an iterable job (Iteration, or a Sidekiq::IterableJob in Ruby) that is moving
//     between those places meanwhile stops at its next start or save.
//
// A jid found nowhere is ErrJobNotFound, and the flag is removed again, unless the job has an
// iteration state: then it is between runs (being handed back, rescued) and the flag stops it.
//
// The places are searched in the direction jobs move between them by
// themselves (retry and schedule, then the queues, then the keyed jobs' delayed sets and
// lists, then the nodes running them), so a job moving
// on during the search is found at a later step. The flag, set before the search, covers what
// the search cannot see: a running iterable job (which a CANCEL signal also stops), and one
// fetched but not yet in its node's busy list.
func (a *API) CancelJob(ctx context.Context, jid string) (string, error) {
	if jid == "" {
		return "", fmt.Errorf("exq: api: cancel job: the jid is empty")
	}
	now, err := a.now(ctx)
	if err != nil {
		return "", fmt.Errorf("exq: api: cancel job: %w", err)
	}
	_, existed, err := a.jq.CancelIteration(ctx, jid, now)
	if err != nil {
		return "", fmt.Errorf("exq: api: cancel job %s: %w", jid, err)
	}
	for _, s := range []Set{RetrySet, ScheduledSet} {
		rec, err := a.Find(ctx, s, jid)
		if errors.Is(err, ErrJobNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		n, err := a.Kill(ctx, s, []string{rec.Raw})
		if err != nil {
			return "", err
		}
		if n == 1 {
			return "", a.dropFlag(ctx, jid, existed)
		}
	}
	queues, err := a.Queues(ctx)
	if err != nil {
		return "", err
	}
	for _, q := range queues {
		rec, err := a.FindInQueue(ctx, q, jid)
		if errors.Is(err, ErrJobNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		moved, err := a.jq.KillQueued(ctx, q, rec.Raw, now, DefaultDeadTimeout, DefaultDeadMaxJobs)
		if err != nil {
			return "", err
		}
		if moved {
			return "", a.dropFlag(ctx, jid, existed)
		}
	}
	for _, q := range queues {
		found, err := a.cancelKeyed(ctx, q, jid, now)
		if err != nil {
			return "", fmt.Errorf("exq: api: cancel job %s: %w", jid, err)
		}
		if found {
			return "", a.dropFlag(ctx, jid, existed)
		}
	}
	busy, err := a.BusyJobs(ctx)
	if err != nil {
		return "", err
	}
	for _, b := range busy {
		if j, err := b.Job(); err != nil || j.JID != jid {
			continue
		}
		procs, err := a.Processes(ctx)
		if err != nil {
			return "", err
		}
		for _, p := range procs {
			if p.Identity == b.Node && p.Runtime != "exq" {
				// Sidekiq and Exq have no CANCEL signal (Sidekiq would take it for a Unix
				// signal's name): the flag alone stops a Sidekiq 7.3 iterable job.
				return b.Node, nil
			}
		}
		body, _ := json.Marshal(map[string]string{"jid": jid, "pid": b.RunID})
		return b.Node, a.SendSignal(ctx, b.Node, "CANCEL:"+string(body))
	}
	if existed {
		return "", nil // an iterable job between two runs: its flag stops it
	}
	_ = a.dropFlag(ctx, jid, false)
	return "", fmt.Errorf("%w: %s is not waiting or running anywhere", ErrJobNotFound, jid)
}

// dropFlag removes the flag cancelJob set on a jid that had no iteration state (existed false)
// once the flag is not needed: the job was buried where it waited, or is nowhere. A failure is
// logged, not returned: the flag expires by itself.
func (a *API) dropFlag(ctx context.Context, jid string, existed bool) error {
	if existed {
		return nil
	}
	if err := a.jq.UncancelIteration(ctx, jid); err != nil {
		a.log.Warn("exq: api: cancel job: could not remove the cancellation flag; it expires by itself", "jid", jid, "error", err)
	}
	return nil
}
