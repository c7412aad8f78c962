package exq

import (
	"context"
	"log/slog"
	"time"
)

// ForeignHeartbeatWindow is how long a node that beats in the heartbeats set without saying
// how often (an Exq node, or an exq node from before v1) may go without a beat before it
// counts as dead and its backup lists are rescued: Exq's default window, 60 s × (5 + 1). exq
// nodes publish their own window (HeartbeatInterval × (MissedHeartbeatsAllowed + 1)) and are
// judged by it, so nodes beating at different rates never take each other for dead. It is the
// default of Options.ForeignHeartbeatWindow.
const ForeignHeartbeatWindow = 6 * time.Minute

// heartbeat keeps this node's entry in the heartbeats set fresh and, on every node, rescues
// the backup lists of nodes that stopped beating: their in-flight jobs go back to the front
// of their queues, so a crashed process loses nothing. Beats use the Redis server's clock, so
// client clock skew cannot make a live node look dead.
type heartbeat struct {
	jq       *jobQueue
	interval time.Duration
	missed   int
	foreign  time.Duration              // Options.ForeignHeartbeatWindow: the window of nodes that publish none
	timeout  time.Duration              // bounds every Redis call: a hung call must not stop the beats
	queues   func() []Queue             // this node's subscriptions, rescued besides the known queues
	leases   func() map[string][]string // the leases of this node's running jobs, per queue
	events   listeners                  // JobsRescued
	log      *slog.Logger
}

// window is how long this node may go without a beat before others count it as dead.
func (h *heartbeat) window() time.Duration { return h.interval * time.Duration(h.missed+1) }

// run beats every interval and looks for dead nodes twice as often, so a dead node is rescued
// within its window plus half of this node's interval.
func (h *heartbeat) run(ctx context.Context) {
	beat := time.NewTicker(h.interval)
	defer beat.Stop()
	check := time.NewTicker(h.interval / 2)
	defer check.Stop()
	failing := false
	report := func(what string, err error) {
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			h.log.Warn("exq: heartbeat: "+what+" failed; will retry", "error", err)
			failing = true
		case err == nil && failing:
			h.log.Info("exq: heartbeat works again")
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

func (h *heartbeat) beat(ctx context.Context) error { return h.write(ctx, false) }

// join is the first beat, at Start: unlike the later ones, Redis refuses it when it is out of
// memory (scripts/beat.lua), so that no node joins a fleet then.
func (h *heartbeat) join(ctx context.Context) error { return h.write(ctx, true) }

func (h *heartbeat) write(ctx context.Context, join bool) error {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var leases map[string][]string
	if h.leases != nil {
		leases = h.leases()
	}
	if join {
		return h.jq.join(cctx, h.window(), leases)
	}
	return h.jq.beat(cctx, h.window(), leases)
}

// rescueDead rescues every node that counts as dead.
func (h *heartbeat) rescueDead(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	stale, err := h.jq.staleNodes(cctx, h.foreignWindow())
	cancel()
	if err != nil {
		return err
	}
	for _, n := range stale {
		if n.node == h.jq.node {
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
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	queues, err := h.jq.knownQueues(cctx)
	cancel()
	if err != nil {
		return err
	}
	for _, q := range h.queues() {
		queues = append(queues, q.Name)
	}
	seen := map[string]bool{}
	total := 0
	for _, q := range queues {
		if seen[q] {
			continue
		}
		seen[q] = true
		moved, err := h.jq.rescueBackup(ctx, n, q, h.timeout)
		total += moved
		if moved > 0 && h.events.has() {
			h.events.emit(Event{Kind: JobsRescued, Queue: q, Count: moved, From: n.node})
		}
		if err != nil {
			return err
		}
	}
	cctx, cancel = context.WithTimeout(ctx, h.timeout)
	buried, err := h.jq.bury(cctx, n)
	cancel()
	if err != nil {
		return err
	}
	if buried || total > 0 {
		h.log.Warn("exq: rescued the in-flight jobs of a node that stopped beating", "node", n.node, "jobs", total, "buried", buried)
	}
	return nil
}
