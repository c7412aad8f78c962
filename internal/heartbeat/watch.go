package heartbeat

import (
	"context"
	"log/slog"
	"time"

	"github.com/exqgo/exq/internal/loop"
	"github.com/exqgo/exq/internal/store"
)

// Watch looks, for a while after Start, at the beats of the nodes in the heartbeats set
// that publish no window (Exq nodes) and warns about windows that do not fit this node's:
//   - an Exq node beating at a spacing shorter than this node's beat period may judge it by a
//     window (its heartbeat_interval × (missed_heartbeats_allowed + 1)) shorter than that
//     period, take it for dead and run its jobs a second time (unless the user declared the Exq
//     window, ForeignHeartbeatWindow, longer than the period);
//   - an Exq node beating at a spacing of ForeignHeartbeatWindow or more is taken for dead by
//     this node between its beats, and its jobs would be rescued while it runs them.
//
// Exq writes its beat as its own clock's time; the spacing of one node's scores needs no
// common clock. Each node is reported once.
type Watch struct {
	jq       *store.Store
	period   time.Duration // this node's HeartbeatInterval
	foreign  time.Duration // ForeignHeartbeatWindow
	declared bool          // ForeignHeartbeatWindow was set by the user
	timeout  time.Duration
	log      *slog.Logger
	// every and rounds: how often it looks and how many times (2.5 periods in all).
	every  time.Duration
	rounds int
}

// NewWatch returns the watch of a node beating every period (HeartbeatInterval) that judges Exq
// nodes by the window foreign (ForeignHeartbeatWindow; declared when the user set it); timeout
// bounds each read.
func NewWatch(jq *store.Store, period, foreign time.Duration, declared bool, timeout time.Duration, log *slog.Logger) *Watch {
	every := max(period/5, 20*time.Millisecond)
	return &Watch{jq: jq, period: period, foreign: foreign, declared: declared,
		timeout: timeout, log: log, every: every, rounds: int(5*period/(2*every)) + 1}
}

// Run samples the heartbeats until done or ctx ends.
func (w *Watch) Run(ctx context.Context) {
	if w.declared && w.foreign <= w.period {
		w.log.Warn("exq: HeartbeatInterval is not shorter than ForeignHeartbeatWindow, the window of the fleet's Exq nodes: they take this node for dead between its beats and run its jobs a second time",
			"heartbeat_interval", w.period, "foreign_heartbeat_window", w.foreign)
	}
	last := map[string]float64{}    // node → last score seen
	spacing := map[string]float64{} // node → shortest spacing seen, s
	warned := map[string]bool{}
	for i := 0; i < w.rounds; i++ {
		if i > 0 && !loop.Sleep(ctx, w.every) {
			return
		}
		beats, err := w.exqBeats(ctx)
		if err != nil {
			w.log.Debug("exq: reading the heartbeats of Exq nodes failed", "error", err)
			continue
		}
		for node, score := range beats {
			prev, seen := last[node]
			last[node] = score
			if !seen || score <= prev {
				continue
			}
			d := score - prev
			if s, ok := spacing[node]; !ok || d < s {
				spacing[node] = d
			}
			if !warned[node] {
				warned[node] = w.judge(node, time.Duration(d*float64(time.Second)))
			}
		}
	}
}

// judge warns when node's beat spacing d does not fit this node's windows; it reports whether
// it warned.
func (w *Watch) judge(node string, d time.Duration) bool {
	d = d.Round(time.Millisecond)
	switch {
	case d >= w.foreign:
		w.log.Warn("exq: an Exq node beats less often than ForeignHeartbeatWindow: this node takes it for dead between its beats and rescues its running jobs; set ForeignHeartbeatWindow to that node's heartbeat_interval × (missed_heartbeats_allowed + 1)",
			"exq_node", node, "exq_beat_spacing", d, "foreign_heartbeat_window", w.foreign)
		return true
	case d < w.period && !(w.declared && w.foreign > w.period):
		w.log.Warn("exq: an Exq node beats more often than this node; if its window (heartbeat_interval × (missed_heartbeats_allowed + 1)) is shorter than this node's HeartbeatInterval, it takes this node for dead and runs its jobs a second time: set HeartbeatInterval below the shortest Exq window in the fleet (and ForeignHeartbeatWindow to that window to silence this)",
			"exq_node", node, "exq_beat_spacing", d, "heartbeat_interval", w.period)
		return true
	}
	return false
}

// exqBeats reads the heartbeat score of every node that publishes no deadline.
func (w *Watch) exqBeats(ctx context.Context) (map[string]float64, error) {
	cctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	return w.jq.UndeclaredBeats(cctx)
}
