package exq

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// QueueState is a queue as the fleet controls it: its size, whether it is paused, and its
// cluster-wide limits with how much of them is in use (docs/queues.md).
type QueueState struct {
	Name string `json:"name"`
	// Size is the number of jobs waiting.
	Size int64 `json:"size"`
	// Paused reports that no exq node fetches from the queue (API.PauseQueue).
	Paused bool `json:"paused"`
	// GlobalLimit is the Queue.GlobalLimit the nodes run it with (as the last node started
	// published it); 0 when none.
	GlobalLimit int `json:"global_limit"`
	// InUse is how many of those slots are held now: live leases, one per running job.
	InUse int64 `json:"in_use"`
	// Rate is the Queue.Rate the nodes run it with; the zero Rate when none.
	Rate Rate `json:"rate"`
	// Started is how many jobs started within the rate's window (Rate set).
	Started int64 `json:"started"`
}

// QueueStates reports every known, paused or limited queue, sorted by name.
func (a *API) QueueStates(ctx context.Context) ([]QueueState, error) {
	out, _, err := a.queueStates(ctx, 0, -1)
	return out, err
}

// QueueStatesPage is QueueStates from the offset-th name on, at most size of them, with the
// number of queues in all: a page of a namespace with hundreds of thousands of queues reads
// the sizes and limits of its own queues only.
func (a *API) QueueStatesPage(ctx context.Context, offset, size int) ([]QueueState, int, error) {
	if offset < 0 || size < 0 {
		return nil, 0, fmt.Errorf("exq: api: offset and size must not be negative")
	}
	return a.queueStates(ctx, offset, size)
}

// queueStates is the states of the names from offset, size of them (-1: all), and how many
// queues there are.
func (a *API) queueStates(ctx context.Context, offset, size int) ([]QueueState, int, error) {
	known, err := a.jq.KnownQueues(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("exq: queue states: %w", err)
	}
	paused, err := a.jq.Paused(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("exq: queue states: %w", err)
	}
	limits, err := a.jq.PublishedLimits(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("exq: queue states: %w", err)
	}
	limited := make([]string, 0, len(limits))
	for q := range limits {
		limited = append(limited, q)
	}
	all := unionSorted(known, paused, limited)
	names := all[min(offset, len(all)):]
	if size >= 0 && size < len(names) {
		names = names[:size]
	}
	if len(names) == 0 {
		return []QueueState{}, len(all), nil
	}
	uses, err := a.jq.QueueUses(ctx, names, limits)
	if err != nil {
		return nil, 0, fmt.Errorf("exq: queue states: %w", err)
	}
	isPaused := make(map[string]bool, len(paused))
	for _, q := range paused {
		isPaused[q] = true
	}
	out := make([]QueueState, len(names))
	for i, q := range names {
		u, l := uses[q], limits[q]
		out[i] = QueueState{Name: q, Size: u.Size, Paused: isPaused[q], GlobalLimit: l.GlobalLimit, InUse: u.InUse, Rate: rateOf(l.Limits()), Started: u.Started}
	}
	return out, len(all), nil
}

// unionSorted merges string lists into one sorted list without duplicates.
func unionSorted(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// QueueLatencies maps every known queue to how long its oldest waiting job has waited (now
// minus its enqueued_at, Sidekiq's "latency"); 0 for an empty queue or a job without the field.
// One round trip for all queues.
func (a *API) QueueLatencies(ctx context.Context) (map[string]time.Duration, error) {
	qs, err := a.jq.KnownQueues(ctx)
	if err != nil {
		return map[string]time.Duration{}, err
	}
	return a.QueueLatenciesOf(ctx, qs)
}

// QueueLatenciesOf is QueueLatencies for the queues qs only.
func (a *API) QueueLatenciesOf(ctx context.Context, qs []string) (map[string]time.Duration, error) {
	if len(qs) == 0 {
		return map[string]time.Duration{}, nil
	}
	oldest, err := a.jq.OldestJobs(ctx, qs)
	if err != nil {
		return nil, fmt.Errorf("exq: queue latencies: %w", err)
	}
	now, err := a.now(ctx)
	if err != nil {
		return nil, fmt.Errorf("exq: queue latencies: %w", err)
	}
	out := make(map[string]time.Duration, len(qs))
	for i, q := range qs {
		out[q] = 0
		if oldest[i] == "" {
			continue
		}
		if h, err := wire.DecodeHeader(oldest[i]); err == nil {
			// In seconds or Sidekiq 8's milliseconds; created_at when enqueued_at is
			// missing, as Sidekiq 8's calculate_latency (api.rb) reads it.
			at := h.EnqueuedAt.Stamp()
			if at.IsZero() {
				at = h.CreatedAt.Stamp()
			}
			if !at.IsZero() {
				out[q] = max(now.Sub(at), 0)
			}
		}
	}
	return out, nil
}
