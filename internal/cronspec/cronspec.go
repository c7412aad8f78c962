// Package cronspec reads the cron lines of periodic jobs as sidekiq-cron does and computes
// their ticks.
package cronspec

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads cron lines as sidekiq-cron's fugit does: 5 fields, or 6 with seconds first.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule computes the ticks of a spec.
type Schedule struct {
	spec *cron.SpecSchedule // in UTC when wallClock, else in loc
	loc  *time.Location
	// wallClock: the spec names fixed hours, so its ticks are times on the wall clock of loc,
	// each fired once: a time the clocks skip (spring forward) fires when the clocks have moved
	// on by as much, and a time they repeat (fall back) fires the first time only. A spec that
	// runs every hour ticks in real time instead, every hour of the repeated one included.
	wallClock bool
}

// Parse parses a stored cron line (with an optional trailing zone), falling back to zone
// tz ("" for the local zone) when the line names none.
func Parse(line, tz string) (Schedule, error) {
	if strings.TrimSpace(line) != line || line == "" {
		return Schedule{}, fmt.Errorf("spec %q: empty, or spaces around it", line)
	}
	fields := strings.Fields(line)
	loc := time.Local
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return Schedule{}, fmt.Errorf("timezone %q: %w", tz, err)
		}
		loc = l
	}
	if n := len(fields); n > 1 && ZoneLike(fields[n-1]) {
		l, err := time.LoadLocation(fields[n-1])
		if err != nil {
			return Schedule{}, fmt.Errorf("spec %q: time zone %q: %w", line, fields[n-1], err)
		}
		loc, fields = l, fields[:n-1]
	}
	if len(fields) > 6 {
		return Schedule{}, fmt.Errorf("spec %q: %d fields; give 5, or 6 with the seconds first", line, len(fields))
	}
	parsed, err := cronParser.Parse(strings.Join(fields, " "))
	if err != nil {
		return Schedule{}, fmt.Errorf("spec %q: %w", line, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return Schedule{}, fmt.Errorf("spec %q: not a cron line", line)
	}
	const allHours = 1<<24 - 1
	s := Schedule{spec: spec, loc: loc, wallClock: spec.Hour&allHours != allHours}
	if s.wallClock {
		spec.Location = time.UTC
	} else {
		spec.Location = loc
	}
	return s, nil
}

// ZoneLike reports whether a cron field is a time zone name rather than a cron field.
func ZoneLike(f string) bool {
	return f == "UTC" || f == "Local" || strings.Contains(f, "/") && f[0] >= 'A' && f[0] <= 'Z'
}

// Next is the first tick after t.
func (s Schedule) Next(t time.Time) time.Time {
	if !s.wallClock {
		return s.spec.Next(t)
	}
	w := t.In(s.loc)
	wall := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)
	for i := 0; i < 1000; i++ {
		wall = s.spec.Next(wall)
		if wall.IsZero() {
			return time.Time{}
		}
		if at := s.instant(wall); at.After(t) {
			return at
		}
		// A wall time of the repeated hour whose first pass is over: the next one.
	}
	return time.Time{}
}

// instant is when wall time wall (fields in UTC) happens in s.loc: the first of two in a
// repeated hour, and for a time the clocks skip, that time plus the length of the skip.
func (s Schedule) instant(wall time.Time) time.Time {
	at := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, s.loc)
	if w := at.In(s.loc); w.Hour() == wall.Hour() && w.Minute() == wall.Minute() {
		_, first := at.Add(-time.Hour).Zone()
		_, now := at.Zone()
		if first > now {
			// Fall back: at is the second pass (Go does not promise which); the first is earlier.
			if early := at.Add(-time.Duration(first-now) * time.Second); early.In(s.loc).Hour() == wall.Hour() {
				return early
			}
		}
		return at
	}
	// Skipped: Go gave the instant with the offset before the skip; move on by the skip.
	_, before := at.Zone()
	_, after := at.Add(3 * time.Hour).Zone()
	return at.Add(time.Duration(after-before) * time.Second)
}

// Every turns "@every d" into the cron line it stands for, when d divides a minute, an
// hour or a day; other intervals have no cron line sidekiq-cron could read.
func Every(line string) (string, bool, error) {
	rest, ok := strings.CutPrefix(line, "@every ")
	if !ok {
		return line, false, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	if err != nil {
		return "", true, fmt.Errorf("spec %q: %w", line, err)
	}
	switch {
	case d >= time.Second && d < time.Minute && d%time.Second == 0 && time.Minute%d == 0:
		return fmt.Sprintf("*/%d * * * * *", d/time.Second), true, nil
	case d >= time.Minute && d < time.Hour && d%time.Minute == 0 && time.Hour%d == 0:
		return fmt.Sprintf("0 */%d * * * *", d/time.Minute), true, nil
	case d >= time.Hour && d <= 24*time.Hour && d%time.Hour == 0 && (24*time.Hour)%d == 0:
		return fmt.Sprintf("0 0 */%d * * *", d/time.Hour), true, nil
	}
	return "", true, fmt.Errorf("spec %q: the interval must divide a minute, an hour or a day (e.g. 30s, 15m, 6h)", line)
}

// Descriptors are the cron lines of the @ forms, for a Schedule given a Timezone (a zone can
// only follow a cron line).
var Descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
	"@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// Latest is the last tick at or before t (zero when there is none in ten years).
func (s Schedule) Latest(t time.Time) time.Time {
	for back := time.Second; back < 10*366*24*time.Hour; back *= 2 {
		var last time.Time
		for at := s.Next(t.Add(-back)); !at.IsZero() && !at.After(t); at = s.Next(at) {
			last = at
		}
		if !last.IsZero() {
			return last
		}
	}
	return time.Time{}
}
