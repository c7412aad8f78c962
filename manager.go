package exq

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exqgo/exq/internal/acker"
	"github.com/exqgo/exq/internal/loop"
	"github.com/exqgo/exq/internal/runctx"
	"github.com/exqgo/exq/internal/scheduler"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Run states: a job ends exactly once, either through its worker (finishing) or through the
// shutdown hand-back (handedBack), whichever claims it first. A job handed back before its
// worker started (still waiting) never runs here.
const (
	stateWaiting int32 = iota
	stateRunning
	stateFinishing
	stateHandedBack
	stateOrphaned // fetched before this node was buried: its job was rescued, its outcome is not ours
)

// run is one job this node has taken from a queue.
type run struct {
	queue   string
	raw     string
	seq     uint64 // fetch order, to hand jobs back oldest-next
	at      int    // its index in manager.running, under manager.mu
	started time.Time
	jid     string // set once decoded, under manager.mu
	lease   string // the job's lease on a slot of its queue's GlobalLimit or of its key, or ""
	// key is the key the keyed fetch served the job under ("" for a job of a queue's own
	// list), scope the lease's scope (store.KeyScope) when it holds a key's lease, and hold
	// whether a failure holds the key (KeyPolicy.hold).
	key, scope string
	hold       bool
	epoch      string                        // the incarnation of this node the fetch ran as
	progress   atomic.Pointer[wire.Progress] // what the job last reported (SetProgress), for the busy list
	stepped    atomic.Bool                   // the job called Step in this run (step.go)
	state      atomic.Int32
	// ctx is the job's context, carrying the job; the manager cancels it (cancelRuns,
	// orphanAll, cancelJID, release). job is the worker's view of the document, and args holds
	// its Args when they fit. They are part of the run so that a job costs one allocation,
	// not six (run, Job, Args, a cancel context and its closure, the context with the job).
	ctx  runctx.Ctx
	job  Job
	args [64]byte
}

// leaseScope is the scope of the run's lease: its key's, or its queue's GlobalLimit.
func (r *run) leaseScope() string {
	if r.scope != "" {
		return r.scope
	}
	return r.queue
}

// id is the job's field in this node's workers hash (made when the busy list is written,
// not for every job).
func (r *run) id() string { return strconv.FormatUint(r.seq, 36) }

// begin moves a waiting job to running; false when it was handed back first.
func (r *run) begin() bool { return r.state.CompareAndSwap(stateWaiting, stateRunning) }

// claim makes the worker the one who writes the job's outcome.
func (r *run) claim() bool { return r.state.CompareAndSwap(stateRunning, stateFinishing) }

// orphan makes the job's outcome no one's: the node was buried, and the job rescued, while it
// was waiting or running.
func (r *run) orphan() bool {
	return r.state.CompareAndSwap(stateWaiting, stateOrphaned) || r.state.CompareAndSwap(stateRunning, stateOrphaned)
}

// orphaned reports whether the job was fetched before this node was buried.
func (r *run) orphaned() bool { return r.state.Load() == stateOrphaned }

// handBack makes the shutdown the one that ends the job, whether or not its worker started.
func (r *run) handBack() bool {
	return r.state.CompareAndSwap(stateWaiting, stateHandedBack) || r.state.CompareAndSwap(stateRunning, stateHandedBack)
}

// manager owns the poll loop and the per-queue concurrency of this node. It is built from
// the parts it uses: the store, the acker (which holds finished jobs until Redis has taken
// their acknowledgement), the function that runs one job, and the context every job's
// context derives from.
type manager struct {
	managerParts

	mu sync.Mutex
	// fetching is held by the poll loop from reading the subscriptions to dispatching what its
	// fetch took, so that unsubscribe can wait for a fetch that still asks for the queue.
	fetching sync.Mutex
	subs     []Queue         // subscriptions, in order
	busy     map[string]int  // running jobs per queue, kept across unsubscribe/subscribe
	asked    map[string]bool // every queue a fetch ever asked for: where this node may have backup entries
	running  []*run          // every run from dispatch to release, in no order (run.at)
	seq      uint64
	leases   uint64 // the last lease/start number a fetch was given
	// lost are the lease numbers of keyed fetches that failed (their reply lost, or never
	// sent): their jobs come back as strays, and reconcile releases these leases on the
	// strays' keys. Kept two lease lives, after which the leases have lapsed anyway.
	lost  []lostLeases
	ended map[string][]string // leases of jobs ended since the last fetch, per queue
	rtt   time.Duration       // how long fetches take, the slow ones weighing most (poll loop only)

	wake      chan struct{} // new jobs announced, or subscriptions changed
	slotFreed chan struct{}
	jobs      sync.WaitGroup
	work      chan *run // hands a job to an idle worker goroutine; a nil one ends it; closed at stop
	idleOnce  sync.Once
	workers   sync.WaitGroup // worker goroutines
	polls     atomic.Uint64  // fetch round trips that succeeded
	quiet     atomic.Bool    // fetch nothing more (TSTP, TERM, Quiet)
}

