// Package heartbeat keeps a node in the heartbeats set and rescues the backup lists of nodes
// that stopped beating; for a while after a node starts, it also warns about Exq nodes in the
// heartbeats whose beat spacing does not fit this node's windows (Watch).
package heartbeat

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/exqgo/exq/internal/store"
)

// Heartbeat keeps this node's entry in the heartbeats set fresh and, on every node, rescues
// the backup lists of nodes that stopped beating: their in-flight jobs go back to the front
// of their queues, so a crashed process loses nothing. Beats use the Redis server's clock, so
// client clock skew cannot make a live node look dead.
type Heartbeat struct {
	Parts
	epoch string // the token of this node's incarnation in the heartbeats; "" until it joined
	// lastCall is the server's time of this node's latest beat or check whose reply has come
	// back (see RescueDead).
	callMu   sync.Mutex
	lastCall float64
	// sweepCursor is where the next sweep goes on in heartbeat_epochs; warned the gone nodes
	// whose jobs left behind were reported.
	sweepCursor uint64
	warned      map[string]bool
	// base is the local clock's reading at New; aliveUntil, in nanoseconds after base, is until
	// when this node cannot have been taken for dead (Current). confirmMu guards confirmed, a
	// channel closed at the next beat's verdict, alive or buried.
	base       time.Time
	aliveUntil atomic.Int64
	confirmMu  sync.Mutex
	confirmed  chan struct{}
}

// Parts are what a heartbeat is built from.
type Parts struct {
	Store    *store.Store
	Interval time.Duration                   // Options.HeartbeatInterval
	Missed   int                             // Options.MissedHeartbeatsAllowed
	Foreign  time.Duration                   // Options.ForeignHeartbeatWindow: the window of nodes that publish none (positive)
	Timeout  time.Duration                   // bounds every Redis call: a hung call must not stop the beats
	Queues   func() []string                 // this node's subscriptions, rescued besides the known queues
	Leases   func() map[string][]string      // the leases of this node's running jobs, per queue; may be nil
	Orphan   func() int                      // drops the runs from before a burial; may be nil
	Rescued  func(queue, from string, n int) // n jobs of node from went back to queue; may be nil
	Log      *slog.Logger
	// Clock is this process's clock, for how long ago a beat was sent (Current); nil: time.Now.
	Clock func() time.Time
}

// New returns the heartbeat of the store's node.
func New(p Parts) *Heartbeat {
	if p.Clock == nil {
		p.Clock = time.Now
	}
	return &Heartbeat{Parts: p, base: p.Clock(), confirmed: make(chan struct{})}
}

// Current reports whether this node cannot have been taken for dead: its latest beat that
// found it alive was sent less than 95 % of its window ago, by this process's clock.
// A beat runs on the server at or after it is sent, and others bury a node only a window
// after its latest beat ran, so until then no rescue can have taken this node's jobs. When it
// cannot tell (the node was paused, or its beats failed, for most of a window), it returns a
// channel closed at the next beat's verdict: alive, or buried with the runs from before
// orphaned (Parts.Orphan).
//
// A job fetched just before a pause of the process (SIGSTOP, a frozen VM) longer than the
// window is rescued and runs elsewhere meanwhile; the runner asks this before each run begins,
// so that the woken node does not begin it again beside its successors.
func (h *Heartbeat) Current() (bool, <-chan struct{}) {
	if h.Clock().Sub(h.base).Nanoseconds() < h.aliveUntil.Load() {
		return true, nil
	}
	h.confirmMu.Lock()
	defer h.confirmMu.Unlock()
	if h.Clock().Sub(h.base).Nanoseconds() < h.aliveUntil.Load() {
		return true, nil // confirmed meanwhile
	}
	return false, h.confirmed
}

// verdict records a beat's verdict: alive (sent at sent), or buried (sent zero, after the runs
// from before were orphaned). Either way it wakes the runs waiting on Current.
func (h *Heartbeat) verdict(sent time.Time) {
	h.confirmMu.Lock()
	defer h.confirmMu.Unlock()
	if !sent.IsZero() {
		w := h.window()
		// Less a twentieth: the server's clock and this one may run at slightly different rates.
		until := sent.Sub(h.base) + w - w/20
		if until.Nanoseconds() > h.aliveUntil.Load() {
			h.aliveUntil.Store(until.Nanoseconds())
		}
	}
	close(h.confirmed)
	h.confirmed = make(chan struct{})
}

