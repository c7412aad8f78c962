package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// GroupCommit is group commit: concurrent one-job enqueues (Enqueue, EnqueueIn, EnqueueAt on one *Exq or
// *Client) share round trips. There is no goroutine of its own:
//
//   - A caller that finds no write in flight writes its job alone at once, with the one-job
//     script, exactly as an enqueue always did: a lone caller pays one mutex, nothing more.
//   - A caller that finds a write in flight queues its job and waits.
//   - When a write returns, its writer hands every queued job (up to maxGroup) to the first
//     of their callers, which writes them all in ONE script call (scripts.EnqueueGroup) and
//     hands each caller its own outcome; then it hands on the jobs queued meanwhile, and so on.
//     At most one write per enqueuer is in flight.
//
// Each job of a group is written as its one-job script would write it (unique lock first, a
// conflict writes nothing and names the holder, a lock held by the job's own jid means a repeat
// and writes nothing more), in arrival order, so of two jobs with one token in a group the
// first wins. A job's own error (a key of the wrong type) fails that job only. The wake-ups go
// once per group: one per queue, and one due announcement for the scheduled jobs. With WaitReplicas the WAIT follows the group's script on its
// connection, and a shortfall is every job's ErrNotReplicated. Nothing is ever sent twice: a
// group whose reply is lost fails every job of it (as a lost reply fails a lone enqueue; the
// jobs may have been written).
//
// Contexts: a caller whose context ends while its job is queued returns ctx.Err() and its job
// is never written. Once its job is taken into a group write, the caller waits for that
// write's outcome whatever its context does: the group is written under a context that keeps
// the values of the caller that writes it but no cancellation, and has a deadline only when
// every caller of the group has one (the latest of them), so that no caller's cancellation or
// short deadline fails the others' jobs. The client's read and write timeouts still bound it.
// A group of one job is written under its caller's own context, as a lone enqueue.
//
// Events and EnqueueHooks are untouched: each caller reports its own job (enqueuer.go). The zero
// GroupCommit is ready; an enqueuer has one.
type GroupCommit struct {
	mu   sync.Mutex
	busy bool // a write is in flight
	// queued are the calls waiting for the next write, in arrival order.
	queued []*groupCall
}

// maxGroup bounds the jobs of one group write (its script's arguments and run time).
const maxGroup = 500

// groupCall is one queued one-job write.
type groupCall struct {
	ctx  context.Context
	item BatchItem
	// ready is closed when the outcome is in, or when this call must write group.
	ready chan struct{}
	// taken is set (under GroupCommit.mu) once the call left the queue: into a group, or out
	// of it with its context's error.
	taken bool
	// group is the calls this one writes, itself first; set with taken for a group's writer.
	group []*groupCall
	// holder and err are the outcome, as Store.Enqueue returns them.
	holder string
	err    error
}

// Write writes one job (a zero item.at: to its queue now; otherwise to the schedule) and
// returns what Store.Enqueue or EnqueueAt would: the holder's jid on a unique conflict, an
// error wrapping ErrNotReplicated after a write too few replicas confirmed, or the error.
func (g *GroupCommit) Write(ctx context.Context, jq *Store, item BatchItem) (holder string, err error) {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		defer g.handOn()
		return jq.WriteOne(ctx, item)
	}
	c := &groupCall{ctx: ctx, item: item, ready: make(chan struct{})}
	g.queued = append(g.queued, c)
	g.mu.Unlock()
	select {
	case <-c.ready:
	case <-ctx.Done():
		g.mu.Lock()
		if !c.taken {
			g.drop(c)
			c.taken = true
			g.mu.Unlock()
			return "", ctx.Err()
		}
		g.mu.Unlock()
		<-c.ready // in a group write already: its outcome is this job's
	}
	if c.group != nil {
		defer g.handOn()
		g.writeGroup(jq, c.group)
	}
	return c.holder, c.err
}

// drop removes c from the queue (under mu).
func (g *GroupCommit) drop(c *groupCall) {
	for i, q := range g.queued {
		if q == c {
			g.queued = append(g.queued[:i], g.queued[i+1:]...)
			return
		}
	}
}

// handOn ends a write: the queued calls (up to maxGroup) go to the first of them to write, or,
// with none queued, no write is in flight any more. A queued call whose context has ended is
// answered with its context's error instead, its job unwritten.
func (g *GroupCommit) handOn() {
	g.mu.Lock()
	var group []*groupCall
	var gone []*groupCall
	n := 0
	for _, c := range g.queued {
		if len(group) == maxGroup {
			break
		}
		n++
		c.taken = true
		if err := c.ctx.Err(); err != nil {
			c.err = err
			gone = append(gone, c)
			continue
		}
		group = append(group, c)
	}
	if n == len(g.queued) {
		g.queued = nil
	} else {
		g.queued = append([]*groupCall(nil), g.queued[n:]...)
	}
	if len(group) == 0 {
		g.busy = false
	} else {
		group[0].group = group
	}
	g.mu.Unlock()
	for _, c := range gone {
		close(c.ready)
	}
	if len(group) > 0 {
		close(group[0].ready)
	}
}

// writeGroup writes the jobs of group in one round trip and answers every call but the
// first, whose outcome it leaves in group[0] for its caller (the writer) to return.
func (g *GroupCommit) writeGroup(jq *Store, group []*groupCall) {
	answered := false
	defer func() {
		if !answered { // a panic in the write: no caller may wait for ever
			for _, c := range group {
				c.holder, c.err = "", fmt.Errorf("the group write of %d jobs panicked", len(group))
			}
			for _, c := range group[1:] {
				close(c.ready)
			}
		}
	}()
	if len(group) == 1 {
		c := group[0]
		c.holder, c.err = jq.WriteOne(c.ctx, c.item)
		answered = true
		return
	}
	ctx, cancel := groupContext(group)
	defer cancel()
	items := make([]BatchItem, len(group))
	for i, c := range group {
		items[i] = c.item
	}
	out, replErr, err := jq.EnqueueGroup(ctx, items)
	for i, c := range group {
		switch {
		case err != nil:
			c.holder, c.err = "", err
		case out[i].Err != nil:
			c.holder, c.err = "", out[i].Err
		default:
			c.holder, c.err = out[i].Holder, replErr
		}
	}
	answered = true
	for _, c := range group[1:] {
		close(c.ready)
	}
}

// groupContext is the context a group is written under: the writer's values, no
// cancellation, and the latest deadline of the group's callers when every one has a deadline.
func groupContext(group []*groupCall) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(group[0].ctx)
	var latest time.Time
	for _, c := range group {
		d, ok := c.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}

// Waiting reports how many calls wait for the next write and whether a write is in flight.
func (g *GroupCommit) Waiting() (queued int, busy bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queued), g.busy
}