// managerParts are what a manager is built from.
type managerParts struct {
	jq          managerQueue
	acker       *acker.Acker
	perform     func(*run)        // runs one job to its end, then calls release
	dequeuer    Dequeuer          // Options.Dequeuer; nil: the local concurrency alone
	events      listeners         // RedisLost, RedisBack
	timeout     time.Duration     // bounds each Redis call
	pollTimeout time.Duration     // idle poll interval
	leaseTTL    time.Duration     // how long a lease lives unless renewed: the heartbeat window
	idle        *store.IdleWaiter // wakes the loop for jobs pushed without a wake-up; nil: polling alone
	now         func() time.Time
	log         *slog.Logger
	// alive is the heartbeat's Current and epoch the store's Epoch (mayBegin); set with the
	// heartbeat, before the poll loop starts. nil: no heartbeat, no burial.
	alive func() (bool, <-chan struct{})
	epoch func() string
}

// managerQueue is the JobQueue as the manager uses it (jobqueue.go).
type managerQueue interface {
	// Fetch takes up to N jobs of each request's queue into this node's backup lists.
	Fetch(ctx context.Context, reqs []store.FetchReq, leaseTTL, patience time.Duration) (store.FetchRes, error)
	// BackupList reads this node's backup list of queue, newest first.
	BackupList(ctx context.Context, queue string) ([]string, error)
	// Requeue moves raws from this node's backup list of queue back to the queue's front.
	Requeue(ctx context.Context, queue string, raws []string) (int, error)
	// RecoverBackup moves this node's whole backup list of queue back to the queue.
	RecoverBackup(ctx context.Context, queue string) (int, error)
	// StopWaiting removes this node from the lease waiters of queues.
	StopWaiting(ctx context.Context, queues []string) error
	// LeaseMember names this node's n-th lease; Node is this node's id.
	LeaseMember(n uint64) string
	Node() string
}

