// Package fakequeue is the engine's JobQueue without Redis, for unit tests of the order in
// which a node writes a job's outcome. It keeps the queues, this node's backup lists, the
// retry and dead sets, the unique locks and the recorded batch and workflow outcomes in
// memory, with the same rules as the scripts of internal/store (a write for a job no longer in
// the backup list, or for a run of a buried incarnation, changes nothing), and logs every
// call that happened, in order. Any call can be made to fail, to happen and then lose its
// reply, or to wait until the test lets it go (Inject), so a test drives a lost reply or a
// slow write without timing.
//
// It is a package of its own, not part of testutil: internal/store's tests use testutil,
// and this package uses internal/store's types.
package fakequeue

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/exqgo/exq/internal/store"
)

// Fault is what an injected fault does to one call.
type Fault int

const (
	// Fail makes the call return ErrInjected without doing anything.
	Fail Fault = iota + 1
	// LoseReply makes the call happen and then return ErrInjected, as a reply lost on its
	// way back (a cut connection, a timeout after the script ran).
	LoseReply
	// Hold makes the call wait until the test releases it (Held), then happen.
	Hold
)

// ErrInjected is the error of a call that an injected Fail or LoseReply hit.
var ErrInjected = errors.New("fakequeue: injected failure")

// Call is one call that happened (its effect applied, whether or not its reply came back).
type Call struct {
	Method                             string
	Queue, Raw, Doc, Token, JID, Epoch string
	At                                 time.Time        // Retry: when the job is due; Dead: now
	Item                               store.SettleItem // Settle
	// In names the call a Settle was part of ("AckMany" for a success's transition recorded in
	// its acknowledgement, atomic with it); empty for a call of its own.
	In string
	// Changed reports whether the call changed anything: false for a repeat of a write that
	// already happened, or for a run of a buried incarnation.
	Changed bool
}

// Entry is a job in the retry or the dead set.
type Entry struct {
	Doc string
	At  time.Time
}

// JobQueue is the fake. The zero value is not usable: call New.
type JobQueue struct {
	node string

	mu      sync.Mutex
	faults  map[string][]Fault
	held    map[string]chan chan struct{}
	calls   []Call
	queues  map[string][]string // front first
	backup  map[string][]string
	retry   []Entry
	dead    []Entry
	settled map[string]bool // batch+jid or workflow+job: recorded once
	locks   map[string]string
	epoch   string
	buried  map[string]bool
}

// New returns an empty JobQueue for node, running as incarnation "1".
func New(node string) *JobQueue {
	return &JobQueue{node: node, faults: map[string][]Fault{}, held: map[string]chan chan struct{}{},
		queues: map[string][]string{}, backup: map[string][]string{}, settled: map[string]bool{},
		locks: map[string]string{}, epoch: "1", buried: map[string]bool{}}
}

// Inject makes the next calls of method (its name: "Ack", "Retry", "Settle"...) meet faults,
// one fault per call, in order; later calls are normal again.
func (q *JobQueue) Inject(method string, faults ...Fault) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.faults[method] = append(q.faults[method], faults...)
	if slices.Contains(faults, Hold) && q.held[method] == nil {
		q.held[method] = make(chan chan struct{}, len(faults))
	}
}

// Held delivers, for each held call of method, the channel that lets it go on: close it.
func (q *JobQueue) Held(method string) <-chan chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held[method] == nil {
		q.held[method] = make(chan chan struct{}, 8)
	}
	return q.held[method]
}

// Epoch is the incarnation the node's fetches run as now.
func (q *JobQueue) Epoch() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.epoch
}

// Bury takes the node for dead, as another node's heartbeat would: its backup lists go back
// to their queues (the rescue), the runs of the current incarnation write nothing any more,
// and the node runs as a new incarnation from now on.
func (q *JobQueue) Bury() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.buried[q.epoch] = true
	n, _ := strconv.Atoi(q.epoch)
	q.epoch = strconv.Itoa(n + 1)
	for name, raws := range q.backup {
		q.queues[name] = append(slices.Clone(raws), q.queues[name]...)
		delete(q.backup, name)
	}
}

