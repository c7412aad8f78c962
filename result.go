package exq

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/wire"
)

// MaxProgressMessage is the longest message SetProgress accepts, in bytes.
const MaxProgressMessage = 200

// Progress is what a running job last reported with SetProgress, as the busy list shows it.
type Progress struct {
	// Fraction is how much of its work the job has done, from 0 to 1.
	Fraction float64
	// Message says what it is doing, at most MaxProgressMessage bytes.
	Message string
}

// SetProgress reports how far the job running with ctx has got: fraction (from 0 to 1) of its
// work done, and a short message. It costs no Redis command: the node keeps the latest value
// and writes it with its busy list within about a second, where API.BusyJobs, `exq busy` and
// the dashboard read it (not with Options.DisableStats, which writes no busy list). A fraction
// that is not a number from 0 to 1, or a message longer than MaxProgressMessage bytes or not
// UTF-8, is refused with ErrInvalidProgress; so is a call outside a job. A job given to a
// worker outside a node (WithJob, exqtest) has its progress checked but shown nowhere.
func SetProgress(ctx context.Context, fraction float64, message string) error {
	job := JobFromContext(ctx)
	err := wire.CheckProgress(fraction, message)
	switch {
	case job == nil:
		return fmt.Errorf("exq: set progress: not in a job: %w", ErrInvalidProgress)
	case err != nil:
		return fmt.Errorf("exq: set progress: %w: %w", ErrInvalidProgress, err)
	case job.progress != nil:
		job.progress.Store(&wire.Progress{Fraction: fraction, Message: message})
	}
	return nil
}

// Defaults of the results jobs store (Options.ResultTTL and ResultMaxBytes).
const (
	DefaultResultTTL      = 24 * time.Hour
	DefaultResultMaxBytes = 512 << 10
)

// SetResult stores v, encoded as JSON, as the result of the job running with ctx, for
// Options.ResultTTL; a client reads it with Result or WaitResult, a workflow job's dependents
// with ParentResult. A later call, or a later run of the job, replaces it. A result larger than
// Options.ResultMaxBytes is refused with ErrResultTooLarge and nothing is stored; outside a
// running job it returns ErrNoResult.
func SetResult(ctx context.Context, v any) error {
	job := JobFromContext(ctx)
	if job == nil || job.node == nil {
		return fmt.Errorf("exq: set result: not in a running job: %w", ErrNoResult)
	}
	return job.node.setResult(ctx, job.JID, v)
}

// ParentResult decodes into dst the result stored by parent, a job the workflow job running
// with ctx depends on (named as in its DependsOn). It returns ErrNoResult when that job stored
// none (or it expired), and an error when ctx is not a workflow job's or parent is not one of
// its parents.
func ParentResult(ctx context.Context, parent string, dst any) error {
	job := JobFromContext(ctx)
	if job == nil || job.node == nil || job.wf == "" {
		return fmt.Errorf("exq: parent result %q: not in a running job of a workflow: %w", parent, ErrNoResult)
	}
	jid, ok := flows.ParentJID(job.raw, parent)
	if !ok {
		return fmt.Errorf("exq: parent result: job %q of workflow %s does not depend on %q", job.wfJob, job.wf, parent)
	}
	return job.node.readResult(ctx, jid, dst)
}