func newManager(parts managerParts, queues []Queue) *manager {
	return &manager{
		managerParts: parts,
		subs:         append([]Queue(nil), queues...),
		busy:         map[string]int{},
		asked:        map[string]bool{},
		ended:        map[string][]string{},
		wake:         make(chan struct{}, 1),
		slotFreed:    make(chan struct{}, 1),
		work:         make(chan *run),
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// subscribe starts (or re-sizes) work on q. Jobs of q already running on this node are left
// alone: unlike Exq, subscribing never re-enqueues this node's backup list. Re-sizing keeps
// the queue's cluster-wide limits.
func (m *manager) subscribe(q Queue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.subs {
		if m.subs[i].Name == q.Name {
			m.subs[i].Concurrency = q.Concurrency
			signal(m.wake)
			return
		}
	}
	m.subs = append(m.subs, q)
	signal(m.wake)
}

// unsubscribe stops fetching from q; its running jobs finish normally. It returns once no
// fetch can take a job of q any more: after a fetch that had asked for q before (at most
// RedisTimeout), so a job pushed to q after it returns stays there.
func (m *manager) unsubscribe(name string) {
	m.mu.Lock()
	for i := range m.subs {
		if m.subs[i].Name == name {
			m.subs = append(m.subs[:i], m.subs[i+1:]...)
			break
		}
	}
	m.mu.Unlock()
	m.waitFetch()
}

// waitFetch returns once a fetch under way, if any, has dispatched what it took: one that
// starts after that reads the subscriptions and quiet as they are now.
func (m *manager) waitFetch() {
	m.fetching.Lock()
	//lint:ignore SA2001 an empty critical section: it waits for the fetch under way
	m.fetching.Unlock()
}

// goQuiet makes the node fetch nothing more, and returns once no fetch can take a job any
// more; true for the call that made it quiet.
func (m *manager) goQuiet() bool {
	first := m.quiet.CompareAndSwap(false, true)
	m.waitFetch()
	return first
}

// unsubscribeAll is unsubscribe for every queue.
func (m *manager) unsubscribeAll() {
	m.mu.Lock()
	m.subs = nil
	m.mu.Unlock()
	m.waitFetch()
}

func (m *manager) subscriptions() []Queue {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Queue(nil), m.subs...)
}

func (m *manager) isSubscribed(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.subs {
		if q.Name == name {
			return true
		}
	}
	return false
}

// available lists every subscribed queue with free slots and how many, as far as the
// Dequeuer, if any, allows. limited reports that the Dequeuer held back some free slots: the
// poll loop then polls again after PollTimeout even when nothing was asked for, since what the
// Dequeuer allows may change with time alone.
func (m *manager) available() (reqs []store.FetchReq, limited bool) {
	quiet := m.quiet.Load()
	m.mu.Lock()
	for _, q := range m.subs {
		free := q.Concurrency - m.busy[q.Name]
		if quiet {
			free = 0
		}
		if free > 0 {
			reqs = append(reqs, store.FetchReq{Queue: q.Name, N: free, Held: m.busy[q.Name] + m.acker.HeldIn(q.Name), Limits: q.limits(), Keys: q.Keys.store()})
		}
	}
	m.mu.Unlock()
	if m.dequeuer != nil && len(reqs) > 0 {
		// The Dequeuer is the user's code: call it without holding mu.
		for i, r := range reqs {
			if r.N == 0 {
				continue
			}
			n := clampAvailable(m.dequeuer.Available(r.Queue, r.N), r.N)
			if n < r.N {
				limited = true
			}
			reqs[i].N = n
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := reqs[:0]
	for _, r := range reqs {
		if r.N > 0 {
			if r.Limits.Any() || r.Keys != nil {
				r.First = m.leases + 1
				m.leases += uint64(r.N)
			}
			r.Release = m.ended[r.Queue]
			m.asked[r.Queue] = true
			kept = append(kept, r)
		}
	}
	clear(m.ended) // the acker releases them all in any case
	return kept, limited
}

// unsent releases the leases a fetch may have taken without the node knowing: from first+took
// on (took: how many jobs the fetch returned, 0 when it failed).
func (m *manager) unsent(reqs []store.FetchReq, took func(i int) int) {
	for i, r := range reqs {
		if r.Limits.Global > 0 {
			for n := r.First + uint64(took(i)); n < r.First+uint64(r.N); n++ {
				m.acker.Release(r.Queue, m.jq.LeaseMember(n))
			}
		}
	}
}

// noteLost notes the lease numbers of the keyed requests of a fetch that failed: their leases
// are on keys the node cannot know before it sees the jobs, which reconcile finds as strays
// (releaseLost). Notes older than two lease lives go: their leases have lapsed by then.
func (m *manager) noteLost(reqs []store.FetchReq) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.lost[:0]
	for _, l := range m.lost {
		if now.Sub(l.at) < 2*keyLeaseLife(m.leaseTTL) {
			kept = append(kept, l)
		}
	}
	m.lost = kept
	for _, r := range reqs {
		if r.Keys != nil {
			m.lost = append(m.lost, lostLeases{queue: r.Queue, first: r.First, n: r.N, at: now})
		}
	}
}

// lostLeases are the lease numbers first … first+n-1 of a keyed fetch of queue that failed at.
type lostLeases struct {
	queue string
	first uint64
	n     int
	at    time.Time
}

// keyLeaseLife is how long a key's lease lives unless renewed: two heartbeat windows
// (fetch_keyed.lua).
func keyLeaseLife(window time.Duration) time.Duration { return 2 * window }

// releaseLost releases, on the keys of strays (keyed jobs of queue q that a failed fetch took
// and reconcile handed back), the leases that failed keyed fetches of q may have taken: the key
// is free again now rather than when they lapse. A lease number is a fetch's own, so none of
// them is a running job's.
func (m *manager) releaseLost(q string, strays []string) {
	m.mu.Lock()
	var lost []lostLeases
	for _, l := range m.lost {
		if l.queue == q {
			lost = append(lost, l)
		}
	}
	m.mu.Unlock()
	if len(lost) == 0 {
		return
	}
	keys := map[string]bool{}
	for _, raw := range strays {
		if h, err := wire.DecodeHeader(raw); err == nil && h.Key != "" {
			keys[h.Key] = true
		}
	}
	for key := range keys {
		for _, l := range lost {
			for n := l.first; n < l.first+uint64(l.n); n++ {
				m.acker.Release(store.KeyScope(q, key), m.jq.LeaseMember(n))
			}
		}
	}
}

// stopWaiting removes this node from the lease waiters of every queue it asked for (Stop), so
// that the other nodes need not wait for its patience to run out to use every slot.
func (m *manager) stopWaiting(ctx context.Context) {
	m.mu.Lock()
	queues := m.askedQueues()
	m.mu.Unlock()
	if err := m.jq.StopWaiting(ctx, queues); err != nil {
		m.log.Warn("exq: stop: could not leave the lease waiters; the others take every slot again within this node's patience", "error", err)
	}
}

// minPatience is the least patience a node gives: a pause of the node (a GC, a busy machine)
// or of Redis shorter than this does not drop it from the nodes waiting for a slot, so a node
// whose fetch reaches Redis first after such a pause cannot take more than its share.
const minPatience = 500 * time.Millisecond

// patience is how long after a fetch that a GlobalLimit held back this node still counts as
// waiting for a slot: twice its poll interval and fetch round trip, so a node behind a slow
// link keeps its place between its polls, and at least minPatience. Only the poll loop calls
// it.
func (m *manager) patience() time.Duration {
	return max(2*(m.pollTimeout+m.rtt), minPatience)
}

// heldLeases lists, per queue, the leases of the jobs running now: what the heartbeat renews.
func (m *manager) heldLeases() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out map[string][]string
	for _, r := range m.running {
		if r.lease != "" {
			if out == nil {
				out = map[string][]string{}
			}
			out[r.leaseScope()] = append(out[r.leaseScope()], r.lease)
		}
	}
	return out
}

// Poll-loop back-off while Redis fails: no spinning, and a quick return once it answers.
const (
	minErrorBackoff = 100 * time.Millisecond
	maxErrorBackoff = 500 * time.Millisecond
)

// maxIdlePoll bounds how far an idle node backs its polls off (see idleCap).
const maxIdlePoll = 5 * time.Second

// idleWaitBlock is how long the blocking idle wait's BLMOVE blocks (at least idleCap): a push
// ends it at once whatever its length, so a long block only saves re-arming commands (one
// per armed queue per block).
const idleWaitBlock = 30 * time.Second

// idleCap is the longest wait between the polls of an idle node: 50 × PollTimeout, at most
// maxIdlePoll but never less than PollTimeout. It bounds the pickup delay of a job whose
// wake-up was lost or never sent (pushed by Sidekiq or Exq, or by a node whose Redis user may
// not publish): 5 s with the default PollTimeout, 1 s with PollTimeout 20 ms.
func idleCap(pollTimeout time.Duration) time.Duration {
	return max(pollTimeout, min(50*pollTimeout, maxIdlePoll))
}

// run is the poll loop. It fetches, for every subscribed queue with free slots, up to that
// many jobs in one round trip; polls again at once when it found jobs; otherwise waits for
// the idle wait, a wake-up from an enqueue, or a freed slot. The idle wait starts at
// PollTimeout and doubles after every empty poll the timer ended, up to idleCap; a wake-up, a
// freed slot, a subscription change or a job found sets it back to PollTimeout. Enqueues
// through exq wake the node, so polling only catches what no wake-up announced.
func (m *manager) run(ctx context.Context) {
	log := m.log
	timer := time.NewTimer(0)
	defer timer.Stop()
	defer m.idle.Stop()
	// wait reports false when ctx ended, and whether something other than the timer ended it.
	wait := func(d time.Duration) (ok, woken bool) {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return false, false
		case <-timer.C:
			return true, false
		case <-m.wake:
		case <-m.slotFreed:
		}
		return true, true
	}
	idle, idleMax := m.pollTimeout, idleCap(m.pollTimeout)
	backoff := time.Duration(0)
	var lostAt time.Time
	reconcile := false
	lastReap := time.Now()
	for ctx.Err() == nil {
		if time.Since(lastReap) >= workerIdle {
			m.reapIdleWorkers()
			lastReap = time.Now()
		}
		if reconcile {
			// The failed fetch may have moved jobs whose reply never came back: put them back
			// on their queues before fetching again.
			if err := m.reconcile(ctx); err != nil {
				backoff = min(max(backoff*2, minErrorBackoff), maxErrorBackoff)
				if !loop.Sleep(ctx, backoff) {
					return
				}
				continue
			}
			reconcile = false
		}
		m.fetching.Lock()
		reqs, limited := m.available()
		if len(reqs) == 0 {
			m.fetching.Unlock()
			m.idle.DisarmAll()
			// Every queue is full (or none is subscribed): nothing to do until a slot frees
			// or subscriptions change; the timer is only a safety net. A Dequeuer that held
			// slots back may allow them later without either: poll as an idle node does.
			d := time.Minute
			if limited {
				d = m.pollTimeout
			}
			if ok, _ := wait(d); !ok {
				return
			}
			idle = m.pollTimeout
			continue
		}
		// The fetch itself is not cancelled by Stop: a script that ran must have its jobs
		// dispatched, or they would sit in the backup list until the next recovery.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.timeout)
		began := time.Now()
		res, err := m.jq.Fetch(fctx, reqs, m.leaseTTL, m.patience())
		cancel()
		if errors.Is(err, errBuried) {
			// Taken for dead while it could not beat: the fetch took nothing, and fetches
			// nothing until the heartbeat has dropped the runs from before and joined again.
			m.unsent(reqs, func(int) int { return 0 })
			m.fetching.Unlock()
			if !loop.Sleep(ctx, m.pollTimeout) {
				return
			}
			continue
		}
		if err == nil {
			m.rtt = max(time.Since(began), m.rtt*7/8)
		}
		if err != nil {
			m.unsent(reqs, func(int) int { return 0 })
			m.noteLost(reqs)
			m.fetching.Unlock()
			reconcile = true
			idle = m.pollTimeout
			backoff = min(max(backoff*2, minErrorBackoff), maxErrorBackoff)
			if backoff == minErrorBackoff {
				log.Warn("exq: fetching jobs failed; backing off until Redis answers", "error", err)
				lostAt = time.Now()
				if m.events.has() {
					m.events.emit(Event{Kind: RedisLost, Err: err})
				}
			}
			if !loop.Sleep(ctx, backoff) {
				return
			}
			continue
		}
		m.polls.Add(1)
		if res.Strays(reqs) {
			// An earlier fetch ran without its reply reaching us: put its jobs back next.
			log.Warn("exq: a backup list holds jobs no worker of this node has; putting them back on their queue")
			reconcile = true
			m.unsent(reqs, func(i int) int { return len(res.Jobs[i]) })
		}
		m.idle.Arm(reqs, res)
		dispatched := m.dispatch(reqs, res)
		m.fetching.Unlock()
		if backoff != 0 {
			log.Info("exq: fetching jobs works again")
			backoff = 0
			if m.events.has() {
				m.events.emit(Event{Kind: RedisBack, Duration: time.Since(lostAt)})
			}
		}
		if dispatched > 0 {
			idle = m.pollTimeout
			m.gather(ctx)
			continue
		}
		d := idle
		if limited || res.LimitHeld() {
			// Slots the Dequeuer held back, or a queue's limit holding waiting jobs back: what
			// they allow changes with time or with other nodes, which announce nothing.
			d = m.pollTimeout
		}
		ok, woken := wait(res.NextPoll(d))
		if !ok {
			return
		}
		if woken {
			idle = m.pollTimeout
		} else {
			idle = min(2*idle, idleMax)
		}
	}
}

