// Package registry maps a node's job classes to their workers, and lets a job whose class has
// none wait for one while registration is open.
package registry

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Registry maps classes to workers. A class is registered once: a second registration is
// refused, never a silent replacement.
type Registry[W comparable] struct {
	mu      sync.RWMutex
	workers map[string]W
	changed chan struct{} // closed (and replaced) at every registration

	// open is closed when registration is over: RegisterGrace has passed since Start, or
	// the application called RegistrationDone. Until then a job whose class has no worker
	// goes back to its queue instead of failing.
	open      chan struct{}
	closeOnce sync.Once
	timer     *time.Timer

	PutBacks atomic.Int64 // jobs that went back to their queue for want of a worker
}

// New builds the registry of a node with the workers given to Start (it keeps the map):
// registration stays open for grace, or is over at once when grace is not positive.
func New[W comparable](workers map[string]W, grace time.Duration) *Registry[W] {
	r := &Registry[W]{workers: workers, changed: make(chan struct{}), open: make(chan struct{})}
	if grace <= 0 {
		r.Done()
	} else {
		// Under mu: the timer may fire (and Done read r.timer) before AfterFunc has returned.
		r.mu.Lock()
		r.timer = time.AfterFunc(grace, r.Done)
		r.mu.Unlock()
	}
	return r
}

// Add registers w for class; false if the class has a worker.
func (r *Registry[W]) Add(class string, w W) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.workers[class]; ok {
		return false
	}
	r.workers[class] = w
	close(r.changed)
	r.changed = make(chan struct{})
	return true
}

// Done ends registration (idempotent).
func (r *Registry[W]) Done() {
	r.closeOnce.Do(func() {
		r.mu.RLock()
		t := r.timer
		r.mu.RUnlock()
		if t != nil {
			t.Stop()
		}
		close(r.open)
	})
}

// Registering reports whether registration is still open.
func (r *Registry[W]) Registering() bool {
	select {
	case <-r.open:
		return false
	default:
		return true
	}
}

// baseClass is the class a worker is registered under: text after a "/" is ignored, as in
// Exq ("Mod/perform").
func baseClass(class string) string {
	if i := strings.IndexByte(class, '/'); i >= 0 {
		return class[:i]
	}
	return class
}

// Lookup finds the worker of class.
func (r *Registry[W]) Lookup(class string) (W, bool) {
	r.mu.RLock()
	w, ok := r.workers[baseClass(class)]
	r.mu.RUnlock()
	return w, ok
}

// Await waits up to wait for a worker of class to be registered, and returns it, or the zero
// W (nil) once the wait is over, registration has ended, or stop is closed.
func (r *Registry[W]) Await(class string, wait time.Duration, stop <-chan struct{}) W {
	var zero W
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		r.mu.RLock()
		w := r.workers[baseClass(class)]
		changed := r.changed
		r.mu.RUnlock()
		if w != zero {
			return w
		}
		select {
		case <-changed:
		case <-r.open:
			w, _ := r.Lookup(class)
			return w
		case <-stop:
			return zero
		case <-t.C:
			return zero
		}
	}
}
