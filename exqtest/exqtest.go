// Package exqtest has test doubles for code that enqueues exq jobs (Exq.Mock's fake and inline
// modes). Both implement exq.Enqueuer, so production code that takes an exq.Enqueuer can be
// tested without Redis:
//
//	fake := exqtest.NewFake()
//	signup(ctx, fake, user)                      // the code under test enqueues
//	jobs := fake.JobsOfClass("MyApp.SendEmail")  // what it enqueued, as exq would write it
//
// Both accept and refuse exactly what a real enqueue does (exq.PrepareJob), so a test cannot
// pass with arguments production would reject, and both honour exq.Unique as Redis does: the
// same token (exq.DefaultUniqueToken unless UniqueOpts.Token is set), the same
// *exq.UniqueConflictError carrying the holder's jid, and a lock that lasts until its release
// point or its expiry. Their clock is the real one plus whatever Advance added, so a test can
// let locks expire without sleeping.
package exqtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/exqgo/exq"
)

var (
	_ exq.Enqueuer = (*Fake)(nil)
	_ exq.Enqueuer = (*Inline)(nil)
)

// Fake records enqueued jobs and runs nothing. It is safe for concurrent use.
//
// Unique jobs: an enqueue whose lock is held records nothing and returns the holder's jid with
// an error matching exq.ErrUniqueConflict, as exq does. Since the Fake runs nothing, the test
// says when a job has run: Complete(jid) releases the lock of an UntilSuccess or UntilStart
// job (what a node does once the job succeeded or died); every lock also expires at its
// UniqueOpts.For, on the Fake's clock (see Advance). Clear forgets jobs and locks.
type Fake struct {
	mu    sync.Mutex
	jobs  []*exq.Job
	locks locks
}

// NewFake returns an empty Fake.
func NewFake() *Fake { return &Fake{locks: newLocks()} }

// record takes job's lock, if any, and records the job; f.mu is held.
func (f *Fake) record(job *exq.Job) (string, error) {
	jid, written, err := f.locks.take(job)
	if written {
		f.jobs = append(f.jobs, job)
	}
	return jid, err
}

func (f *Fake) add(spec exq.JobSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	job, err := exq.PrepareJob(f.locks.now(), spec)
	if err != nil {
		return "", err
	}
	return f.record(job)
}

// Enqueue records a job to run now.
func (f *Fake) Enqueue(_ context.Context, queue, class string, args any, opts ...exq.EnqueueOption) (string, error) {
	if err := named("enqueue", queue, class); err != nil {
		return "", err
	}
	return f.add(exq.JobSpec{Queue: queue, Class: class, Args: args, Options: opts})
}

// EnqueueIn records a job due after d (its EnqueuedAt is the due time, as exq writes it).
func (f *Fake) EnqueueIn(_ context.Context, queue, class string, d time.Duration, args any, opts ...exq.EnqueueOption) (string, error) {
	if err := named("enqueue in", queue, class); err != nil {
		return "", err
	}
	return f.add(exq.JobSpec{Queue: queue, Class: class, Args: args, In: d, Options: opts})
}

// EnqueueAt records a job due at t.
func (f *Fake) EnqueueAt(_ context.Context, queue, class string, t time.Time, args any, opts ...exq.EnqueueOption) (string, error) {
	if t.IsZero() {
		return "", fmt.Errorf("exq: enqueue at: time is zero: %w", exq.ErrInvalidJob)
	}
	if err := named("enqueue at", queue, class); err != nil {
		return "", err
	}
	return f.add(exq.JobSpec{Queue: queue, Class: class, Args: args, At: t, Options: opts})
}

// EnqueueAll records every job of the batch, or none if one is invalid. A unique job whose
// lock is held (also by an earlier job of the same batch) is not recorded: its result carries
// the holder's jid and the conflict, as exq's EnqueueAll reports it.
func (f *Fake) EnqueueAll(_ context.Context, specs []exq.JobSpec) ([]exq.EnqueueResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	jobs, err := prepareAll(f.locks.now(), specs)
	if err != nil {
		return nil, err
	}
	res := make([]exq.EnqueueResult, len(jobs))
	for i, j := range jobs {
		jid, err := f.record(j)
		res[i] = exq.EnqueueResult{JID: jid, Err: err}
	}
	return res, nil
}

