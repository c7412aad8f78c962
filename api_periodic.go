package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/exqgo/exq/internal/cronspec"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/textsafe"
	"github.com/exqgo/exq/internal/wire"
)

// PeriodicState is a periodic job as Redis holds it (whoever wrote it: exq or sidekiq-cron),
// with its last and next enqueue.
type PeriodicState struct {
	Name        string          `json:"name"`
	Spec        string          `json:"spec"` // the stored cron line, zone included
	Queue       string          `json:"queue"`
	Class       string          `json:"class"`
	Args        json.RawMessage `json:"args"`
	Description string          `json:"description,omitempty"`
	Enabled     bool            `json:"enabled"`
	// LastEnqueued is when its job was last enqueued (a tick, or Enqueue Now); zero if never.
	LastEnqueued time.Time `json:"last_enqueued"`
	// Next is its next tick; zero when disabled or when exq cannot read the spec.
	Next time.Time `json:"next"`
	// Problem says what exq cannot read in a schedule another program wrote (a spec only
	// fugit knows, a broken field); exq does not enqueue such a schedule. "" when none.
	Problem string `json:"problem,omitempty"`
}

// PeriodicRun is one enqueue of a periodic job, from its history (the last 10 are kept).
type PeriodicRun struct {
	JID      string    `json:"jid"`
	Enqueued time.Time `json:"enqueued"`
}

// MarshalJSON writes s as its field tags say, with a time RFC 3339 cannot write (a stored year
// past 9999) as null: time.Time would fail the whole document.
func (s PeriodicState) MarshalJSON() ([]byte, error) {
	type plain PeriodicState
	return json.Marshal(struct {
		plain
		LastEnqueued textsafe.Time `json:"last_enqueued"`
		Next         textsafe.Time `json:"next"`
	}{plain(s), textsafe.Time{Time: s.LastEnqueued}, textsafe.Time{Time: s.Next}})
}

// MarshalJSON writes r as its field tags say, with a time RFC 3339 cannot write as null.
func (r PeriodicRun) MarshalJSON() ([]byte, error) {
	type plain PeriodicRun
	return json.Marshal(struct {
		plain
		Enqueued textsafe.Time `json:"enqueued"`
	}{plain(r), textsafe.Time{Time: r.Enqueued}})
}

