package exq

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// registry maps classes to workers. A class is registered once: a second registration is
// ErrAlreadyRegistered, never a silent replacement.
type registry struct {
	mu      sync.RWMutex
	workers map[string]Worker
	changed chan struct{} // closed (and replaced) at every registration

	// open is closed when registration is over: RegisterGrace has passed since Start, or
	// the application called RegistrationDone. Until then a job whose class has no worker
	// goes back to its queue instead of failing.
	open      chan struct{}
	closeOnce sync.Once
	timer     *time.Timer

	putBacks atomic.Int64 // jobs that went back to their queue for want of a worker
}

// newRegistry builds the registry of a node from its validated Options: Workers, then
// Register (withDefaults has refused duplicates already).
func newRegistry(ws map[string]Worker, regs []Registration, grace time.Duration) *registry {
	r := &registry{workers: make(map[string]Worker, len(ws)+len(regs)), changed: make(chan struct{}), open: make(chan struct{})}
	for c, w := range ws {
		r.workers[c] = w
	}
	for _, reg := range regs {
		r.workers[reg.Class] = reg.Worker
	}
	if grace <= 0 {
		r.done()
	} else {
		r.timer = time.AfterFunc(grace, r.done)
	}
	return r
}

// add registers w for class; ErrAlreadyRegistered if the class has a worker.
func (r *registry) add(class string, w Worker) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.workers[class]; ok {
		return fmt.Errorf("%w: %q", ErrAlreadyRegistered, class)
	}
	r.workers[class] = w
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

// done ends registration (idempotent).
func (r *registry) done() {
	r.closeOnce.Do(func() {
		if r.timer != nil {
			r.timer.Stop()
		}
		close(r.open)
	})
}

// registering reports whether registration is still open.
func (r *registry) registering() bool {
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

// lookup finds the worker of class.
func (r *registry) lookup(class string) (Worker, bool) {
	r.mu.RLock()
	w, ok := r.workers[baseClass(class)]
	r.mu.RUnlock()
	return w, ok
}

// await waits up to wait for a worker of class to be registered, and returns it, or nil once
// the wait is over, registration has ended, or stop is closed.
func (r *registry) await(class string, wait time.Duration, stop <-chan struct{}) Worker {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		r.mu.RLock()
		w := r.workers[baseClass(class)]
		changed := r.changed
		r.mu.RUnlock()
		if w != nil {
			return w
		}
		select {
		case <-changed:
		case <-r.open:
			w, _ := r.lookup(class)
			return w
		case <-stop:
			return nil
		case <-t.C:
			return nil
		}
	}
}
