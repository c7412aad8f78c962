package exq

import (
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// ExpiresIn makes the job expire d after it is due (after the enqueue, or for a scheduled job
// after its time, as Sidekiq Pro's expires_in): a job that has not started by then is not run
// (see ExpiresAt for what happens to it). d must be positive.
func ExpiresIn(d time.Duration) EnqueueOption {
	return optionFunc{fmt.Sprintf("ExpiresIn(%s)", d), func(c *enqueueConfig) error {
		if d <= 0 {
			return fmt.Errorf("ExpiresIn must be positive, got %s", d)
		}
		c.expiresIn, c.expiresAt = d, time.Time{}
		return nil
	}}
}

// ExpiresAt makes the job expire at t: a job that has not started by then is not run. The job
// carries it as "expires_at" (float seconds, the field Sidekiq Pro's expiring jobs write and
// read, so a Sidekiq Pro node with expiry honours it too). A node judges it by the Redis
// server's clock when it fetches the job, before every run, retries included (as Sidekiq Pro:
// the expiry is the job's, whenever it would run). An expired job is counted (API.ExpiredJobs),
// reported (JobExpired), and dropped, or with Options.KeepExpiredJobs moved to the dead set
// with error_class "exq.Expired". Dropped, it counts as a success for its batch or workflow
// (as Sidekiq Pro's batches count it); kept dead, as a death. t must be after the enqueue
// (the Redis server's clock), after a scheduled job's time, and not after year 9999.
func ExpiresAt(t time.Time) EnqueueOption {
	return optionFunc{fmt.Sprintf("ExpiresAt(%s)", t.UTC().Format(time.RFC3339Nano)), func(c *enqueueConfig) error {
		if t.IsZero() {
			return fmt.Errorf("ExpiresAt is the zero time")
		}
		c.expiresIn, c.expiresAt = 0, t
		return nil
	}}
}

// resolveExpiry is the expiry of a job enqueued at now (the Redis server's clock) and due at
// due (zero: at once), given ExpiresIn's in or ExpiresAt's at (the last option given wins).
func resolveExpiry(in time.Duration, at, now, due time.Time) (time.Time, error) {
	base := now
	if !due.IsZero() {
		base = due
	}
	if in > 0 {
		at = base.Add(in)
	}
	switch {
	case at.After(wire.LatestTime):
		return time.Time{}, fmt.Errorf("expiry %s is after year 9999, the latest exq writes", at.UTC().Format(time.RFC3339))
	case !at.After(now):
		return time.Time{}, fmt.Errorf("expiry %s is not after now (%s by the Redis server's clock)",
			at.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	case !due.IsZero() && !at.After(due):
		return time.Time{}, fmt.Errorf("expiry %s is not after the job's time %s: it would never run",
			at.UTC().Format(time.RFC3339Nano), due.UTC().Format(time.RFC3339Nano))
	}
	return at, nil
}

// ExpiredErrorClass is the error_class of a job moved to the dead set because it expired
// before it started (Options.KeepExpiredJobs).
const ExpiredErrorClass = "exq.Expired"