// Push adds raw to the end of queue.
func (q *JobQueue) Push(queue, raw string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queues[queue] = append(q.queues[queue], raw)
}

// Take moves raw into this node's backup list of queue, as a fetch does, and returns the
// incarnation the fetch ran as.
func (q *JobQueue) Take(queue, raw string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.queues[queue], raw); i >= 0 {
		q.queues[queue] = slices.Delete(q.queues[queue], i, i+1)
	}
	q.backup[queue] = append(q.backup[queue], raw)
	return q.epoch
}

// Lock makes jid hold the unique lock token.
func (q *JobQueue) Lock(token, jid string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.locks[token] = jid
}

// Locked returns the jid holding token, or "".
func (q *JobQueue) Locked(token string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.locks[token]
}

// Calls returns the calls that happened, in order.
func (q *JobQueue) Calls() []Call {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.calls)
}

// Methods returns the names of the calls that happened, in order.
func (q *JobQueue) Methods() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, len(q.calls))
	for i, c := range q.calls {
		out[i] = c.Method
	}
	return out
}

// Queue returns the jobs of queue, front first.
func (q *JobQueue) Queue(queue string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.queues[queue])
}

// Backup returns this node's backup list of queue.
func (q *JobQueue) Backup(queue string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.backup[queue])
}

// Retries returns the retry set, in the order the jobs were added.
func (q *JobQueue) Retries() []Entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.retry)
}

// DeadJobs returns the dead set, in the order the jobs were added.
func (q *JobQueue) DeadJobs() []Entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.dead)
}

// call applies the next fault of method around do, which runs under the lock and returns the
// call to log (nil: nothing happened).
func (q *JobQueue) call(method string, do func() *Call) error {
	q.mu.Lock()
	var f Fault
	if fs := q.faults[method]; len(fs) > 0 {
		f, q.faults[method] = fs[0], fs[1:]
	}
	if f == Hold {
		ch := q.held[method]
		q.mu.Unlock()
		release := make(chan struct{})
		ch <- release
		<-release
		q.mu.Lock()
	}
	defer q.mu.Unlock()
	if f == Fail {
		return ErrInjected
	}
	if c := do(); c != nil {
		c.Method = method
		q.calls = append(q.calls, *c)
	}
	if f == LoseReply {
		return ErrInjected
	}
	return nil
}

// inBackup reports whether raw is in the backup list of queue. Call with mu held.
func (q *JobQueue) inBackup(queue, raw string) bool { return slices.Contains(q.backup[queue], raw) }

// takeBackup removes one raw from the backup list of queue; false when it is not there.
// Call with mu held.
func (q *JobQueue) takeBackup(queue, raw string) bool {
	i := slices.Index(q.backup[queue], raw)
	if i < 0 {
		return false
	}
	q.backup[queue] = slices.Delete(q.backup[queue], i, i+1)
	return true
}

// unlock releases token if jid holds it. Call with mu held.
func (q *JobQueue) unlock(token, jid string) {
	if token != "" && q.locks[token] == jid {
		delete(q.locks, token)
	}
}

// Ack takes a job that succeeded off its backup list and releases its lock (ack.lua).
func (q *JobQueue) Ack(_ context.Context, queue, raw, token, jid, epoch string) error {
	return q.call("Ack", func() *Call {
		c := &Call{Queue: queue, Raw: raw, Token: token, JID: jid, Epoch: epoch}
		if !q.buried[epoch] {
			c.Changed = q.takeBackup(queue, raw)
			q.unlock(token, jid)
		}
		return c
	})
}