// named refuses, in a real enqueue's words, the empty class or queue of Enqueue, EnqueueIn or
// EnqueueAt, which exq.PrepareJob would fill in as a JobSpec's (from a JobArgs Args, and
// "default").
func named(op, queue, class string) error {
	switch {
	case class == "":
		return invalid("exq: " + op + ": class is empty")
	case queue == "":
		return invalid("exq: " + op + ": queue name is empty")
	}
	return nil
}

// invalid is a refusal that matches exq.ErrInvalidJob, worded as exq words it.
type invalid string

func (e invalid) Error() string { return string(e) }

func (e invalid) Is(target error) bool { return target == exq.ErrInvalidJob }

func prepareAll(now time.Time, specs []exq.JobSpec) ([]*exq.Job, error) {
	jobs := make([]*exq.Job, len(specs))
	for i, s := range specs {
		j, err := exq.PrepareJob(now, s)
		if err != nil {
			return nil, fmt.Errorf("exq: enqueue all: job %d: %w", i, err)
		}
		if j.DebounceKey() != "" {
			return nil, invalid(fmt.Sprintf("exq: enqueue all: job %d: Debounce is for Enqueue, not EnqueueAll", i))
		}
		jobs[i] = j
	}
	return jobs, nil
}

// Complete tells the Fake that job jid ran and succeeded (or died): its unique lock is released
// if its mode is UntilSuccess or UntilStart, as a node releases it, so the same job can be
// enqueued again. An UntilExpiry lock stays until it expires (Advance). It reports whether a
// lock was released.
func (f *Fake) Complete(jid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.locks.release(jid, exq.UntilSuccess, exq.UntilStart)
}

// Advance moves the Fake's clock forward by d: locks whose expiry it passes are released, and
// later jobs carry the new time.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locks.offset += d
}

// Jobs returns the recorded jobs in enqueue order.
func (f *Fake) Jobs() []*exq.Job { return f.Filter(func(*exq.Job) bool { return true }) }

// JobsOfClass returns the recorded jobs of class.
func (f *Fake) JobsOfClass(class string) []*exq.Job {
	return f.Filter(func(j *exq.Job) bool { return j.Class == class })
}