// reconcile moves back to their queues the entries of this node's backup lists that no
// worker holds: jobs a fetch moved while its reply was lost (a cut connection, a timeout).
// It runs in the poll loop, so no fetch adds entries meanwhile. A job is held from dispatch
// until release, and handed to the acker before release, so reading the running jobs first
// and the acker's second never misses one.
func (m *manager) reconcile(ctx context.Context) error {
	m.mu.Lock()
	held := map[string]int{}
	for _, r := range m.running {
		if !r.orphaned() { // its entry was rescued; another run's may be there
			held[r.raw]++
		}
	}
	queues := m.askedQueues()
	m.mu.Unlock()
	for raw, n := range m.acker.Held() {
		held[raw] += n
	}
	for _, q := range queues {
		cctx, cancel := context.WithTimeout(ctx, m.timeout)
		raws, err := m.jq.BackupList(cctx, q)
		cancel()
		if err != nil {
			return err
		}
		var orphans []string // newest first, as the list holds them
		for _, raw := range raws {
			if held[raw] > 0 {
				held[raw]--
			} else {
				orphans = append(orphans, raw)
			}
		}
		if len(orphans) == 0 {
			continue
		}
		cctx, cancel = context.WithTimeout(ctx, m.timeout)
		moved, err := m.jq.Requeue(cctx, q, orphans)
		cancel()
		if err != nil {
			return err
		}
		m.releaseLost(q, orphans)
		m.log.Warn("exq: put back jobs a failed fetch had taken", "queue", q, "jobs", moved)
	}
	return nil
}

