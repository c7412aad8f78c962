package web

import (
	"context"
)

// stepShown is how many bytes of each step's result a job's page reads.
const stepShown = 2 << 10

// addSteps reads the durable steps the job of d saved (exq.Step), for its page. A failure to
// read them is shown on the page instead of failing it: the job itself was read.
func (h *handler) addSteps(ctx context.Context, d *jobData) {
	if d.Job == nil {
		return
	}
	steps, err := h.api.Steps(ctx, d.Job.JID, stepShown)
	if err != nil {
		d.StepsErr = err.Error()
		return
	}
	d.Steps = steps
}
