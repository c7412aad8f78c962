package exq

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// PeriodicJob is a schedule: a job of Class with Args goes to Queue at every tick of Spec,
// exactly once per tick however many nodes run (docs/queues.md, "Periodic jobs"). Schedules live in
// Redis in sidekiq-cron 1.x's layout, so Sidekiq processes running sidekiq-cron share them.
type PeriodicJob struct {
	// Name identifies the schedule in the namespace. It may not contain "/" or "$" (Sidekiq
	// Web could not reach it) nor end in ":enqueued" or ":jid_history".
	Name string `json:"name"`
	// Spec is when it runs: a cron line of 5 fields (minute hour day month weekday) or 6 with
	// the seconds first, with an optional time zone name at the end ("0 9 * * 1-5
	// Europe/Paris"); or @yearly, @monthly, @weekly, @daily, @midnight, @hourly; or "@every
	// 30s" where the interval divides a minute, an hour or a day (stored as the cron line it
	// stands for, "*/30 * * * * *", so that sidekiq-cron reads it too).
	Spec string `json:"spec"`
	// Queue the jobs go to. Default "default".
	Queue string `json:"queue"`
	// Class is the worker class of the jobs.
	Class string `json:"class"`
	// Args must encode to a JSON array; nil is the empty list.
	Args any `json:"args,omitempty"`
	// Timezone is an IANA zone name ("America/New_York") the Spec's times are in, when the
	// Spec names none. Default: the process's local zone (TZ), which is also sidekiq-cron's.
	Timezone string `json:"timezone,omitempty"`
	// Description is shown by Sidekiq Web's Cron tab.
	Description string `json:"description,omitempty"`
	// Disabled creates the schedule disabled. It applies only when the schedule is new: an
	// existing schedule keeps the status it has in Redis (enable and disable it with the API,
	// the CLI or Sidekiq Web).
	Disabled bool `json:"disabled,omitempty"`

	classErr error // PeriodicArgs could not read the class
}

// PeriodicArgs is the PeriodicJob named name that enqueues args, a type that names its class,
// at every tick of spec: Class is args.Class(), Queue args' Queue method ("default" without
// one), and Args the one-element list EnqueueArgs writes ([{"kind":"nightly"}]). Set the other
// fields (Timezone, Description, Queue to override) on the result:
//
//	nightly := exq.PeriodicArgs("nightly-report", "0 3 * * *", Report{Kind: "nightly"})
//	nightly.Timezone = "Europe/Paris"
//	exq.Options{Periodic: []exq.PeriodicJob{nightly}}
//
// A Class method that panics makes the schedule fail its checks (ErrInvalidPeriodic naming
// Class) where it is used.
func PeriodicArgs[A JobArgs](name, spec string, args A) PeriodicJob {
	queue, class, list, _, err := argsJob("periodic", args, nil)
	return PeriodicJob{Name: name, Spec: spec, Queue: queue, Class: class, Args: list, classErr: err}
}

// DefaultPeriodicGrace is how late a tick may still be enqueued (Options.PeriodicGrace): a
// tick missed because no node ran is enqueued when a node starts within this long after it.
// It is sidekiq-cron's own limit.
const DefaultPeriodicGrace = time.Minute

// cronParser reads cron lines as sidekiq-cron's fugit does: 5 fields, or 6 with seconds first.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// schedule computes the ticks of a spec.
type schedule struct {
	spec *cron.SpecSchedule // in UTC when wallClock, else in loc
	loc  *time.Location
	// wallClock: the spec names fixed hours, so its ticks are times on the wall clock of loc,
	// each fired once: a time the clocks skip (spring forward) fires when the clocks have moved
	// on by as much, and a time they repeat (fall back) fires the first time only. A spec that
	// runs every hour ticks in real time instead, every hour of the repeated one included.
	wallClock bool
}

// parseSpec parses a stored cron line (with an optional trailing zone), falling back to zone
// tz ("" for the local zone) when the line names none.
func parseSpec(line, tz string) (schedule, error) {
	if strings.TrimSpace(line) != line || line == "" {
		return schedule{}, fmt.Errorf("spec %q: empty, or spaces around it", line)
	}
	fields := strings.Fields(line)
	loc := time.Local
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return schedule{}, fmt.Errorf("timezone %q: %w", tz, err)
		}
		loc = l
	}
	if n := len(fields); n > 1 && zoneLike(fields[n-1]) {
		l, err := time.LoadLocation(fields[n-1])
		if err != nil {
			return schedule{}, fmt.Errorf("spec %q: time zone %q: %w", line, fields[n-1], err)
		}
		loc, fields = l, fields[:n-1]
	}
	if len(fields) > 6 {
		return schedule{}, fmt.Errorf("spec %q: %d fields; give 5, or 6 with the seconds first", line, len(fields))
	}
	parsed, err := cronParser.Parse(strings.Join(fields, " "))
	if err != nil {
		return schedule{}, fmt.Errorf("spec %q: %w", line, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return schedule{}, fmt.Errorf("spec %q: not a cron line", line)
	}
	const allHours = 1<<24 - 1
	s := schedule{spec: spec, loc: loc, wallClock: spec.Hour&allHours != allHours}
	if s.wallClock {
		spec.Location = time.UTC
	} else {
		spec.Location = loc
	}
	return s, nil
}

