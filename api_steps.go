package exq

import (
	"context"
	"fmt"
	"sort"
)

// DefaultStepShown is how many bytes of each step's result API.Steps reads when given no limit.
const DefaultStepShown = 1 << 10

// StoredStep is one durable step a job saved (Step), read for showing it.
type StoredStep struct {
	// Name is the step's name, as the job gave it. Read from Redis: escape it before showing it.
	Name string
	// JSON is the step's result as saved (JSON), cut at the limit asked for on a rune boundary.
	// Read from Redis: escape it before showing it.
	JSON string
	// Size is the whole result's length in bytes.
	Size int
}

// Truncated reports whether JSON is only the start of the step's result.
func (s StoredStep) Truncated() bool { return len(s.JSON) < s.Size }

// JobSteps are the steps a job saved, as API.Steps reads them.
type JobSteps struct {
	// Steps are the steps read, by name, at most MaxSteps of them.
	Steps []StoredStep
	// Total is how many steps the job saved (more than len(Steps) when the job's hash holds
	// more than MaxSteps, which exq never writes).
	Total int
}

// Steps reads the durable steps job jid saved (Step), sorted by name, with at most limit bytes
// of each result (limit <= 0: DefaultStepShown). A job that saved none (or whose steps
// expired) has none. It writes nothing.
func (a *API) Steps(ctx context.Context, jid string, limit int) (JobSteps, error) {
	if limit <= 0 {
		limit = DefaultStepShown
	}
	heads, total, err := a.jq.StepHeads(ctx, jid, MaxSteps, limit)
	if err != nil {
		return JobSteps{}, fmt.Errorf("exq: api: steps of %s: %w", jid, err)
	}
	out := JobSteps{Total: int(total), Steps: make([]StoredStep, 0, len(heads))}
	for _, h := range heads {
		head := h.Head
		if len(head) < h.Size {
			head = cutRunes(head)
		}
		out.Steps = append(out.Steps, StoredStep{Name: h.Name, JSON: string(head), Size: h.Size})
	}
	sort.Slice(out.Steps, func(i, j int) bool { return out.Steps[i].Name < out.Steps[j].Name })
	return out, nil
}

// ExpiredJobs reads how many jobs were not run because they expired before they started
// (ExpiresIn, ExpiresAt), on every node since the namespace began: exq's own counter, which
// Sidekiq's and Exq's stats do not show.
func (a *API) ExpiredJobs(ctx context.Context) (int64, error) {
	n, err := a.jq.ExpiredCount(ctx)
	if err != nil {
		return 0, fmt.Errorf("exq: api: expired jobs: %w", err)
	}
	return n, nil
}
