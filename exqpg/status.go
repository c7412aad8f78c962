package exqpg

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Status is the outbox table as a relay sees it.
type Status struct {
	// Backlog is how many committed jobs wait for a relay.
	Backlog int64
	// OldestAge is how long the oldest waiting row has waited, on Postgres's clock; 0 when
	// none waits. Rows with an infinite created_at are left out; an age past 292 years is
	// clamped to the largest Duration.
	OldestAge time.Duration
	// Failed is how many rows a relay set aside (rows it could not read, decode or push,
	// written to the table by hand or by another tool); each keeps its error in the error
	// column.
	Failed int64
}

// Status reads the backlog from Postgres. (It counts the table: cheap for the backlogs a
// healthy outbox has, a scan for a huge one; Run reads it every StatusInterval.)
func (r *Relay) Status(ctx context.Context) (Status, error) {
	var s Status
	var age float64
	if err := r.pool.QueryRow(ctx, r.sql.status).Scan(&s.Backlog, &age, &s.Failed); err != nil {
		return Status{}, fmt.Errorf("exqpg: outbox status: %w", err)
	}
	switch {
	case age >= math.MaxInt64/float64(time.Second):
		s.OldestAge = math.MaxInt64 // a created_at centuries ago: clamped, never wrapped
	case age > 0:
		s.OldestAge = time.Duration(age * float64(time.Second))
	}
	return s, nil
}

// Reporter is a Pusher that can also record the backlog in Redis, for exq's admin API,
// dashboard and `exq outbox status`: *exq.Client and *exq.Exq are.
type Reporter interface {
	ReportOutbox(ctx context.Context, backlog, failed int64, oldestAge time.Duration) error
}

// minReportGap is the least time between two reports that a round asked for (kick): a relay
// that drains a trickle of rows reads the status at most this often besides its interval.
const minReportGap = 200 * time.Millisecond

// report reads the status every StatusInterval, and at most every minReportGap when kicked (a
// round drained a reported backlog or set rows aside), warns past the thresholds and records
// it in Redis when the pusher can. Run writes the last report itself, as it returns.
func (r *Relay) report(ctx context.Context, rep Reporter, kick <-chan struct{}) {
	t := time.NewTicker(r.o.StatusInterval)
	defer t.Stop()
	gap := min(minReportGap, r.o.StatusInterval)
	var last time.Time
	for {
		r.reportOnce(ctx, rep)
		last = time.Now()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
			sleep(ctx, gap-time.Since(last))
			if ctx.Err() != nil {
				return
			}
		}
	}
}

func (r *Relay) reportOnce(ctx context.Context, rep Reporter) {
	s, err := r.Status(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.o.Logger.Warn("exqpg: relay: cannot read the outbox's status", "err", err)
		}
		return
	}
	if (r.o.WarnBacklog >= 0 && s.Backlog > r.o.WarnBacklog) || (r.o.WarnAge >= 0 && s.OldestAge > r.o.WarnAge) {
		r.o.Logger.Warn("exqpg: outbox backlog", "backlog", s.Backlog, "oldest_age", s.OldestAge,
			"warn_backlog", r.o.WarnBacklog, "warn_age", r.o.WarnAge)
	}
	if rep == nil {
		return
	}
	if err := rep.ReportOutbox(ctx, s.Backlog, s.Failed, s.OldestAge); err != nil {
		if ctx.Err() == nil {
			r.o.Logger.Debug("exqpg: relay: cannot report the outbox's status to Redis", "err", err)
		}
		return
	}
	r.reported.Store(s.Backlog)
}