// AckMany acknowledges jobs and releases leases, all or nothing (ack_batch.lua).
func (q *JobQueue) AckMany(_ context.Context, batch []store.AckReq) ([]bool, error) {
	err := q.call("AckMany", func() *Call {
		for _, r := range batch {
			if r.Lease != "" || q.buried[r.Epoch] {
				continue
			}
			if r.Flow != nil && q.inBackup(r.Queue, r.Raw) {
				// ack_settle.lua: the transitions first, then the LREM, in one atomic call; a job
				// no longer in its backup list records none.
				for _, it := range r.Flow.Items {
					c := q.settle(it)
					c.In = "AckMany"
					q.calls = append(q.calls, *c)
				}
			}
			q.calls = append(q.calls, Call{Method: "AckMany", Queue: r.Queue, Raw: r.Raw, Epoch: r.Epoch,
				Changed: q.takeBackup(r.Queue, r.Raw)})
		}
		return nil
	})
	if err != nil {
		failed := make([]bool, len(batch))
		for i := range failed {
			failed[i] = true
		}
		return failed, err
	}
	return nil, nil
}

// ReleaseLease removes a lease; the fake keeps none.
func (q *JobQueue) ReleaseLease(context.Context, string, string) error {
	return q.call("ReleaseLease", func() *Call { return nil })
}

// Retry moves the job to the retry set, due at at (retry.lua).
func (q *JobQueue) Retry(_ context.Context, queue, raw, doc string, at time.Time, epoch string) (bool, error) {
	var moved bool
	err := q.call("Retry", func() *Call {
		c := &Call{Queue: queue, Raw: raw, Doc: doc, At: at, Epoch: epoch}
		if !q.buried[epoch] && q.takeBackup(queue, raw) {
			q.retry = append(q.retry, Entry{Doc: doc, At: at})
			moved, c.Changed = true, true
		}
		return c
	})
	return moved, err
}

// RetryKeyed is Retry for a keyed job (retry_keyed.lua); the fake keeps it with the retries.
func (q *JobQueue) RetryKeyed(ctx context.Context, queue, _, _ string, _ bool, raw, doc string, at time.Time, epoch string) (bool, error) {
	return q.Retry(ctx, queue, raw, doc, at, epoch)
}

// Dead moves the job to the dead set and releases its lock (dead.lua). The fake keeps every
// dead job: it trims nothing.
func (q *JobQueue) Dead(_ context.Context, queue, raw, doc string, now time.Time, _ time.Duration, _ int, token, jid, epoch string) (bool, error) {
	var moved bool
	err := q.call("Dead", func() *Call {
		c := &Call{Queue: queue, Raw: raw, Doc: doc, At: now, Token: token, JID: jid, Epoch: epoch}
		if !q.buried[epoch] && q.takeBackup(queue, raw) {
			q.dead = append(q.dead, Entry{Doc: doc, At: now})
			q.unlock(token, jid)
			moved, c.Changed = true, true
		}
		return c
	})
	return moved, err
}

// Settle records a run's outcome in its batch or workflow, once per job (batch_settle.lua,
// workflow_settle.lua). Its reply is empty: the fake fires no callbacks.
func (q *JobQueue) Settle(it store.SettleItem, _ func() time.Time, _ time.Duration) ([]any, error) {
	err := q.call("Settle", func() *Call { return q.settle(it) })
	return nil, err
}

// settle records it once per job and reports the Settle call it makes.
func (q *JobQueue) settle(it store.SettleItem) *Call {
	key := "w:" + it.Workflow + ":" + it.WorkflowJob
	if it.Batch != "" && len(it.Runs) > 0 {
		key = "b:" + it.Batch + ":" + it.Runs[0][0]
	}
	c := &Call{Method: "Settle", Item: it, Changed: !q.settled[key]}
	q.settled[key] = true
	return c
}

// Unlock releases token if jid holds it.
func (q *JobQueue) Unlock(_ context.Context, token, jid string) error {
	return q.call("Unlock", func() *Call {
		c := &Call{Token: token, JID: jid, Changed: token != "" && q.locks[token] == jid}
		q.unlock(token, jid)
		return c
	})
}

// PutBack moves raw from the backup list back to the end of its queue.
func (q *JobQueue) PutBack(_ context.Context, queue, raw string) (bool, error) {
	var moved bool
	err := q.call("PutBack", func() *Call {
		c := &Call{Queue: queue, Raw: raw}
		if q.takeBackup(queue, raw) {
			q.queues[queue] = append(q.queues[queue], raw)
			moved, c.Changed = true, true
		}
		return c
	})
	return moved, err
}

