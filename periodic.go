package exq

import (
	"context"
	"log/slog"
	"time"

	"github.com/exqgo/exq/internal/periodic"
	"github.com/exqgo/exq/internal/store"
)

// newPeriodicRunner returns the runner of the schedules (internal/periodic) whose ticks en
// builds, holds and reports as its own enqueues.
func newPeriodicRunner(en *enqueuer, grace, timeout time.Duration, now func() time.Time, log *slog.Logger) *periodic.Runner {
	return periodic.New(periodic.Parts{Store: en.jq, Grace: grace, Reload: time.Second, Timeout: timeout, Now: now, Log: log,
		Build: func(ctx context.Context, at time.Time, rec store.CronRecord, jid string) (periodic.Job, error) {
			b, err := en.buildAt(ctx, at, "periodic "+rec.Name, rec.Queue, rec.Class, rec.Args, time.Time{}, []EnqueueOption{JID(jid)})
			return periodic.Job{JID: b.jid, Doc: b.doc, Finish: b.finish}, err
		},
		Hold:     func(jid string) func() { return en.hold(jid) },
		Enqueued: func(queue, class, jid string) { en.enqueued(queue, class, jid, time.Time{}) }})
}