// called records the server's time of a call that succeeded.
func (h *Heartbeat) called(at float64) {
	h.callMu.Lock()
	h.lastCall = max(h.lastCall, at)
	h.callMu.Unlock()
}

// previousCall is the server's time of the latest call whose reply has come back.
func (h *Heartbeat) previousCall() float64 {
	h.callMu.Lock()
	defer h.callMu.Unlock()
	return h.lastCall
}

// window is how long this node may go without a beat before others count it as dead.
func (h *Heartbeat) window() time.Duration { return h.Interval * time.Duration(h.Missed+1) }

// Run beats every interval and looks for dead nodes twice as often, so a dead node is rescued
// within its window plus half of this node's interval. Beats and checks run on goroutines of
// their own: a check held up (Redis stalled) must not keep this node's beat from waiting in
// the server, where it runs as soon as the server is free (see RescueDead). Every SweepEvery
// intervals it sweeps what burials by earlier releases left (SweepGone).
func (h *Heartbeat) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		h.every(ctx, h.Interval, "beat", h.beat)
	}()
	go func() {
		defer wg.Done()
		h.every(ctx, SweepEvery*h.Interval, "sweep of buried nodes' records", h.SweepGone)
	}()
	h.every(ctx, h.Interval/2, "rescue of dead nodes", h.RescueDead)
	wg.Wait()
}

// SweepEvery is how many heartbeat intervals pass between two sweeps (SweepGone).
const SweepEvery = 10

// sweepPage is how many nodes of heartbeat_epochs a sweep looks at (HSCAN COUNT).
const sweepPage = 100

// SweepGone forgets the incarnation token and the set of backup queues of nodes that are in no
// heartbeat: a node of an earlier release buries a node of this one without removing them
// (its bury.lua predates both), and no later burial sees the node again. A page of
// heartbeat_epochs per call, going on where the previous call stopped; a node whose backup
// lists still hold jobs keeps both (sweep_node.lua), and is reported once.
func (h *Heartbeat) SweepGone(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, h.Timeout)
	gone, next, err := h.Store.GoneNodes(cctx, h.sweepCursor, sweepPage)
	cancel()
	if err != nil {
		return err
	}
	h.sweepCursor = next
	for _, n := range gone {
		if n == h.Store.Node() {
			continue // this node, buried and not yet joined again: its beat sees to it
		}
		cctx, cancel := context.WithTimeout(ctx, h.Timeout)
		res, err := h.Store.SweepNode(cctx, n)
		cancel()
		if err != nil {
			return err
		}
		switch {
		case res == store.SweepDone:
			h.Log.Info("exq: forgot the incarnation and backup-queue set a buried node left (buried by a node of an earlier release)", "node", n)
		case res == store.SweepJobsLeft && !h.warned[n]:
			if h.warned == nil || len(h.warned) >= 1000 {
				h.warned = map[string]bool{}
			}
			h.warned[n] = true
			h.Log.Warn("exq: a node buried by a node of an earlier release left jobs in its backup lists (queue:backup::<node>::<queue>), "+
				"which no rescue moves any more; its records stay until the lists are empty", "node", n)
		}
	}
	return nil
}

// every calls f every period until ctx ends, logging its failures once per spell.
func (h *Heartbeat) every(ctx context.Context, period time.Duration, what string, f func(context.Context) error) {
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
			h.Log.Warn("exq: heartbeat: "+what+" failed; will retry", "error", err)
			failing = true
		case err == nil && failing:
			h.Log.Info("exq: heartbeat: " + what + " works again")
			failing = false
		}
	}
}

