// Package presence keeps a node where Exq's and Sidekiq's UIs look for processes: the node
// hash, the busy list and the processes set; it reads the node's signals and prunes dead nodes.
// What it writes is for display and signals only: whether a node is alive, and the rescue of
// one that is not, are the heartbeat's (internal/heartbeat).
package presence

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// maxSignalsPerPing bounds the signals read in one ping, as Exq does.
const maxSignalsPerPing = 100

// Pinger registers this node where Exq's and Sidekiq's UIs look for processes: the processes
// set, the node hash (info, busy, beat, quiet, rtt_us, rss) and the busy list; it reads the
// node's signals; and it prunes nodes whose hash has expired.
//
// It writes the whole node state (hash and busy list) in one MULTI, so the UIs' process table
// (busy, quiet) and their list of running jobs always agree. It writes it at every ping (5 s,
// which also keeps the keys alive and prunes), and within a second of any change (a job
// started or ended, quiet, subscriptions, a job's progress), at most once per refresh interval
// (1 s): a change after a calm spell is written at the next check (a tenth of the refresh
// interval), a burst of changes once a second. A job's progress is seen at the refresh (the
// busy list is rendered then, not at every check), and when only progress changed, only the
// entries of the jobs that reported one are written: however often jobs report progress, the
// node sends at most one write a second, of at most one entry per running job. Signals are read
// at every refresh, so a UI's Quiet button shows within a second or two.
type Pinger struct {
	Parts
	hostname  string
	started   time.Time
	rtt       time.Duration // of the previous write
	written   *nodeState    // what the last successful write stored; nil before it
	lastWrite time.Time
	pending   bool // a change was seen that the rate limit held back
}

// nodeState is what the node hash and the busy list say about this node.
type nodeState struct {
	busy        map[string]string // run id → WIRE §4 JSON; nil with DisableStats
	count       int               // the hash's busy: len(busy), so both always agree
	quiet       bool
	queues      []string
	concurrency int
}

// sameAs reports whether s would write what o wrote.
func (s *nodeState) sameAs(o *nodeState) bool {
	return o != nil && s.count == o.count && s.quiet == o.quiet && s.concurrency == o.concurrency &&
		slices.Equal(s.queues, o.queues) && sameRuns(s.busy, o) && len(changedRuns(s.busy, o)) == 0
}

// View is the node's view of its subscriptions and running jobs (the manager's).
type View interface {
	Subscriptions() []string     // the subscribed queues, in order
	InFlight() int               // the jobs running or finishing
	Concurrency() int            // the sum of the subscriptions' concurrency
	BusyJobs() map[string]string // run id → WIRE §4 JSON of every running job
	Quieted() bool               // Quiet, TSTP or TERM
}

// Parts are what a pinger is built from.
type Parts struct {
	Store         *store.Store
	View          View             // subscriptions and running jobs
	Handle        func(sig string) // acts on one signal
	Stopping      func() bool      // the node is stopping (it shows as quiet)
	Tag           string           // Options.Tag
	Labels        []string         // Options.Labels
	Version       string           // the node's version field
	StatsDisabled bool             // no busy list
	Refresh       time.Duration    // how soon a change reaches Redis (1 s)
	PingEvery     time.Duration    // how often everything is written and dead nodes pruned (5 s)
	Now           func() time.Time
	Log           *slog.Logger
	// OnPing, when set, runs after each ping (flows.ForeignWatch.Check, flows.IndexTrim.Step)
	// with the nodes left in the processes set after the ping's prune; its error is logged at
	// debug level.
	OnPing func(ctx context.Context, nodes []string) error
}

// New returns the pinger of parts.
func New(parts Parts) *Pinger {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return &Pinger{Parts: parts, hostname: host, started: parts.Now()}
}

// What a tick does: a ping writes everything and prunes; a refresh reads the signals and
// writes what changed; a change writes what changed, without reading the signals.
const (
	tickPing = iota
	tickRefresh
	tickChange
)

