// Package runctx is the context of one job's run. It costs nothing until something waits on
// it: most workers never call Done, and a node makes one such context per job, so the
// context.WithCancelCause it stands for (a context, its cancel closure, and the close of its
// channel at the end of every run) is made only when Done is first called, or Value is asked
// for something after it was cancelled. Until then Cancel only records the cause.
package runctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Ctx is a cancellable context with no deadline and one value. Its zero value is ready, and
// it must not be copied after first use (embed it in what owns the run).
type Ctx struct {
	key, val any // the one value it carries (Set), before it is handed out

	mu       sync.Mutex
	inner    context.Context // made on first need; Background's cancellable child
	cancel   context.CancelCauseFunc
	cause    error       // the first Cancel's cause
	canceled atomic.Bool // Cancel was called; set under mu, read without it by Cause
}

// Set makes Value(key) return val. Call it before the context is handed to anyone.
func (c *Ctx) Set(key, val any) { c.key, c.val = key, val }

// Deadline reports none: a run has no deadline of its own.
func (c *Ctx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel closed once the context is cancelled.
func (c *Ctx) Done() <-chan struct{} { return c.made().Done() }

// Err is nil until Cancel, then context.Canceled.
func (c *Ctx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner != nil {
		return c.inner.Err()
	}
	if c.canceled.Load() {
		return context.Canceled
	}
	return nil
}

// Value returns the value Set for key. Other keys find nothing while the context is neither
// waited on nor cancelled (its parent is Background); after that they are the inner context's,
// so that context.Cause and the contexts derived from this one see its cancellation.
func (c *Ctx) Value(key any) any {
	if c.key != nil && key == c.key {
		return c.val
	}
	c.mu.Lock()
	if c.inner == nil && !c.canceled.Load() {
		c.mu.Unlock()
		return nil
	}
	inner := c.makeLocked()
	c.mu.Unlock()
	return inner.Value(key)
}

// Cancel cancels the context with cause (nil means context.Canceled). The first cause stays.
func (c *Ctx) Cancel(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.canceled.Load() {
		c.cause = cause
		c.canceled.Store(true)
	}
	if c.inner != nil {
		c.cancel(c.cause)
	}
}

// Cause is the cause given to the first Cancel (nil before it, or for Cancel(nil)), read
// without making the inner context.
func (c *Ctx) Cause() error {
	if !c.canceled.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// made returns the inner context, making it (already cancelled, if Cancel came first).
func (c *Ctx) made() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.makeLocked()
}

// makeLocked is made with mu held.
func (c *Ctx) makeLocked() context.Context {
	if c.inner == nil {
		c.inner, c.cancel = context.WithCancelCause(context.Background())
		if c.canceled.Load() {
			c.cancel(c.cause)
		}
	}
	return c.inner
}
