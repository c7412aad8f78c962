package exq

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/exqgo/exq/internal/cronspec"
	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/periodic"
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

// storedSpec is the cron line exq writes for p: @every turned into the cron line it stands
// for, and Timezone appended when the spec names no zone, so every reader (sidekiq-cron too)
// computes the same ticks.
func (p PeriodicJob) storedSpec() (string, error) {
	line, _, err := cronspec.Every(p.Spec)
	if err != nil || p.Timezone == "" {
		return line, err
	}
	if d, ok := cronspec.Descriptors[line]; ok {
		line = d
	}
	if fields := strings.Fields(line); len(fields) > 0 && !cronspec.ZoneLike(fields[len(fields)-1]) {
		line += " " + p.Timezone
	}
	return line, nil
}

// check validates p and returns its stored spec and parsed schedule. Errors name the field.
func (p PeriodicJob) check() (string, cronspec.Schedule, error) {
	bad := func(field, format string, a ...any) (string, cronspec.Schedule, error) {
		return "", cronspec.Schedule{}, fmt.Errorf("%w %q: %s: %s", ErrInvalidPeriodic, p.Name, field, fmt.Sprintf(format, a...))
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
	if err := names.CheckQueue(p.queue()); err != nil {
		return bad("Queue", "%v", err)
	}
	if _, err := wire.EncodeArgs(p.Args); err != nil {
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
	s, err := cronspec.Parse(line, "")
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

// stored is p as the store saves it at now: line is its stored spec, s its schedule. The
// ticks before now as exq sees them, and as sidekiq-cron does (the latest at or before the
// second before now), are passed along: a poll of either in this second must not fire a tick
// from before.
func (p PeriodicJob) stored(line string, s cronspec.Schedule, now time.Time) (store.CronJob, error) {
	args, err := wire.EncodeArgs(p.Args)
	if err != nil {
		return store.CronJob{}, err
	}
	var prev []string
	for _, at := range []time.Time{now, now.Truncate(time.Second).Add(-time.Second)} {
		if t := s.Latest(at); !t.IsZero() && !slices.Contains(prev, wire.CronTick(t)) {
			prev = append(prev, wire.CronTick(t))
		}
	}
	return store.CronJob{Name: p.Name, Class: p.Class, Queue: p.queue(), Description: p.Description, Spec: line,
		Args: args, Disabled: p.Disabled, Prev: prev}, nil
}
