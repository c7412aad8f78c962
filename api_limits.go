package exq

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// QueueState is a queue as the fleet controls it: its size, whether it is paused, and its
// cluster-wide limits with how much of them is in use (README "Controlling queues").
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
	known, err := a.jq.knownQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("exq: queue states: %w", err)
	}
	paused, err := a.jq.paused(ctx)
	if err != nil {
		return nil, fmt.Errorf("exq: queue states: %w", err)
	}
	limits, err := a.jq.publishedLimits(ctx)
	if err != nil {
		return nil, fmt.Errorf("exq: queue states: %w", err)
	}
	limited := make([]string, 0, len(limits))
	for q := range limits {
		limited = append(limited, q)
	}
	names := unionSorted(known, paused, limited)
	if len(names) == 0 {
		return []QueueState{}, nil
	}
	uses, err := a.jq.queueUses(ctx, names, limits)
	if err != nil {
		return nil, fmt.Errorf("exq: queue states: %w", err)
	}
	isPaused := make(map[string]bool, len(paused))
	for _, q := range paused {
		isPaused[q] = true
	}
	out := make([]QueueState, len(names))
	for i, q := range names {
		u, l := uses[q], limits[q]
		out[i] = QueueState{Name: q, Size: u.size, Paused: isPaused[q], GlobalLimit: l.GlobalLimit, InUse: u.inUse, Rate: l.rate(), Started: u.started}
	}
	return out, nil
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
	qs, err := a.jq.knownQueues(ctx)
	if err != nil || len(qs) == 0 {
		return map[string]time.Duration{}, err
	}
	oldest, err := a.jq.oldestJobs(ctx, qs)
	if err != nil {
		return nil, fmt.Errorf("exq: queue latencies: %w", err)
	}
	now := time.Now()
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
