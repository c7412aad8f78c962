// Package loop starts a node's background loops and waits for them, all in one shape: a part
// (the acker, stats, the pinger, the heartbeat, the manager, the scheduler, the periodic
// runner) is built with what it uses and runs as run(ctx) until ctx ends; a Group starts each
// loop once, on a goroutine of its own, and Wait returns when every loop it started has
// returned. A panic in a loop is not recovered: as in any goroutine, it ends the process with
// its stack, rather than leave a node that looks alive with a part gone.
package loop

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Group is a set of loops that stop together: they share the context they are started with,
// and Wait waits for all of them. The zero Group is ready.
type Group struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	started map[string]bool // name → still running
}

// Go starts run(ctx) on a goroutine of its own under name, once: starting a name a second time
// is a programming error and panics before anything runs. Wait waits for it.
func (g *Group) Go(ctx context.Context, name string, run func(context.Context)) {
	g.mu.Lock()
	if _, ok := g.started[name]; ok {
		g.mu.Unlock()
		panic(fmt.Sprintf("loop: %q started twice", name))
	}
	if g.started == nil {
		g.started = map[string]bool{}
	}
	g.started[name] = true
	g.wg.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.wg.Done()
		defer func() {
			g.mu.Lock()
			g.started[name] = false
			g.mu.Unlock()
		}()
		run(ctx)
	}()
}

// Wait blocks until every loop started has returned; at once when none was started. The
// loops end when their context does: Wait does not end them.
func (g *Group) Wait() { g.wg.Wait() }

// Running lists the names of the loops started that have not returned yet, for diagnostics
// and tests (a stopping node's fetch loop has ended once "manager" is not among them).
func (g *Group) Running() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.started))
	for name, running := range g.started {
		if running {
			out = append(out, name)
		}
	}
	return out
}

// Sleep sleeps for d and reports false if ctx ended first: the wait between two steps of a
// loop, which Stop must be able to cut short.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
