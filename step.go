package exq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of durable steps (Step).
const (
	// MaxStepBytes is the largest result, as JSON, a step may save; a larger one is refused
	// with ErrStepTooLarge. Every later run of the job reads it back.
	MaxStepBytes = 256 << 10
	// MaxSteps is how many steps one job may save; a new step past it is refused with
	// ErrTooManySteps before its function runs. (Steps of one job saved at the same time,
	// from goroutines of its own, may pass it by a few.)
	MaxSteps = 1000
	// MaxStepName is the longest step name, in bytes.
	MaxStepName = 200
	// DefaultStepTTL is how long a job's steps are kept once it has succeeded (Options.StepTTL).
	DefaultStepTTL = 7 * 24 * time.Hour
)

// Step runs fn once for the job running with ctx and saves its result under the job, by name:
// a later run of the same job (a retry, a rescue after its node died, a run handed back at
// shutdown) gets the saved result back without calling fn again. It makes a job of several
// side effects (charge the card, then send the receipt) safe to retry from the middle.
//
//	charge, err := exq.Step(ctx, "charge", func(ctx context.Context) (string, error) {
//		return payments.Charge(ctx, order)
//	})
//
// What is once and what is at least once:
//   - A result saved is never computed again for this job: every later run, on any node, and
//     every later call of Step with the same name in the same run returns it (decoded from
//     its JSON: T must survive encoding/json, as TypedResult's must).
//   - fn runs again when no result was saved: fn returned an error (an error is never saved:
//     the step runs again on the job's next attempt), the run was killed inside fn or before
//     the save reached Redis, or the save failed (Step then returns that error, and the job
//     fails and retries as usual). So fn runs at least once, and more than once only if its
//     run ended before its result was saved: make it idempotent, or give it an idempotency key
//     (the job's JID and the step's name).
//   - A save whose reply was lost is tried again and finds the result saved: the first save
//     wins, so two runs of one job at the same time (a rescued copy beside a node that came
//     back) both go on with the one result saved first.
//
// Each new step costs two Redis round trips (the read before fn, the save after), a saved one
// one; a job that never calls Step costs none. The steps live in one hash per job,
// <ns>:steps:<jid>, until the job ends: StepTTL (Options.StepTTL) after it succeeds, as long as
// the dead job is kept (Options.DeadTimeout) when it dies, so that a dead job retried from the
// dead set skips the steps it had done. A run that saves steps keeps them for at least StepTTL
// after its last save, and a retry until StepTTL past its due time. API.Steps, `exq job` and the
// job's dashboard page show them.
//
// name must be 1 to MaxStepName bytes of UTF-8 with no control character (ErrInvalidStep);
// the result at most MaxStepBytes of JSON (ErrStepTooLarge, and it is not saved); a job saves at
// most MaxSteps steps (ErrTooManySteps). Outside a job Step returns ErrInvalidStep; in a job
// given to a worker outside a node (WithJob, exqtest) there is nowhere to save, and fn simply
// runs each time.
func Step[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := checkStepName(name); err != nil {
		return zero, fmt.Errorf("exq: step %q: %w: %s", name, ErrInvalidStep, err)
	}
	job := JobFromContext(ctx)
	if job == nil {
		return zero, fmt.Errorf("exq: step %q: not in a job: %w", name, ErrInvalidStep)
	}
	s := job.steps
	if s == nil {
		return fn(ctx)
	}
	if job.stepsUsed != nil {
		job.stepsUsed.Store(true)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	saved, ok, n, err := s.store.Step(rctx, job.JID, name)
	cancel()
	switch {
	case err != nil:
		return zero, fmt.Errorf("exq: step %q: read the saved result: %w", name, err)
	case ok:
		return decodeStep[T](name, saved)
	case n >= MaxSteps:
		return zero, fmt.Errorf("exq: step %q: the job has saved %d steps: %w (%d)", name, n, ErrTooManySteps, MaxSteps)
	}
	v, err := fn(ctx)
	if err != nil {
		return v, err // not saved: the step runs again on the next attempt
	}
	b, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("exq: step %q: encode the result: %w", name, err)
	}
	if len(b) > MaxStepBytes {
		return zero, fmt.Errorf("exq: step %q: %w: %d bytes of JSON, more than MaxStepBytes (%d)", name, ErrStepTooLarge, len(b), MaxStepBytes)
	}
	stood, err := s.save(ctx, job.JID, name, b)
	if err != nil {
		return zero, fmt.Errorf("exq: step %q: save the result: %w", name, err)
	}
	if !bytes.Equal(stood, b) {
		// Another run of this job saved first: go on with its result, as every later run will.
		return decodeStep[T](name, stood)
	}
	return v, nil
}

// decodeStep decodes a saved step's result.
func decodeStep[T any](name string, b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("exq: step %q: decode the saved result: %w", name, err)
	}
	return v, nil
}

// checkStepName says what is wrong with a step name, or nil.
func checkStepName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the name is empty")
	case len(name) > MaxStepName:
		return fmt.Errorf("the name is %d bytes, more than MaxStepName (%d)", len(name), MaxStepName)
	case !utf8.ValidString(name):
		return fmt.Errorf("the name is not UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("the name holds the control character %U", r)
		}
	}
	return nil
}

// stepStore is what steps and expired jobs write (internal/store): *store.Store.
type stepStore interface {
	Step(ctx context.Context, jid, name string) (val []byte, ok bool, saved int64, err error)
	SaveStep(ctx context.Context, jid, name string, val []byte, ttl time.Duration) ([]byte, error)
	ExpireSteps(ctx context.Context, jid string, ttl time.Duration) error
	CountExpired(ctx context.Context) error
}

// stepConfig is a node's settings for its jobs' steps, shared by every run (no allocation
// per job).
type stepConfig struct {
	store   stepStore
	ttl     time.Duration // Options.StepTTL
	timeout time.Duration // Options.RedisTimeout, per attempt
}

// stepSaveAttempts bounds the tries of one save: each one is safe to repeat (the first save
// wins), so a lost reply is mended by the next.
const stepSaveAttempts = 3

// save saves a step's result, trying again while Redis fails, and returns the result that
// stands (this one or one saved before).
func (s *stepConfig) save(ctx context.Context, jid, name string, b []byte) (stood []byte, err error) {
	for attempt := 0; attempt < stepSaveAttempts; attempt++ {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		stood, err = s.store.SaveStep(wctx, jid, name, b, s.ttl)
		cancel()
		if err == nil {
			return stood, nil
		}
	}
	return nil, err
}

// end sets how long the steps of a job that called Step in this run are kept, once the run's
// outcome out is stored (now is the Redis server's clock): StepTTL after a success, until
// StepTTL past a retry's due time, as long as the dead job (deadTimeout) after a death. A run
// that stored no outcome (handed back, rescued, left in the backup list) leaves them as they
// are: the job runs again. A job that did not call Step costs nothing here.
func (s *stepConfig) end(job *Job, out outcome, now func() time.Time, deadTimeout time.Duration, log *slog.Logger) {
	if s == nil || job.stepsUsed == nil || !job.stepsUsed.Load() {
		return
	}
	var ttl time.Duration
	switch out.name {
	case "done":
		ttl = s.ttl
	case "retry", "snoozed":
		ttl = max(out.at.Sub(now()), 0) + s.ttl
	case "dead":
		ttl = max(deadTimeout, s.ttl)
	default:
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.store.ExpireSteps(ctx, job.JID, ttl); err != nil {
		log.Warn("exq: could not set how long a job's steps are kept; they expire StepTTL after their last save",
			"class", job.Class, "jid", job.JID, "error", err)
	}
}
