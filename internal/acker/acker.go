// Package acker is a node's acknowledgements: it takes finished jobs off the backup lists, and
// the leases of ended jobs off their leases sets, in pipelines.
package acker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/exqgo/exq/internal/store"
)

// Acker removes successfully finished jobs from the backup lists in pipelines, so under load
// one round trip acknowledges many jobs, and a lone job still goes at once. The worker hands
// its job over and frees its slot; the acker keeps the job until Redis has taken the LREM,
// retrying while Redis is unreachable. Until then the job is still in the backup list: a crash
// at that moment runs it again (at least once), never loses it. Stop waits for the acker to
// finish before it touches the backup lists. The leases of ended jobs (Queue.GlobalLimit)
// go the same way, in the same pipelines: a job's slot frees as soon as it ends.
//
// Handing a job over never blocks, however long Redis is away: a worker stuck on a full
// channel would keep its slot, and Stop would wait for it forever.
type Acker struct {
	jq      Store
	timeout time.Duration
	log     *slog.Logger

	kick chan struct{} // something was handed over
	done chan struct{} // closed when run ends

	mu       sync.Mutex
	queued   []ackReq       // handed over, not yet taken by run
	sending  []ackReq       // taken by run and not yet in Redis; only run changes it
	perQueue map[string]int // handed over and not yet in Redis, counted by queue, for the poll loop's fetch check
	pending  int            // the same, in all
	stopped  bool           // run has ended: submit writes directly
}

// Store is what the acker writes with: *store.Store, or a test's fake.
type Store interface {
	// AckMany takes finished jobs off their backup lists and ended jobs' leases off their
	// leases sets, in one call; on an error, failed tells which did not happen.
	AckMany(ctx context.Context, batch []store.AckReq) (failed []bool, err error)
	// ReleaseLease removes one lease.
	ReleaseLease(ctx context.Context, queue, lease string) error
}

// ackReq is a finished job to remove from its backup list (Raw), with the incarnation of this
// node its run belongs to (Epoch), or the lease of an ended job to remove from its queue's
// leases set (Lease; Raw is empty).
type ackReq = store.AckReq

// maxAckBatch bounds one pipeline.
const maxAckBatch = 256

// New returns the acker of the store's node; timeout bounds each write.
func New(jq Store, timeout time.Duration, log *slog.Logger) *Acker {
	return &Acker{jq: jq, timeout: timeout, log: log, kick: make(chan struct{}, 1), done: make(chan struct{}),
		perQueue: map[string]int{}}
}

// Submit hands a finished job over, with the incarnation its run belongs to. After the acker
// has stopped (a worker that outlived Stop), it tries the LREM itself.
func (a *Acker) Submit(queue, raw, epoch string) {
	a.hand(ackReq{Queue: queue, Raw: raw, Epoch: epoch})
}

// SubmitFlow is Submit for a job of a batch or workflow: its transition (f, nil for none) is
// recorded in the same call as its acknowledgement, atomic with the LREM, and f.Done hears the
// transition's replies once it is in Redis. Until then the job is in its backup list, its
// transition unrecorded: a crash runs it again, and that run records the transition.
func (a *Acker) SubmitFlow(queue, raw, epoch string, f *store.AckFlow) {
	a.hand(ackReq{Queue: queue, Raw: raw, Epoch: epoch, Flow: f})
}

// Release hands over the lease of a job that ended, whatever its outcome, so that the slot is
// free for every node as soon as Redis has the ZREM (a lease never released lapses within the
// heartbeat window: nothing renews it).
func (a *Acker) Release(queue, lease string) { a.hand(ackReq{Queue: queue, Lease: lease}) }

func (a *Acker) hand(r ackReq) {
	a.mu.Lock()
	if r.Lease == "" {
		a.perQueue[r.Queue]++
	}
	a.pending++
	stopped := a.stopped
	if !stopped {
		a.queued = append(a.queued, r)
	}
	a.mu.Unlock()
	if stopped {
		a.direct([]ackReq{r})
		return
	}
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Drain waits until every job handed over is acknowledged in Redis, or ctx ends.
func (a *Acker) Drain(ctx context.Context) bool {
	for a.Count() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
}

// take moves up to max requests from the front of the queue to the end of sending, and
// returns sending.
func (a *Acker) take(max int) []ackReq {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := min(len(a.queued), max)
	a.sending = append(a.sending, a.queued[:n]...)
	// Keep the backing array for the next jobs (allocating it again for every batch was a
	// fifth of a job's garbage), with what is left moved to its front and the moved requests'
	// strings let go; after a burst that grew it past keepQueued, let it go too.
	left := copy(a.queued, a.queued[n:])
	clear(a.queued[left:])
	a.queued = a.queued[:left]
	if left == 0 && cap(a.queued) > keepQueued {
		a.queued = nil
	}
	return a.sending
}

// keepQueued is the largest queue array the acker keeps once it is empty.
const keepQueued = 4 * maxAckBatch

// Run writes what is handed over, a pipeline at a time, retrying with a back-off while Redis
// does not answer, until ctx ends; then it makes one last attempt (stop), and later submits
// write directly.
func (a *Acker) Run(ctx context.Context) {
	defer close(a.done)
	backoff := time.Duration(0)
	for {
		batch := a.sending
		if len(batch) < maxAckBatch {
			batch = a.take(maxAckBatch - len(batch))
		}
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				a.stop(nil)
				return
			case <-a.kick:
				continue
			}
		}
		left, err := a.flush(batch)
		if err == nil {
			if backoff != 0 {
				a.log.Info("exq: acknowledging jobs works again")
				backoff = 0
			}
			continue
		}
		if backoff == 0 {
			a.log.Warn("exq: acknowledging finished jobs failed; keeping them until Redis answers", "jobs", len(left), "error", err)
		}
		backoff = min(max(2*backoff, 20*time.Millisecond), time.Second)
		select {
		case <-ctx.Done():
			a.stop(a.sending)
			return
		case <-time.After(backoff):
		}
	}
}