// gatherWait bounds how long the loop waits, after a fetch that found jobs, for more slots to
// free before it fetches again.
const gatherWait = time.Millisecond

// gather waits, briefly, until at least half of the slots are free: under load, fetching as
// soon as one slot frees would mean a round trip per job; waiting a moment fills the next
// fetch. An idle node has its slots free and does not wait at all.
func (m *manager) gather(ctx context.Context) {
	var timer *time.Timer
	for {
		m.mu.Lock()
		free, total := 0, 0
		for _, q := range m.subs {
			total += q.Concurrency
			free += max(q.Concurrency-m.busy[q.Name], 0)
		}
		m.mu.Unlock()
		if 2*free >= total {
			return
		}
		if timer == nil {
			timer = time.NewTimer(gatherWait)
			defer timer.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-m.slotFreed:
		}
	}
}

// dispatch starts a worker goroutine for every fetched job.
func (m *manager) dispatch(reqs []store.FetchReq, fetched store.FetchRes) int {
	n := 0
	res := fetched.Jobs
	m.mu.Lock()
	var runs []*run
	for i, jobs := range res {
		q := reqs[i].Queue
		now := m.now()
		for j, raw := range jobs {
			m.seq++
			// Its context is no child of a node context (registering each run with one parent
			// took a lock all workers share): the manager holds every run and cancels them.
			r := &run{queue: q, raw: raw, seq: m.seq, started: now, epoch: fetched.Epoch}
			if reqs[i].Limits.Global > 0 {
				r.lease = m.jq.LeaseMember(reqs[i].First + uint64(j))
			}
			if k := reqs[i].Keys; k != nil && j < len(fetched.JobKeys[i]) && fetched.JobKeys[i][j] != "" {
				r.key = fetched.JobKeys[i][j]
				r.hold = k.Hold
				if k.Concurrency > 0 {
					// The keyed jobs come first in the reply, numbered from First as taken.
					r.lease, r.scope = m.jq.LeaseMember(reqs[i].First+uint64(j)), store.KeyScope(q, r.key)
				}
			}
			r.at = len(m.running)
			m.running = append(m.running, r)
			runs = append(runs, r)
			n++
		}
		m.busy[q] += len(jobs)
	}
	m.jobs.Add(len(runs))
	m.mu.Unlock()
	if m.dequeuer != nil {
		// Before any job starts, so Finished never comes before its Fetched.
		for i, jobs := range res {
			if len(jobs) > 0 {
				m.dequeuer.Fetched(reqs[i].Queue, len(jobs))
			}
		}
	}
	for _, r := range runs {
		m.start(r)
	}
	return n
}

