package wire

import (
	"fmt"
	"time"
)

// CronTick is how a tick is named in a schedule's enqueued set: sidekiq-cron's Time#iso8601 in UTC.
func CronTick(tick time.Time) string { return tick.UTC().Format("2006-01-02T15:04:05Z") }

// CronTimeLayout is sidekiq-cron's last_enqueue_time format.
const CronTimeLayout = "2006-01-02 15:04:05 -0700"

// ParseCronTime reads a last_enqueue_time as sidekiq-cron writes it: "… +0000", or "… UTC"
// after a save by Ruby, or RFC 3339. Empty is the zero time.
func ParseCronTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{CronTimeLayout, "2006-01-02 15:04:05 MST", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("last_enqueue_time %q: not a time", s)
}