// beat is one beat of the loop. When it finds that this node's incarnation was buried (see
// beat.lua), it drops the runs from before and joins again.
func (h *Heartbeat) beat(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	if h.epoch == "" {
		return h.enter(cctx)
	}
	sent := h.Clock()
	alive, at, err := h.Store.Beat(cctx, h.window(), h.heldLeases(), h.epoch, h.previousCall())
	if err != nil {
		return err
	}
	if alive {
		h.called(at)
		h.verdict(sent)
		return nil
	}
	// Buried while it could not beat (a pause, a stall of this process, a cut-off link) past
	// its window: its in-flight jobs went back to their queues and may run elsewhere, or here
	// again. Drop those runs before joining again, so that none of their outcomes is written.
	n := 0
	if h.Orphan != nil {
		n = h.Orphan()
	}
	h.verdict(time.Time{}) // the runs waiting to begin find themselves orphaned
	h.Log.Warn("exq: this node was taken for dead (it could not beat for longer than its window) and its in-flight jobs were rescued; "+
		"their runs here are cancelled and their outcomes dropped, since the jobs run again", "node", h.Store.Node(), "jobs", n)
	return h.enter(cctx)
}

// Join is the first beat, at Start: unlike the later ones, Redis refuses it when it is out of
// memory (scripts/beat.lua), so that no node joins a fleet then.
func (h *Heartbeat) Join(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	return h.enter(cctx)
}

// enter joins the heartbeats as a new incarnation of this node: at start, and after a burial.
// Fetches and acknowledgements carry the token from then on.
func (h *Heartbeat) enter(ctx context.Context) error {
	epoch := uuid.NewString()
	sent := h.Clock()
	at, err := h.Store.Join(ctx, h.window(), h.heldLeases(), epoch)
	if err != nil {
		return err
	}
	h.called(at)
	h.epoch = epoch
	h.Store.SetEpoch(epoch)
	h.verdict(sent)
	return nil
}

func (h *Heartbeat) heldLeases() map[string][]string {
	if h.Leases == nil {
		return nil
	}
	return h.Leases()
}

// RescueDead rescues every node that counts as dead: past its deadline by the server's clock,
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
func (h *Heartbeat) RescueDead(ctx context.Context) error {
	previous := h.previousCall() // read before the check is sent
	cctx, cancel := context.WithTimeout(ctx, h.Timeout)
	stale, now, err := h.Store.StaleNodes(cctx, h.Foreign, h.window(), previous)
	cancel()
	if err != nil {
		return err
	}
	h.called(now)
	for _, n := range stale {
		if n.Node == h.Store.Node() {
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
func (h *Heartbeat) rescue(ctx context.Context, n store.StaleNode) error {
	cctx, cancel := context.WithTimeout(ctx, h.Timeout)
	queues, err := h.Store.KnownQueues(cctx)
	cancel()
	if err != nil {
		return err
	}
	queues = append(queues, h.Queues()...)
	// Queues in no queues set: removed while their jobs ran, or filled by a producer that
	// never adds them.
	cctx, cancel = context.WithTimeout(ctx, h.Timeout)
	more, err := h.Store.BackupQueuesOf(cctx, n.Node)
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
		moved, err := h.Store.RescueBackup(ctx, n, q, h.Timeout)
		total += moved
		if moved > 0 && h.Rescued != nil {
			h.Rescued(q, n.Node, moved)
		}
		if err != nil {
			return err
		}
	}
	cctx, cancel = context.WithTimeout(ctx, h.Timeout)
	res, err := h.Store.Bury(cctx, n, distinct)
	cancel()
	if err != nil {
		return err
	}
	buried := res == store.BuryDone
	if res == store.BuryJobsLeft {
		h.Log.Warn("exq: a node taken for dead has jobs in a backup list that appeared after the rescue looked; it stays in the heartbeats until a later rescue moves them",
			"node", n.Node)
	}
	switch {
	case buried:
		h.Log.Warn("exq: rescued the in-flight jobs of a node that stopped beating, and forgot the node", "node", n.Node, "jobs", total)
	case total > 0:
		h.Log.Warn("exq: rescued in-flight jobs of a node that stopped beating; it is forgotten once none is left", "node", n.Node, "jobs", total)
	}
	return nil
}