// workerIdle is how often the poll loop ends the worker goroutines that wait for a job, so
// that a burst's goroutines do not outlive it for long.
const workerIdle = 10 * time.Second

// start gives r to an idle worker goroutine, or starts one. Workers live on from job to job:
// a goroutine per job grew a fresh stack (and paid the scheduler) for every job.
func (m *manager) start(r *run) {
	select {
	case m.work <- r:
	default:
		m.workers.Add(1)
		go m.worker(r)
	}
}

// worker runs jobs until it is reaped (a nil run) or the node stops (work closed). It waits
// on the one channel: a select over three cost more than the job's hand-off itself, and a
// timer in it a timer-heap insertion and removal for every job.
func (m *manager) worker(r *run) {
	defer m.workers.Done()
	for r != nil {
		m.perform(r)
		r = <-m.work
	}
}

// reapIdleWorkers ends every worker goroutine that is waiting for a job at this moment. It
// ends: only the poll loop starts workers, and it is the caller.
func (m *manager) reapIdleWorkers() {
	for {
		select {
		case m.work <- nil:
		default:
			return
		}
	}
}

// stopWorkers ends the idle worker goroutines and tells the Dequeuer, once, that the node
// stopped; call it once no job runs and the poll loop has ended (it closes work, which only
// the poll loop sends on).
func (m *manager) stopWorkers() {
	m.idleOnce.Do(func() {
		close(m.work)
		if m.dequeuer != nil {
			m.dequeuer.Stopped()
		}
	})
	m.workers.Wait()
}

