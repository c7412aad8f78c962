// Package exqtest has test doubles for code that enqueues exq jobs (Exq.Mock's fake and inline
// modes). Both implement exq.Enqueuer, so production code that takes an exq.Enqueuer can be
// tested without Redis:
//
//	fake := exqtest.NewFake()
//	signup(ctx, fake, user)                      // the code under test enqueues
//	jobs := fake.JobsOfClass("MyApp.SendEmail")  // what it enqueued, as exq would write it
//
// Both accept and refuse exactly what a real enqueue does (exq.PrepareJob), so a test cannot
// pass with arguments production would reject.
package exqtest

import (
	"context"
	"fmt"
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
type Fake struct {
	mu   sync.Mutex
	jobs []*exq.Job
}

// NewFake returns an empty Fake.
func NewFake() *Fake { return &Fake{} }

func (f *Fake) add(queue, class string, at time.Time, args any, opts []exq.EnqueueOption) (string, error) {
	job, err := exq.PrepareJob(queue, class, at, args, opts...)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	f.jobs = append(f.jobs, job)
	f.mu.Unlock()
	return job.JID, nil
}

// Enqueue records a job to run now.
func (f *Fake) Enqueue(_ context.Context, queue, class string, args any, opts ...exq.EnqueueOption) (string, error) {
	return f.add(queue, class, time.Time{}, args, opts)
}

// EnqueueIn records a job due after d (its EnqueuedAt is the due time, as exq writes it).
func (f *Fake) EnqueueIn(_ context.Context, queue, class string, d time.Duration, args any, opts ...exq.EnqueueOption) (string, error) {
	return f.add(queue, class, time.Now().Add(d), args, opts)
}

// EnqueueAt records a job due at t.
func (f *Fake) EnqueueAt(_ context.Context, queue, class string, t time.Time, args any, opts ...exq.EnqueueOption) (string, error) {
	if t.IsZero() {
		return "", fmt.Errorf("exq: enqueue at: time is zero: %w", exq.ErrInvalidJob)
	}
	return f.add(queue, class, t, args, opts)
}

// EnqueueAll records every job of the batch, or none if one is invalid. Unique options are
// recorded but never conflict (as in Exq.Mock).
func (f *Fake) EnqueueAll(_ context.Context, specs []exq.JobSpec) ([]exq.EnqueueResult, error) {
	jobs, err := prepareAll(specs)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res := make([]exq.EnqueueResult, len(jobs))
	for i, j := range jobs {
		f.jobs = append(f.jobs, j)
		res[i] = exq.EnqueueResult{JID: j.JID}
	}
	return res, nil
}

func prepareAll(specs []exq.JobSpec) ([]*exq.Job, error) {
	jobs := make([]*exq.Job, len(specs))
	for i, s := range specs {
		if !s.At.IsZero() && s.In != 0 {
			return nil, fmt.Errorf("exq: enqueue all: job %d: both At and In are set: %w", i, exq.ErrInvalidJob)
		}
		at := s.At
		if s.In != 0 {
			at = time.Now().Add(s.In)
		}
		j, err := exq.PrepareJob(s.Queue, s.Class, at, s.Args, s.Options...)
		if err != nil {
			return nil, fmt.Errorf("exq: enqueue all: job %d: %w", i, err)
		}
		jobs[i] = j
	}
	return jobs, nil
}

// Jobs returns the recorded jobs in enqueue order.
func (f *Fake) Jobs() []*exq.Job { return f.Filter(func(*exq.Job) bool { return true }) }

// JobsOfClass returns the recorded jobs of class.
func (f *Fake) JobsOfClass(class string) []*exq.Job {
	return f.Filter(func(j *exq.Job) bool { return j.Class == class })
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

// Clear forgets the recorded jobs.
func (f *Fake) Clear() {
	f.mu.Lock()
	f.jobs = nil
	f.mu.Unlock()
}

// Inline runs each job's worker at once, in the caller's goroutine, and returns the worker's
// error (or re-panics its panic) to the caller. Scheduled jobs run at once too. The worker sees
// the job as it would come out of Redis: its args went through JSON. No middleware runs.
type Inline struct {
	mu      sync.RWMutex
	workers map[string]exq.Worker
}

// NewInline returns an Inline that runs workers by class.
func NewInline(workers map[string]exq.Worker) *Inline {
	w := make(map[string]exq.Worker, len(workers))
	for c, wk := range workers {
		w[c] = wk
	}
	return &Inline{workers: w}
}

// Register adds (or replaces) the worker for class.
func (in *Inline) Register(class string, w exq.Worker) {
	in.mu.Lock()
	in.workers[class] = w
	in.mu.Unlock()
}

func (in *Inline) run(ctx context.Context, job *exq.Job) (string, error) {
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
	return job.JID, w.Perform(exq.WithJob(ctx, job), job)
}

// Enqueue runs the job now.
func (in *Inline) Enqueue(ctx context.Context, queue, class string, args any, opts ...exq.EnqueueOption) (string, error) {
	job, err := exq.PrepareJob(queue, class, time.Time{}, args, opts...)
	if err != nil {
		return "", err
	}
	return in.run(ctx, job)
}

// EnqueueIn runs the job now, without waiting for d.
func (in *Inline) EnqueueIn(ctx context.Context, queue, class string, d time.Duration, args any, opts ...exq.EnqueueOption) (string, error) {
	job, err := exq.PrepareJob(queue, class, time.Now().Add(d), args, opts...)
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
	job, err := exq.PrepareJob(queue, class, t, args, opts...)
	if err != nil {
		return "", err
	}
	return in.run(ctx, job)
}

// EnqueueAll validates the whole batch, then runs the jobs in order; it stops at the first
// worker error and returns it with the results so far.
func (in *Inline) EnqueueAll(ctx context.Context, specs []exq.JobSpec) ([]exq.EnqueueResult, error) {
	jobs, err := prepareAll(specs)
	if err != nil {
		return nil, err
	}
	res := make([]exq.EnqueueResult, 0, len(jobs))
	for _, j := range jobs {
		jid, err := in.run(ctx, j)
		res = append(res, exq.EnqueueResult{JID: jid})
		if err != nil {
			return res, err
		}
	}
	return res, nil
}