// BackupListName names the backup list of queue.
func (q *JobQueue) BackupListName(queue string) string { return "backup:" + q.node + ":" + queue }

// Fetch moves up to N jobs of each request's queue, from its front, into the backup list.
// The fake knows no limits: it hands out no leases and holds nothing back.
func (q *JobQueue) Fetch(_ context.Context, reqs []store.FetchReq, _, _ time.Duration) (store.FetchRes, error) {
	res := store.FetchRes{Jobs: make([][]string, len(reqs)), BackupLen: make([]int, len(reqs))}
	err := q.call("Fetch", func() *Call {
		res.Epoch = q.epoch
		for i, r := range reqs {
			n := min(r.N, len(q.queues[r.Queue]))
			res.Jobs[i] = slices.Clone(q.queues[r.Queue][:n])
			q.queues[r.Queue] = q.queues[r.Queue][n:]
			q.backup[r.Queue] = append(q.backup[r.Queue], res.Jobs[i]...)
			res.BackupLen[i] = len(q.backup[r.Queue])
		}
		return &Call{Epoch: q.epoch, Changed: true}
	})
	if err != nil {
		return store.FetchRes{}, err
	}
	return res, nil
}

// BackupList reads the backup list of queue, newest first.
func (q *JobQueue) BackupList(_ context.Context, queue string) ([]string, error) {
	var out []string
	err := q.call("BackupList", func() *Call {
		out = slices.Clone(q.backup[queue])
		slices.Reverse(out)
		return nil
	})
	return out, err
}

// Requeue moves raws from the backup list of queue to the queue's front, the last first.
func (q *JobQueue) Requeue(_ context.Context, queue string, raws []string) (int, error) {
	n := 0
	err := q.call("Requeue", func() *Call {
		for _, raw := range raws {
			if q.takeBackup(queue, raw) {
				q.queues[queue] = append([]string{raw}, q.queues[queue]...)
				n++
			}
		}
		return &Call{Queue: queue, Changed: n > 0}
	})
	return n, err
}

// RecoverBackup moves the whole backup list of queue back to the queue's front.
func (q *JobQueue) RecoverBackup(_ context.Context, queue string) (int, error) {
	n := 0
	err := q.call("RecoverBackup", func() *Call {
		n = len(q.backup[queue])
		q.queues[queue] = append(q.backup[queue], q.queues[queue]...)
		delete(q.backup, queue)
		return &Call{Queue: queue, Changed: n > 0}
	})
	return n, err
}

// StopWaiting does nothing: the fake keeps no lease waiters.
func (q *JobQueue) StopWaiting(context.Context, []string) error {
	return q.call("StopWaiting", func() *Call { return nil })
}

// LeaseMember names the node's n-th lease.
func (q *JobQueue) LeaseMember(n uint64) string { return q.node + ":" + strconv.FormatUint(n, 10) }

// Node is the node's id.
func (q *JobQueue) Node() string { return q.node }

// EarliestDue is the earliest due time of the retry set (the fake has no schedule set).
func (q *JobQueue) EarliestDue(context.Context) (time.Time, error) {
	var at time.Time
	err := q.call("EarliestDue", func() *Call {
		for _, e := range q.retry {
			if at.IsZero() || e.At.Before(at) {
				at = e.At
			}
		}
		return nil
	})
	return at, err
}

// MoveDue moves the retry set's jobs due at now to the end of queue "default" (the fake does
// not read a job's queue from its document), up to page of them, and says how many it read.
func (q *JobQueue) MoveDue(_ context.Context, set string, now time.Time, page int) (int, error) {
	n := 0
	err := q.call("MoveDue", func() *Call {
		kept := q.retry[:0]
		for _, e := range q.retry {
			if n < page && !e.At.After(now) {
				q.queues["default"] = append(q.queues["default"], e.Doc)
				n++
				continue
			}
			kept = append(kept, e)
		}
		q.retry = kept
		return &Call{Queue: set, Changed: n > 0}
	})
	return n, err
}