// release frees the job's slot; every path of process ends here. A job's lease goes to the
// acker, which removes it at once, so every node sees the slot free at its next fetch, and to
// this node's next fetch, which must not count it as this node's while the acker's call is on
// its way.
func (m *manager) release(r *run) {
	r.ctx.Cancel(nil)
	m.mu.Lock()
	m.busy[r.queue]--
	last := m.running[len(m.running)-1] // r's place goes to the last run: no map, no hashing
	last.at, m.running[r.at] = r.at, last
	m.running[len(m.running)-1] = nil
	m.running = m.running[:len(m.running)-1]
	lease := r.lease // under mu: orphanAll clears it
	if lease != "" && r.scope == "" {
		m.ended[r.queue] = append(m.ended[r.queue], lease)
	}
	m.mu.Unlock()
	if lease != "" {
		m.acker.Release(r.leaseScope(), lease)
	}
	if m.dequeuer != nil {
		m.dequeuer.Finished(r.queue)
	}
	signal(m.slotFreed)
	m.jobs.Done()
}

// orphanAll is what a node does when its heartbeat finds it was buried: every job it runs or
// has yet to start was rescued, and may run (or runs) elsewhere. Each is marked so that its
// outcome is not written (its backup entry is gone; another run's may be there), its context
// is cancelled with errBuried, and its lease is dropped: the lease lapsed with the node's
// window, and the slot may be another run's now. It returns how many jobs it dropped.
func (m *manager) orphanAll() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.running {
		if m.orphanLocked(r) {
			n++
		}
	}
	return n
}

// mayBegin reports whether run r may begin, before any of its job's code runs: not when this
// node was taken for dead since r's fetch (r is orphaned, as orphanAll does), and, when the
// node cannot tell (paused, or its beats failing, for most of its window: heartbeat.Current),
// only once its next beat says it is alive. A node paused (SIGSTOP, a frozen VM) past its
// window just after a fetch would otherwise begin, on waking, jobs that were rescued and ran
// elsewhere meanwhile, beside their keys' next jobs. The wait ends too when r's context is
// cancelled (a burial, the end of the shutdown's grace): r.begin decides then.
func (m *manager) mayBegin(r *run) bool {
	if m.alive == nil {
		return true
	}
	for {
		ok, next := m.alive()
		if r.epoch != m.epoch() {
			// Buried since its fetch and joined again (the new incarnation is alive): the job
			// was rescued with the old one's backup lists.
			m.mu.Lock()
			m.orphanLocked(r)
			m.mu.Unlock()
			return false
		}
		if ok {
			return true
		}
		select {
		case <-next:
		case <-r.ctx.Done():
			return true
		}
	}
}

// orphanLocked makes r's outcome no one's (run.orphan), drops its lease and cancels its
// context with errBuried; false when r had already ended or been claimed. Under m.mu.
func (m *manager) orphanLocked(r *run) bool {
	if !r.orphan() {
		return false
	}
	r.lease = ""
	r.ctx.Cancel(errBuried)
	return true
}

// setJID records the decoded jid of a run, so that a CANCEL signal can find it.
func (m *manager) setJID(r *run, jid string) {
	m.mu.Lock()
	r.jid = jid
	m.mu.Unlock()
}

// cancelRuns cancels the context of every run of this node with cause: Stop calls it when
// the grace period is over, and once every worker has returned. The poll loop, which alone
// dispatches runs, has ended by then, so no run comes after it.
func (m *manager) cancelRuns(cause error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.running {
		r.ctx.Cancel(cause)
	}
}

// cancelJID cancels the context of the running job jid with cause errCanceled. It reports
// whether such a job runs on this node.
func (m *manager) cancelJID(jid string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	found := false
	for _, r := range m.running {
		if r.jid == jid && jid != "" {
			r.ctx.Cancel(errCanceled)
			found = true
		}
	}
	return found
}

