package exq

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/exqgo/exq/internal/store"
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
	jq       *store.Store
	interval time.Duration
	missed   int
	foreign  time.Duration              // Options.ForeignHeartbeatWindow: the window of nodes that publish none
	timeout  time.Duration              // bounds every Redis call: a hung call must not stop the beats
	queues   func() []Queue             // this node's subscriptions, rescued besides the known queues
	leases   func() map[string][]string // the leases of this node's running jobs, per queue
	orphan   func() int                 // drops the runs from before a burial (manager.orphanAll)
	events   listeners                  // JobsRescued
	log      *slog.Logger
	epoch    string // the token of this node's incarnation in the heartbeats; "" until it joined
	// lastCall is the server's time of this node's latest beat or check whose reply has come
	// back (see rescueDead).
	callMu   sync.Mutex
	lastCall float64
}

// called records the server's time of a call that succeeded.
func (h *heartbeat) called(at float64) {
	h.callMu.Lock()
	h.lastCall = max(h.lastCall, at)
	h.callMu.Unlock()
}

// previousCall is the server's time of the latest call whose reply has come back.
func (h *heartbeat) previousCall() float64 {
	h.callMu.Lock()
	defer h.callMu.Unlock()
	return h.lastCall
}

// window is how long this node may go without a beat before others count it as dead.
func (h *heartbeat) window() time.Duration { return h.interval * time.Duration(h.missed+1) }

// run beats every interval and looks for dead nodes twice as often, so a dead node is rescued
// within its window plus half of this node's interval. Beats and checks run on goroutines of
// their own: a check held up (Redis stalled) must not keep this node's beat from waiting in
// the server, where it runs as soon as the server is free (see rescueDead).
func (h *heartbeat) run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.every(ctx, h.interval, "beat", h.beat)
	}()
	h.every(ctx, h.interval/2, "rescue of dead nodes", h.rescueDead)
	<-done
}

// every calls f every period until ctx ends, logging its failures once per spell.
func (h *heartbeat) every(ctx context.Context, period time.Duration, what string, f func(context.Context) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := f(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			h.log.Warn("exq: heartbeat: "+what+" failed; will retry", "error", err)
			failing = true
		case err == nil && failing:
			h.log.Info("exq: heartbeat: " + what + " works again")
			failing = false
		}
	}
}

// beat is one beat of the loop. When it finds that this node's incarnation was buried (see
// beat.lua), it drops the runs from before and joins again.
func (h *heartbeat) beat(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if h.epoch == "" {
		return h.enter(cctx)
	}
	alive, at, err := h.jq.Beat(cctx, h.window(), h.heldLeases(), h.epoch, h.previousCall())
	if err != nil {
		return err
	}
	if alive {
		h.called(at)
		return nil
	}
	// Buried while it could not beat (a pause, a stall of this process, a cut-off link) past
	// its window: its in-flight jobs went back to their queues and may run elsewhere, or here
	// again. Drop those runs before joining again, so that none of their outcomes is written.
	n := 0
	if h.orphan != nil {
		n = h.orphan()
	}
	h.log.Warn("exq: this node was taken for dead (it could not beat for longer than its window) and its in-flight jobs were rescued; "+
		"their runs here are cancelled and their outcomes dropped, since the jobs run again", "node", h.jq.Node(), "jobs", n)
	return h.enter(cctx)
}

// join is the first beat, at Start: unlike the later ones, Redis refuses it when it is out of
// memory (scripts/beat.lua), so that no node joins a fleet then.
func (h *heartbeat) join(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	return h.enter(cctx)
}

// enter joins the heartbeats as a new incarnation of this node: at start, and after a burial.
// Fetches and acknowledgements carry the token from then on.
func (h *heartbeat) enter(ctx context.Context) error {
	epoch := uuid.NewString()
	at, err := h.jq.Join(ctx, h.window(), h.heldLeases(), epoch)
	if err != nil {
		return err
	}
	h.called(at)
	h.epoch = epoch
	h.jq.SetEpoch(epoch)
	return nil
}

