package exq

import (
	"context"
	"time"
)

// heartbeat keeps this node's entry in the heartbeats set fresh and, on every node, rescues
// the backup lists of nodes that stopped beating: their in-flight jobs go back to the front
// of their queues, so a crashed process loses nothing. Beats use the Redis server's clock, so
// client clock skew cannot make a live node look dead.
type heartbeat struct {
	e        *Exq
	interval time.Duration
	missed   int
}

// maxAge is how old a beat may be before its node counts as dead.
func (h *heartbeat) maxAge() time.Duration { return h.interval * time.Duration(h.missed+1) }

// run beats every interval and looks for dead nodes twice as often, so a dead node is rescued
// within maxAge plus half an interval of its last beat.
func (h *heartbeat) run(ctx context.Context) {
	beat := time.NewTicker(h.interval)
	defer beat.Stop()
	check := time.NewTicker(h.interval / 2)
	defer check.Stop()
	failing := false
	report := func(what string, err error) {
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			h.e.log.Warn("exq: heartbeat: "+what+" failed; will retry", "error", err)
			failing = true
		case err == nil && failing:
			h.e.log.Info("exq: heartbeat works again")
			failing = false
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			report("beat", h.beat(ctx))
		case <-check.C:
			report("rescue of dead nodes", h.rescueDead(ctx))
		}
	}
}

func (h *heartbeat) beat(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, h.e.opts.RedisTimeout)
	defer cancel()
	return h.e.jq.beat(cctx)
}

// rescueDead rescues every node whose last beat is older than maxAge.
func (h *heartbeat) rescueDead(ctx context.Context) error {
	stale, err := h.e.jq.staleNodes(ctx, h.maxAge())
	if err != nil {
		return err
	}
	for _, n := range stale {
		if n.node == h.e.opts.NodeID {
			continue // we are alive; our own beat is just late
		}
		if err := h.rescue(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// rescue moves dead node n's backup lists, for every known queue, back to their queues and
// then forgets the node, unless it beats again meanwhile.
func (h *heartbeat) rescue(ctx context.Context, n staleNode) error {
	queues, err := h.e.jq.knownQueues(ctx)
	if err != nil {
		return err
	}
	for _, q := range h.e.mgr.subscriptions() {
		queues = append(queues, q.Name)
	}
	seen := map[string]bool{}
	total := 0
	for _, q := range queues {
		if seen[q] {
			continue
		}
		seen[q] = true
		moved, err := h.e.jq.rescueBackup(ctx, n, q)
		total += moved
		if err != nil {
			return err
		}
	}
	buried, err := h.e.jq.bury(ctx, n)
	if err != nil {
		return err
	}
	if buried || total > 0 {
		h.e.log.Warn("exq: rescued the in-flight jobs of a node that stopped beating", "node", n.node, "jobs", total, "buried", buried)
	}
	return nil
}