// ArgsOf returns the args of the recorded jobs of A's class (A's Class method, on its zero
// value), in enqueue order, each decoded as a typed worker (exq.WorkerFor) decodes it: a test
// of typed code names no class string. A job whose args do not decode into an A is an error
// (an *exq.ArgsDecodeError, naming the job); the args decoded before it are returned with it.
func ArgsOf[A exq.JobArgs](f *Fake) ([]A, error) {
	var zero A
	jobs := f.JobsOfClass(zero.Class())
	out := make([]A, 0, len(jobs))
	for _, j := range jobs {
		var a A
		if err := j.Bind(&a); err != nil {
			return out, fmt.Errorf("exqtest: job %s: %w", j.JID, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// JobsInQueue returns the recorded jobs of queue.
func (f *Fake) JobsInQueue(queue string) []*exq.Job {
	return f.Filter(func(j *exq.Job) bool { return j.Queue == queue })
}

// Filter returns the recorded jobs for which keep is true, in enqueue order.
func (f *Fake) Filter(keep func(*exq.Job) bool) []*exq.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*exq.Job
	for _, j := range f.jobs {
		if keep(j) {
			out = append(out, j)
		}
	}
	return out
}

// Clear forgets the recorded jobs and every unique lock.
func (f *Fake) Clear() {
	f.mu.Lock()
	f.jobs = nil
	f.locks.held = map[string]heldLock{}
	f.mu.Unlock()
}

// Inline runs each job's worker at once, in the caller's goroutine, and returns the worker's
// error (or re-panics its panic) to the caller. Scheduled jobs run at once too. The worker sees
// the job as it would come out of Redis: its args went through JSON. No middleware runs.
//
// Unique jobs: a job whose lock is held does not run; the enqueue returns the holder's jid with
// an error matching exq.ErrUniqueConflict. After a run the lock is released as a node would
// release it: an UntilStart lock before the worker runs; an UntilSuccess lock when the worker
// succeeds, or when it fails with no retries left (MaxRetries 0: the job would die). A failed
// job that would be retried, or a snoozed one, keeps its lock, as it does in Redis while it
// waits in the retry set, until its expiry (see Advance). UntilExpiry locks only expire.
type Inline struct {
	mu      sync.RWMutex
	workers map[string]exq.Worker

	lockMu sync.Mutex
	locks  locks
}

// NewInline returns an Inline that runs workers by class.
func NewInline(workers map[string]exq.Worker) *Inline {
	w := make(map[string]exq.Worker, len(workers))
	for c, wk := range workers {
		w[c] = wk
	}
	return &Inline{workers: w, locks: newLocks()}
}

// Register adds the worker for class. It refuses what a node refuses (an empty class, a nil
// worker, a class that has a worker: exq.ErrAlreadyRegistered), so an Inline is an
// exq.Registrar for exq.AddWorker.
func (in *Inline) Register(class string, w exq.Worker) error {
	if class == "" {
		return errors.New("exqtest: register: class is empty")
	}
	if w == nil {
		return fmt.Errorf("exqtest: register %q: worker is nil", class)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, ok := in.workers[class]; ok {
		return fmt.Errorf("exqtest: register: %w: %q", exq.ErrAlreadyRegistered, class)
	}
	in.workers[class] = w
	return nil
}

// Advance moves the Inline's clock forward by d: locks whose expiry it passes are released,
// and later jobs carry the new time.
func (in *Inline) Advance(d time.Duration) {
	in.lockMu.Lock()
	defer in.lockMu.Unlock()
	in.locks.offset += d
}

func (in *Inline) prepare(spec exq.JobSpec) (*exq.Job, error) {
	in.lockMu.Lock()
	defer in.lockMu.Unlock()
	return exq.PrepareJob(in.locks.now(), spec)
}

// run takes job's lock, runs its worker and releases the lock per its mode.
func (in *Inline) run(ctx context.Context, job *exq.Job) (_ string, err error) {
	in.lockMu.Lock()
	jid, written, err := in.locks.take(job)
	if written {
		in.locks.release(job.JID, exq.UntilStart)
	}
	in.lockMu.Unlock()
	if !written {
		return jid, err
	}
	released := false
	defer func() {
		if released {
			return
		}
		// A panic or an error is a failure: the job dies (and releases) only without retries.
		if p := recover(); p != nil {
			in.releaseAfter(job, false)
			panic(p)
		}
		// Args that do not decode send the job to the dead set at once, whatever its retries.
		in.releaseAfter(job, err == nil || errors.Is(err, exq.ErrArgsDecode))
	}()
	class := job.Class
	if i := strings.IndexByte(class, '/'); i >= 0 {
		class = class[:i]
	}
	in.mu.RLock()
	w := in.workers[class]
	in.mu.RUnlock()
	if w == nil {
		return job.JID, fmt.Errorf("%w %q", exq.ErrUnknownClass, job.Class)
	}
	err = w.Perform(exq.WithJob(ctx, job), job)
	if snooze := new(*exq.SnoozeError); errors.As(err, snooze) {
		released = true // a snoozed job runs again later: it keeps its lock
	}
	return job.JID, err
}

// releaseAfter releases an UntilSuccess lock once the job succeeded or would die (ok: it
// succeeded, or its failure sends it to the dead set at once).
func (in *Inline) releaseAfter(job *exq.Job, ok bool) {
	if !ok && job.MaxRetries > 0 {
		return // it would wait in the retry set, holding its lock
	}
	in.lockMu.Lock()
	in.locks.release(job.JID, exq.UntilSuccess)
	in.lockMu.Unlock()
}

// Enqueue runs the job now.
func (in *Inline) Enqueue(ctx context.Context, queue, class string, args any, opts ...exq.EnqueueOption) (string, error) {
	if err := named("enqueue", queue, class); err != nil {
		return "", err
	}
	job, err := in.prepare(exq.JobSpec{Queue: queue, Class: class, Args: args, Options: opts})
	if err != nil {
		return "", err
	}
	return in.run(ctx, job)
}

// EnqueueIn runs the job now, without waiting for d.
func (in *Inline) EnqueueIn(ctx context.Context, queue, class string, d time.Duration, args any, opts ...exq.EnqueueOption) (string, error) {
	if err := named("enqueue in", queue, class); err != nil {
		return "", err
	}
	job, err := in.prepare(exq.JobSpec{Queue: queue, Class: class, Args: args, In: d, Options: opts})
	if err != nil {
		return "", err
	}
	return in.run(ctx, job)
}

// EnqueueAt runs the job now, without waiting for t.
func (in *Inline) EnqueueAt(ctx context.Context, queue, class string, t time.Time, args any, opts ...exq.EnqueueOption) (string, error) {
	if t.IsZero() {
		return "", fmt.Errorf("exq: enqueue at: time is zero: %w", exq.ErrInvalidJob)
	}
	if err := named("enqueue at", queue, class); err != nil {
		return "", err
	}
	job, err := in.prepare(exq.JobSpec{Queue: queue, Class: class, Args: args, At: t, Options: opts})
	if err != nil {
		return "", err
	}
	return in.run(ctx, job)
}

// EnqueueAll validates the whole batch, then runs the jobs in order. A unique job whose lock is
// held does not run and its result carries the conflict; the first worker error stops the
// batch and is returned with the results so far.
func (in *Inline) EnqueueAll(ctx context.Context, specs []exq.JobSpec) ([]exq.EnqueueResult, error) {
	in.lockMu.Lock()
	jobs, err := prepareAll(in.locks.now(), specs)
	in.lockMu.Unlock()
	if err != nil {
		return nil, err
	}
	res := make([]exq.EnqueueResult, 0, len(jobs))
	for _, j := range jobs {
		jid, err := in.run(ctx, j)
		if errors.Is(err, exq.ErrUniqueConflict) {
			res = append(res, exq.EnqueueResult{JID: jid, Err: err})
			continue
		}
		res = append(res, exq.EnqueueResult{JID: jid})
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// locks is the unique-lock table of a double: what <ns>:unique:<token> keys hold in Redis.
// Its owner guards it.
type locks struct {
	held   map[string]heldLock // by token
	offset time.Duration       // added to the real clock by Advance
}

type heldLock struct {
	jid     string
	until   exq.UniqueUntilMode
	expires time.Time
}

func newLocks() locks { return locks{held: map[string]heldLock{}} }

func (l *locks) now() time.Time { return time.Now().Add(l.offset) }

// uniqueFields are the unique fields of a job document, as exq writes them (WIRE.md §2).
type uniqueFields struct {
	Token     string  `json:"unique_token"`
	Until     string  `json:"unique_until"`
	UnlocksAt float64 `json:"unlocks_at"`
}

// take takes job's lock, as exq's enqueue script does: written reports whether the job is to
// be written (jid is then its own); otherwise jid is the holder's and err the conflict. A lock
// held by the job's own jid means the same job again: it reads as written once, so nothing more
// is written (written false, err nil).
func (l *locks) take(job *exq.Job) (jid string, written bool, err error) {
	var u uniqueFields
	if err := json.Unmarshal([]byte(job.Raw()), &u); err != nil || u.Token == "" {
		return job.JID, true, nil // not unique
	}
	now := l.now()
	if h, ok := l.held[u.Token]; ok && now.Before(h.expires) {
		if h.jid == job.JID {
			return job.JID, false, nil
		}
		return h.jid, false, &exq.UniqueConflictError{JID: h.jid, Token: u.Token}
	}
	sec, frac := math.Modf(u.UnlocksAt)
	l.held[u.Token] = heldLock{jid: job.JID, until: exq.UniqueUntilMode(u.Until), expires: time.Unix(int64(sec), int64(frac*1e9))}
	return job.JID, true, nil
}

// release deletes the lock held by jid if its mode is one of modes (compare-and-delete).
func (l *locks) release(jid string, modes ...exq.UniqueUntilMode) bool {
	for token, h := range l.held {
		if h.jid != jid {
			continue
		}
		for _, m := range modes {
			if h.until == m {
				delete(l.held, token)
				return true
			}
		}
	}
	return false
}