// busyJobs renders the running jobs for this node's workers hash, by run id.
func (m *manager) busyJobs() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.running))
	for _, r := range m.running {
		id := r.id()
		out[id] = wire.Busy(r.queue, r.raw, r.started, m.jq.Node(), id, r.progress.Load())
	}
	return out
}

// concurrency is the sum of the subscribed queues' limits.
func (m *manager) concurrency() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, q := range m.subs {
		n += q.Concurrency
	}
	return n
}

// inFlight counts the jobs running now.
func (m *manager) inFlight() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.running)
}

// handBackAll gives every job that is still running back to the front of its queue (shutdown
// after the grace period). Jobs whose worker is already writing an outcome are left to it.
func (m *manager) handBackAll(ctx context.Context) {
	m.mu.Lock()
	byQueue := map[string][]*run{}
	for _, r := range m.running {
		if r.handBack() {
			byQueue[r.queue] = append(byQueue[r.queue], r)
		}
	}
	m.mu.Unlock()
	for q, runs := range byQueue {
		// Newest first: each is pushed onto the consumption end, so the oldest runs next.
		sort.Slice(runs, func(i, j int) bool { return runs[i].seq > runs[j].seq })
		raws := make([]string, len(runs))
		for i, r := range runs {
			raws[i] = r.raw
		}
		moved, err := m.jq.Requeue(ctx, q, raws)
		if err != nil {
			m.log.Error("exq: stop: could not hand unfinished jobs back to their queue; they stay in this node's backup list until it is recovered",
				"queue", q, "jobs", len(raws), "error", err)
			continue
		}
		m.log.Info("exq: stop: handed unfinished jobs back to the front of their queue", "queue", q, "jobs", moved)
	}
}

// askedQueues lists every queue a fetch of this node asked for: the only queues where it can
// have backup entries. Call with mu held.
func (m *manager) askedQueues() []string {
	queues := make([]string, 0, len(m.asked))
	for q := range m.asked {
		queues = append(queues, q)
	}
	return queues
}

// emptyBackups is the proof that this node's backup lists were seen empty after its last job
// ended: only sweep makes one, and only with one may a stopping node leave the heartbeats
// (a node that signed off with jobs in its backup lists would strand them forever).
type emptyBackups struct{}

// sweep moves whatever is left in this node's backup lists back to their queues. It runs at
// the end of Stop, when no job of this node runs any more, so what is left there was fetched
// but never dispatched (a fetch whose reply was lost). It covers every queue a fetch ever
// asked for, whether or not jobs came back: a fetch whose reply was lost may have taken some.
// It returns the proof that every backup list of this node is now empty, or nil.
func (m *manager) sweep(ctx context.Context) *emptyBackups {
	m.mu.Lock()
	queues := m.askedQueues()
	m.mu.Unlock()
	empty := true
	for _, q := range queues {
		if n, err := m.jq.RecoverBackup(ctx, q); err != nil {
			m.log.Error("exq: stop: could not empty the backup list", "queue", q, "error", err)
			empty = false
		} else if n > 0 {
			m.log.Warn("exq: stop: moved jobs left in the backup list back to their queue", "queue", q, "jobs", n)
		}
	}
	if !empty {
		return nil
	}
	return &emptyBackups{}
}

// listen wakes the poll loop when an enqueue announces jobs in a subscribed queue, and hands
// announcements of scheduled and retry jobs (payloads starting with scheduler.DueWakePrefix, which no
// queue name can) to due, when set: the scheduler's. go-redis re-subscribes by itself after a
// reconnect; wake-ups missed meanwhile are covered by polling.
func (m *manager) listen(w *store.Wakeups, due func(payload string)) {
	w.Each(func(payload string) {
		if strings.HasPrefix(payload, scheduler.DueWakePrefix) {
			if due != nil {
				due(payload)
			}
			return
		}
		if m.isSubscribed(payload) {
			signal(m.wake)
		}
	})
}

// pingView is the manager as the pinger sees it.
type pingView struct{ m *manager }

func (v pingView) Subscriptions() []string {
	subs := v.m.subscriptions()
	names := make([]string, len(subs))
	for i, q := range subs {
		names[i] = q.Name
	}
	return names
}

func (v pingView) InFlight() int               { return v.m.inFlight() }
func (v pingView) Concurrency() int            { return v.m.concurrency() }
func (v pingView) BusyJobs() map[string]string { return v.m.busyJobs() }
func (v pingView) Quieted() bool               { return v.m.quiet.Load() }