// stop makes one last attempt at everything still held, a pipeline per batch within one
// timeout; what fails stays in the backup list for a rescue. Later submits write directly.
func (a *Acker) stop(batch []ackReq) {
	a.mu.Lock()
	a.stopped = true
	rest := append(append([]ackReq(nil), batch...), a.queued...)
	a.queued, a.sending = nil, nil
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	failed := 0
	for len(rest) > 0 && ctx.Err() == nil {
		n := min(len(rest), maxAckBatch)
		failed += a.send(ctx, rest[:n])
		rest = rest[n:]
	}
	for _, r := range rest {
		if r.Lease == "" {
			failed++
		}
	}
	a.written(rest, nil)
	if failed > 0 {
		a.log.Error("exq: finished jobs could not be acknowledged; they stay in the backup list and will run again", "jobs", failed)
	}
}

// send writes one batch at stop and forgets it, written or not; it returns how many
// acknowledgements failed (a lease that fails to go lapses by itself).
func (a *Acker) send(ctx context.Context, batch []ackReq) int {
	failed, err := a.jq.AckMany(ctx, batch)
	settled(batch, failed)
	a.written(batch, nil)
	if err == nil {
		return 0
	}
	n := 0
	for i, f := range failed {
		if f && batch[i].Lease == "" {
			n++
		}
	}
	return n
}

// flush sends run's batch, one pipeline of LREMs, and leaves in sending the requests that
// failed, which it returns.
func (a *Acker) flush(batch []ackReq) ([]ackReq, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	failed, err := a.jq.AckMany(ctx, batch)
	if err == nil {
		settled(batch, nil)
		a.written(batch, batch[:0])
		clear(batch) // the array is sending's next: let the written jobs' strings go
		return nil, nil
	}
	var left, ok []ackReq
	for i, r := range batch {
		if failed[i] {
			left = append(left, r)
		} else {
			ok = append(ok, r)
		}
	}
	settled(ok, nil)
	a.written(ok, left)
	return left, err
}

// written forgets requests that are done with, and sets what run still has to send, in one
// step, so that held never misses a job nor counts one twice.
func (a *Acker) written(reqs, sending []ackReq) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range reqs {
		if r.Lease != "" {
			continue
		}
		if a.perQueue[r.Queue]--; a.perQueue[r.Queue] <= 0 {
			delete(a.perQueue, r.Queue)
		}
	}
	a.pending -= len(reqs)
	if !a.stopped {
		a.sending = sending
	}
}

// Held returns the jobs handed over and not yet acknowledged in Redis, by job. Only
// reconcile asks, after a failed fetch, so the multiset is built here rather than kept up to
// date for every job.
func (a *Acker) Held() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.queued)+len(a.sending))
	for _, rs := range [][]ackReq{a.queued, a.sending} {
		for _, r := range rs {
			if r.Lease == "" {
				out[r.Raw]++
			}
		}
	}
	return out
}

// Count is how many jobs are handed over and not yet acknowledged in Redis.
func (a *Acker) Count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending
}

// HeldIn counts the jobs of queue handed over and not yet acknowledged in Redis.
func (a *Acker) HeldIn(queue string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.perQueue[queue]
}

// direct tries each LREM (or lease ZREM) once, outside the loop.
func (a *Acker) direct(reqs []ackReq) {
	for _, r := range reqs {
		ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
		var err error
		if r.Lease != "" {
			err = a.jq.ReleaseLease(ctx, r.Queue, r.Lease)
		} else {
			_, err = a.jq.AckMany(ctx, []ackReq{r})
			if err == nil {
				settled([]ackReq{r}, nil)
			}
		}
		cancel()
		a.written([]ackReq{r}, nil)
		switch {
		case err != nil && r.Lease != "":
			a.log.Warn("exq: could not release the lease of an ended job; it lapses within the heartbeat window",
				"queue", r.Queue, "error", err)
		case err != nil:
			a.log.Error("exq: could not acknowledge a finished job; it stays in the backup list and will run again",
				"queue", r.Queue, "error", err)
		}
	}
}

// settled tells the jobs written (all of reqs but those failed marks) what their transitions
// did (AckFlow.Done).
func settled(reqs []ackReq, failed []bool) {
	for i, r := range reqs {
		if r.Flow != nil && r.Flow.Done != nil && (failed == nil || !failed[i]) {
			r.Flow.Done(r.Flow.Replies)
		}
	}
}