func (h *heartbeat) heldLeases() map[string][]string {
	if h.leases == nil {
		return nil
	}
	return h.leases()
}

// rescueDead rescues every node that counts as dead: past its deadline by the server's clock,
// a whole window of its own past the end of the latest stall of Redis (scripts/stale.lua), and
// past its deadline already at this node's previous call.
//
// The stall rule is what keeps a stall of Redis from killing live nodes. While the server is
// blocked (another client's long script, DEBUG SLEEP) or refuses calls (BUSY), no beat of any
// node runs; when it is free again, the beats that waited in it run in no particular order
// with this check, and a beat may not have been sent yet (its node's connections all waiting
// on the stall, or its call timed out and is sent again at its next tick). The first call of
// any node after the stall runs more than half its window after its previous one, and records
// the stall's end in Redis, in the same script that judges: from then on every node has a
// whole window of its own, on a server that runs calls, to beat again. It relies on no client's
// timing: the gap is measured between two of the server's TIME readings.
//
// The last condition covers a shorter hold-up of the server: this node sent this check only
// after its previous call came back, so if that call ran after a node's deadline, any beat the
// node had sent by then has run before this check looks.
func (h *heartbeat) rescueDead(ctx context.Context) error {
	previous := h.previousCall() // read before the check is sent
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	stale, now, err := h.jq.StaleNodes(cctx, h.foreignWindow(), h.window(), previous)
	cancel()
	if err != nil {
		return err
	}
	h.called(now)
	for _, n := range stale {
		if n.Node == h.jq.Node() {
			continue // we are alive; our own beat is just late
		}
		if n.Deadline >= previous {
			continue // not proven yet: judged at a later check
		}
		if err := h.rescue(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// rescue moves dead node n's backup lists, for every known queue, back to their queues and
// then forgets the node, unless it beats again meanwhile.
func (h *heartbeat) rescue(ctx context.Context, n store.StaleNode) error {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	queues, err := h.jq.KnownQueues(cctx)
	cancel()
	if err != nil {
		return err
	}
	for _, q := range h.queues() {
		queues = append(queues, q.Name)
	}
	// Queues in no queues set: removed while their jobs ran, or filled by a producer that
	// never adds them.
	cctx, cancel = context.WithTimeout(ctx, h.timeout)
	more, err := h.jq.BackupQueuesOf(cctx, n.Node)
	cancel()
	if err != nil {
		return err
	}
	queues = append(queues, more...)
	seen := map[string]bool{}
	total := 0
	distinct := queues[:0]
	for _, q := range queues {
		if seen[q] {
			continue
		}
		seen[q] = true
		distinct = append(distinct, q)
		moved, err := h.jq.RescueBackup(ctx, n, q, h.timeout)
		total += moved
		if moved > 0 && h.events.has() {
			h.events.emit(Event{Kind: JobsRescued, Queue: q, Count: moved, From: n.Node})
		}
		if err != nil {
			return err
		}
	}
	cctx, cancel = context.WithTimeout(ctx, h.timeout)
	res, err := h.jq.Bury(cctx, n, distinct)
	cancel()
	if err != nil {
		return err
	}
	buried := res == store.BuryDone
	if res == store.BuryJobsLeft {
		h.log.Warn("exq: a node taken for dead has jobs in a backup list that appeared after the rescue looked; it stays in the heartbeats until a later rescue moves them",
			"node", n.Node)
	}
	switch {
	case buried:
		h.log.Warn("exq: rescued the in-flight jobs of a node that stopped beating, and forgot the node", "node", n.Node, "jobs", total)
	case total > 0:
		h.log.Warn("exq: rescued in-flight jobs of a node that stopped beating; it is forgotten once none is left", "node", n.Node, "jobs", total)
	}
	return nil
}