// zoneLike reports whether a cron field is a time zone name rather than a cron field.
func zoneLike(f string) bool {
	return f == "UTC" || f == "Local" || strings.Contains(f, "/") && f[0] >= 'A' && f[0] <= 'Z'
}

// next is the first tick after t.
func (s schedule) next(t time.Time) time.Time {
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
func (s schedule) instant(wall time.Time) time.Time {
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

// everySpec turns "@every d" into the cron line it stands for, when d divides a minute, an
// hour or a day; other intervals have no cron line sidekiq-cron could read.
func everySpec(line string) (string, bool, error) {
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

// descriptors are the cron lines of the @ forms, for a schedule given a Timezone (a zone can
// only follow a cron line).
var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
	"@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// storedSpec is the cron line exq writes for p: @every turned into the cron line it stands
// for, and Timezone appended when the spec names no zone, so every reader (sidekiq-cron too)
// computes the same ticks.
func (p PeriodicJob) storedSpec() (string, error) {
	line, _, err := everySpec(p.Spec)
	if err != nil || p.Timezone == "" {
		return line, err
	}
	if d, ok := descriptors[line]; ok {
		line = d
	}
	if fields := strings.Fields(line); len(fields) > 0 && !zoneLike(fields[len(fields)-1]) {
		line += " " + p.Timezone
	}
	return line, nil
}

// check validates p and returns its stored spec and parsed schedule. Errors name the field.
func (p PeriodicJob) check() (string, schedule, error) {
	bad := func(field, format string, a ...any) (string, schedule, error) {
		return "", schedule{}, fmt.Errorf("%w %q: %s: %s", ErrInvalidPeriodic, p.Name, field, fmt.Sprintf(format, a...))
	}
	switch {
	case p.Name == "":
		return bad("Name", "is empty")
	case strings.ContainsAny(p.Name, "/$"):
		return bad("Name", `must not contain "/" or "$" (Sidekiq Web could not reach it)`)
	case strings.HasSuffix(p.Name, ":enqueued") || strings.HasSuffix(p.Name, ":jid_history"):
		return bad("Name", "must not end in :enqueued or :jid_history (the keys of another schedule)")
	case p.classErr != nil:
		return bad("Class", "%v", p.classErr)
	case p.Class == "":
		return bad("Class", "is empty")
	}
	if err := checkQueueName(p.queue()); err != nil {
		return bad("Queue", "%v", err)
	}
	if _, err := encodeArgs(p.Args); err != nil {
		return bad("Args", "%v", err)
	}
	line, err := p.storedSpec()
	if err != nil {
		return bad("Spec", "%v", err)
	}
	if p.Timezone != "" {
		if _, err := time.LoadLocation(p.Timezone); err != nil {
			return bad("Timezone", "%v", err)
		}
	}
	s, err := parseSpec(line, "")
	if err != nil {
		return bad("Spec", "%v", err)
	}
	return line, s, nil
}

func (p PeriodicJob) queue() string {
	if p.Queue == "" {
		return DefaultQueue
	}
	return p.Queue
}

// tickJID is the jid of schedule name's job for tick: the same on every node, so a tick is one
// job whoever enqueues it.
func tickJID(name string, tick time.Time) string {
	sum := sha1.Sum([]byte(name + "\x00" + wire.CronTick(tick)))
	return hex.EncodeToString(sum[:12])
}

// stored is p as the store saves it at now: line is its stored spec, s its schedule. The
// ticks before now as exq sees them, and as sidekiq-cron does (the latest at or before the
// second before now), are passed along: a poll of either in this second must not fire a tick
// from before.
func (p PeriodicJob) stored(line string, s schedule, now time.Time) (store.CronJob, error) {
	args, err := encodeArgs(p.Args)
	if err != nil {
		return store.CronJob{}, err
	}
	var prev []string
	for _, at := range []time.Time{now, now.Truncate(time.Second).Add(-time.Second)} {
		if t := s.latest(at); !t.IsZero() && !slices.Contains(prev, wire.CronTick(t)) {
			prev = append(prev, wire.CronTick(t))
		}
	}
	return store.CronJob{Name: p.Name, Class: p.Class, Queue: p.queue(), Description: p.Description, Spec: line,
		Args: args, Disabled: p.Disabled, Prev: prev}, nil
}

// latest is the last tick at or before t (zero when there is none in ten years).
func (s schedule) latest(t time.Time) time.Time {
	for back := time.Second; back < 10*366*24*time.Hour; back *= 2 {
		var last time.Time
		for at := s.next(t.Add(-back)); !at.IsZero() && !at.After(t); at = s.next(at) {
			last = at
		}
		if !last.IsZero() {
			return last
		}
	}
	return time.Time{}
}