// PeriodicJobs lists every periodic job of the namespace, sorted by name.
func (a *API) PeriodicJobs(ctx context.Context) ([]PeriodicState, error) {
	recs, err := a.jq.LoadCron(ctx)
	if err != nil {
		return nil, fmt.Errorf("exq: periodic jobs: %w", err)
	}
	now, err := a.now(ctx)
	if err != nil {
		return nil, fmt.Errorf("exq: periodic jobs: %w", err)
	}
	out := make([]PeriodicState, len(recs))
	for i, r := range recs {
		out[i] = periodicState(r, now)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// PeriodicJob reads one periodic job; ErrPeriodicNotFound when there is none of that name.
func (a *API) PeriodicJob(ctx context.Context, name string) (PeriodicState, error) {
	r, ok, err := a.jq.CronRecordOf(ctx, name)
	switch {
	case err != nil:
		return PeriodicState{}, fmt.Errorf("exq: periodic job %q: %w", name, err)
	case !ok:
		return PeriodicState{}, fmt.Errorf("%w: %q", ErrPeriodicNotFound, name)
	}
	now, err := a.now(ctx)
	if err != nil {
		return PeriodicState{}, fmt.Errorf("exq: periodic job %q: %w", name, err)
	}
	return periodicState(r, now), nil
}

func periodicState(r store.CronRecord, now time.Time) PeriodicState {
	st := PeriodicState{Name: r.Name, Spec: r.Spec, Queue: r.Queue, Class: r.Class, Args: r.Args, Description: r.Description,
		Enabled: r.Enabled, LastEnqueued: r.LastEnqueue, Problem: r.Problem}
	s, err := cronspec.Parse(r.Spec, "")
	switch {
	case err != nil && st.Problem == "":
		st.Problem = err.Error()
	case err == nil && r.Enabled:
		st.Next = s.Next(now)
	}
	return st
}

// AddPeriodic creates a periodic job (enabled unless p.Disabled); every node of the namespace
// enqueues it from its next tick on. ErrPeriodicExists when the name is taken; errors wrapping
// ErrInvalidPeriodic name the field.
func (a *API) AddPeriodic(ctx context.Context, p PeriodicJob) error {
	return a.savePeriodic(ctx, p, store.CronCreate)
}

// UpdatePeriodic changes an existing periodic job's spec, queue, class, args and description;
// its status and history stay (p.Disabled is not read). ErrPeriodicNotFound when there is none.
func (a *API) UpdatePeriodic(ctx context.Context, p PeriodicJob) error {
	return a.savePeriodic(ctx, p, store.CronUpdate)
}

func (a *API) savePeriodic(ctx context.Context, p PeriodicJob, mode string) error {
	line, sched, err := p.check()
	if err != nil {
		return err
	}
	now, err := a.now(ctx)
	if err != nil {
		return fmt.Errorf("exq: %s periodic job %q: %w", mode, p.Name, err)
	}
	stored, err := p.stored(line, sched, now)
	if err != nil {
		return fmt.Errorf("exq: %s periodic job %q: %w", mode, p.Name, err)
	}
	n, err := a.jq.SaveCron(ctx, stored, mode, now)
	switch {
	case err != nil:
		return fmt.Errorf("exq: %s periodic job %q: %w", mode, p.Name, err)
	case n == -1:
		return fmt.Errorf("%w: %q", ErrPeriodicNotFound, p.Name)
	case n == -2:
		return fmt.Errorf("%w: %q", ErrPeriodicExists, p.Name)
	}
	return nil
}

// EnablePeriodic lets the nodes enqueue periodic job name again, from its next tick on.
func (a *API) EnablePeriodic(ctx context.Context, name string) error {
	return a.setPeriodicStatus(ctx, name, "enabled")
}

// DisablePeriodic stops every node (and sidekiq-cron) from enqueueing periodic job name; the
// status is read at every tick, so no tick after DisablePeriodic returns is enqueued.
func (a *API) DisablePeriodic(ctx context.Context, name string) error {
	return a.setPeriodicStatus(ctx, name, "disabled")
}

func (a *API) setPeriodicStatus(ctx context.Context, name, status string) error {
	ok, err := a.jq.SetCronStatus(ctx, name, status)
	switch {
	case err != nil:
		return fmt.Errorf("exq: set periodic job %q %s: %w", name, status, err)
	case !ok:
		return fmt.Errorf("%w: %q", ErrPeriodicNotFound, name)
	}
	return nil
}

// DeletePeriodic removes periodic job name, its enqueued ticks and its history. A node that
// still lists it in Options.Periodic creates it again when it starts.
func (a *API) DeletePeriodic(ctx context.Context, name string) error {
	ok, err := a.jq.DeleteCron(ctx, name)
	switch {
	case err != nil:
		return fmt.Errorf("exq: delete periodic job %q: %w", name, err)
	case !ok:
		return fmt.Errorf("%w: %q", ErrPeriodicNotFound, name)
	}
	return nil
}

// EnqueuePeriodicNow enqueues periodic job name's job now, outside its ticks (Sidekiq Web's
// "Enqueue Now"), enabled or not, and returns the jid. Its ticks are not affected.
func (a *API) EnqueuePeriodicNow(ctx context.Context, name string) (string, error) {
	r, ok, err := a.jq.CronRecordOf(ctx, name)
	switch {
	case err != nil:
		return "", fmt.Errorf("exq: enqueue periodic job %q: %w", name, err)
	case !ok:
		return "", fmt.Errorf("%w: %q", ErrPeriodicNotFound, name)
	case r.Problem != "":
		return "", fmt.Errorf("exq: enqueue periodic job %q: %s", name, r.Problem)
	}
	now, err := a.now(ctx)
	if err != nil {
		return "", fmt.Errorf("exq: enqueue periodic job %q: %w", name, err)
	}
	en := &enqueuer{jq: a.jq, now: a.clock.Now, maxRetries: DefaultMaxRetries}
	b, err := en.buildAt(ctx, now, "enqueue periodic "+name, r.Queue, r.Class, r.Args, time.Time{}, nil)
	if err != nil {
		return "", err
	}
	if ok, err = a.jq.CronEnqueue(ctx, name, r.Queue, b.jid, b.doc, time.Time{}, now, store.CronClaim{}); err != nil {
		return "", fmt.Errorf("exq: enqueue periodic job %q: %w", name, err)
	} else if !ok {
		return "", fmt.Errorf("%w: %q", ErrPeriodicNotFound, name) // deleted meanwhile
	}
	return b.jid, nil
}

// PeriodicHistory lists the last enqueues of periodic job name, newest first.
func (a *API) PeriodicHistory(ctx context.Context, name string) ([]PeriodicRun, error) {
	raws, err := a.jq.CronHistory(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("exq: periodic job %q history: %w", name, err)
	}
	out := make([]PeriodicRun, 0, len(raws))
	for _, raw := range raws {
		var e struct {
			JID      string `json:"jid"`
			Enqueued string `json:"enqueued"`
		}
		if json.Unmarshal([]byte(raw), &e) != nil {
			continue
		}
		t, _ := wire.ParseCronTime(e.Enqueued)
		out = append(out, PeriodicRun{JID: e.JID, Enqueued: t})
	}
	return out, nil
}
