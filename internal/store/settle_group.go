package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Settle records one outcome of a batch's or workflow's job (it), alone or in one call with
// the concurrent outcomes of this store's other callers (settleGroup), each write bounded by
// timeout, and returns its script's reply, read with BatchSettled or WorkflowSettled (nil
// when another outcome of the same batch in the group has it). Every outcome is idempotent:
// the caller sends it again while Redis fails.
func (jq *Store) Settle(it SettleItem, now func() time.Time, timeout time.Duration) ([]any, error) {
	return jq.settles.settle(jq, it, now, timeout)
}

// settleGroup makes the concurrent outcomes of a node's batch and workflow jobs share round
// trips, as group commit does for enqueues (GroupCommit), with no goroutine of its own: a
// caller that finds no write in flight records its outcome alone at once with its own script;
// one that finds a write in flight queues and waits; when a write returns, its writer hands the
// queued outcomes (up to maxSettleGroup) to the first of their callers, which records them all
// in one call (scripts.SettleGroup) and answers each. Every item stays idempotent, so a group
// whose reply is lost fails every caller, and each caller's persist loop sends its own again.
type settleGroup struct {
	mu     sync.Mutex
	busy   bool
	queued []*settleCall
}

// maxSettleGroup bounds the outcomes of one call.
const maxSettleGroup = 256

type settleCall struct {
	item  SettleItem
	ready chan struct{} // closed when err is in, or when this call must write group
	group []*settleCall
	reply []any // the script's reply for this item; nil for all but the first of a batch's
	err   error
}

// settle records one outcome, alone or in a group, each write bounded by timeout, and returns
// its script's reply (nil when another outcome of the same batch in the group has it).
func (g *settleGroup) settle(jq *Store, it SettleItem, now func() time.Time, timeout time.Duration) ([]any, error) {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		defer g.handOn()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return jq.settleOne(ctx, it, now())
	}
	c := &settleCall{item: it, ready: make(chan struct{})}
	g.queued = append(g.queued, c)
	g.mu.Unlock()
	<-c.ready
	if c.group != nil {
		defer g.handOn()
		g.write(jq, c.group, now(), timeout)
	}
	return c.reply, c.err
}

// handOn ends a write: the queued calls go to the first of them to write, or no write is in
// flight any more.
func (g *settleGroup) handOn() {
	g.mu.Lock()
	n := min(len(g.queued), maxSettleGroup)
	group := g.queued[:n:n]
	g.queued = append([]*settleCall(nil), g.queued[n:]...)
	if n == 0 {
		g.busy = false
	} else {
		group[0].group = group
	}
	g.mu.Unlock()
	if n > 0 {
		close(group[0].ready)
	}
}

// write records group's outcomes in one call and answers every call but the first, whose
// outcome its caller (the writer) returns.
func (g *settleGroup) write(jq *Store, group []*settleCall, now time.Time, timeout time.Duration) {
	answered := false
	defer func() {
		if !answered { // a panic in the write: no caller may wait for ever
			for _, c := range group {
				c.err = fmt.Errorf("the group of %d batch or workflow outcomes panicked", len(group))
			}
			for _, c := range group[1:] {
				close(c.ready)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if len(group) == 1 {
		group[0].reply, group[0].err = jq.settleOne(ctx, group[0].item, now)
	} else {
		items := make([]SettleItem, len(group))
		for i, c := range group {
			items[i] = c.item
		}
		replies, errs, err := jq.settleMany(ctx, items, now)
		for i, c := range group {
			if err != nil {
				c.err = err
			} else {
				c.reply, c.err = replies[i], errs[i]
			}
		}
	}
	answered = true
	for _, c := range group[1:] {
		close(c.ready)
	}
}