// Run pings at once and every pingEvery; every refresh interval (the stats interval, 1 s) it
// reads the signals and writes the node state if it changed; and in between it looks for
// changes that cost nothing to see (the number of running jobs, quiet, subscriptions) every
// tenth of that, writing them as soon as the rate limit allows. Until ctx ends.
func (p *Pinger) Run(ctx context.Context) {
	pingEvery := p.PingEvery
	refresh := min(p.Refresh, pingEvery)
	step := max(refresh/10, time.Millisecond)
	t := time.NewTicker(step)
	defer t.Stop()
	var lastPing, lastRefresh time.Time
	failing := false
	for {
		now := time.Now()
		var err error
		ran := true
		switch {
		case now.Sub(lastPing) >= pingEvery-step/2:
			lastPing, lastRefresh = now, now
			var nodes []string
			if err = p.tick(ctx, tickPing, refresh-step/2); err == nil {
				nodes, err = p.Store.Prune(ctx, p.Log)
			}
			if p.OnPing != nil && err == nil {
				if werr := p.OnPing(ctx, nodes); werr != nil && ctx.Err() == nil {
					p.Log.Debug("exq: the work after a ping (runs of batch and workflow jobs on other nodes, the trim of their listings) failed", "error", werr)
				}
			}
		case now.Sub(lastRefresh) >= refresh-step/2:
			lastRefresh = now
			err = p.tick(ctx, tickRefresh, refresh-step/2)
		case (p.pending || p.changedCheaply()) && now.Sub(p.lastWrite) >= refresh-step/2:
			err = p.tick(ctx, tickChange, refresh-step/2)
		default:
			ran = false
		}
		switch {
		case !ran:
		case err != nil && ctx.Err() == nil && !failing:
			p.Log.Warn("exq: node ping failed; will retry", "error", err)
			failing = true
		case err == nil && failing:
			p.Log.Info("exq: node ping works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// changedCheaply reports a change that is seen without rendering the busy list: the number
// of running jobs, quiet, or the subscriptions. (A job ending as another starts is seen by the
// next refresh.)
func (p *Pinger) changedCheaply() bool {
	w := p.written
	if w == nil {
		return true
	}
	subs := p.View.Subscriptions()
	if p.View.InFlight() != w.count || p.quiet(subs) != w.quiet || len(subs) != len(w.queues) || p.View.Concurrency() != w.concurrency {
		return true
	}
	for i, q := range subs {
		if q != w.queues[i] {
			return true
		}
	}
	return false
}

// tick reads and handles this node's signals (unless kind is tickChange), then writes its
// state, together with the removal of the signals it handled, in one MULTI: always for a
// ping or when there were signals, else when the state changed and the last write is at least
// minGap old (otherwise the change stays pending).
//
// Signals are read without being removed, and removed only once handled, by a
// compare-and-remove of exactly those at the list's right end (scripts.SignalsDone): a reply
// lost after Redis ran the removal, or a replay of it, loses no signal and removes no newer
// one. If the removal is lost, the next refresh handles the same signals again, which is
// harmless: TSTP and TERM are idempotent, and a CANCEL for a job no longer running does nothing.
func (p *Pinger) tick(ctx context.Context, kind int, minGap time.Duration) error {
	var sigs []string
	if kind != tickChange {
		// The oldest signals are at the right end (senders LPUSH).
		var err error
		if sigs, err = p.Store.Signals(ctx, maxSignalsPerPing); err != nil {
			return err
		}
		for i := len(sigs) - 1; i >= 0; i-- {
			p.Handle(sigs[i])
		}
	}
	state := p.state()
	changed := !state.sameAs(p.written)
	if kind != tickPing && len(sigs) == 0 {
		if !changed {
			p.pending = false
			return nil
		}
		if time.Since(p.lastWrite) < minGap {
			p.pending = true
			return nil
		}
	}
	// A ping rewrites the busy list (its entries' TTL with it), except an empty one written
	// empty last time: its keys are gone already, and an idle node saves two DELs a ping.
	writeBusyList := !p.StatsDisabled && ((kind == tickPing && (len(state.busy) > 0 || p.written == nil || len(p.written.busy) > 0)) ||
		!sameRuns(state.busy, p.written))
	info := wire.NodeInfo{
		Hostname:    p.hostname,
		Identity:    p.Store.Node(),
		StartedAt:   float64(p.started.UnixMicro()) / 1e6,
		PID:         os.Getpid(),
		Tag:         p.Tag,
		Labels:      p.Labels,
		Queues:      state.queues,
		Concurrency: state.concurrency,
		Busy:        state.count,
		Quiet:       state.quiet,
		Version:     p.Version,
	}
	w := store.NodeWrite{Info: info.Encode(), Concurrency: state.concurrency, Busy: state.count, Beat: wire.FormatTime(p.Now()), Quiet: state.quiet,
		Rtt: p.rtt, RSSKB: rssKB(), Handled: sigs}
	if writeBusyList {
		w.BusyList = state.busy
		if w.BusyList == nil {
			w.BusyList = map[string]string{}
		}
	} else if !p.StatsDisabled {
		w.BusyUpdate = changedRuns(state.busy, p.written) // the same runs: their progress
	}
	begin := time.Now()
	err := p.Store.WriteNode(ctx, w)
	p.rtt = time.Since(begin)
	if err != nil {
		p.pending = true
		return err
	}
	p.written, p.lastWrite, p.pending = state, begin, false
	return nil
}

// sameRuns reports whether the busy list written last holds exactly the runs of busy.
func sameRuns(busy map[string]string, o *nodeState) bool {
	if o == nil || len(busy) != len(o.busy) {
		return false
	}
	for id := range busy {
		if _, ok := o.busy[id]; !ok {
			return false
		}
	}
	return true
}

// changedRuns returns the entries of busy whose value differs from the one written last for the
// same run (a job's progress changed); nil when none does. Runs not written last are left out.
func changedRuns(busy map[string]string, o *nodeState) map[string]string {
	if o == nil {
		return nil
	}
	var out map[string]string
	for id, v := range busy {
		if old, ok := o.busy[id]; ok && old != v {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = v
		}
	}
	return out
}

// state reads what the node hash and busy list should say now. Busy count and busy list come
// from one snapshot of the running jobs, so they cannot disagree.
func (p *Pinger) state() *nodeState {
	subs := p.View.Subscriptions()
	s := &nodeState{queues: subs, concurrency: p.View.Concurrency()}
	if p.StatsDisabled {
		s.count = p.View.InFlight()
	} else {
		s.busy = p.View.BusyJobs()
		s.count = len(s.busy)
	}
	s.quiet = p.quiet(subs)
	return s
}

// quiet reports whether the node fetches no more jobs: quieted (Quiet, TSTP, TERM), without
// subscriptions, or stopping (Sidekiq's UI shows a Ruby process quiet in its shutdown too).
func (p *Pinger) quiet(subs []string) bool {
	return p.View.Quieted() || len(subs) == 0 || p.Stopping()
}

// Unregister removes this node from the processes set and deletes its busy list (clean stop).
// The node hash is left to expire, as Sidekiq does.
func (p *Pinger) Unregister(ctx context.Context) error { return p.Store.Unregister(ctx) }

// rssKB is this process' resident set size in KB (Linux), or 0 where it cannot be read.
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte("VmRSS:")) {
			f := bytes.Fields(line[len("VmRSS:"):])
			if len(f) > 0 {
				n, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return n
			}
		}
	}
	return 0
}
