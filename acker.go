package exq

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// acker removes successfully finished jobs from the backup lists in pipelines, so under load
// one round trip acknowledges many jobs, and a lone job still goes at once. The worker hands
// its job over and frees its slot; the acker keeps the job until Redis has taken the LREM,
// retrying while Redis is unreachable. Until then the job is still in the backup list: a crash
// at that moment runs it again (at least once), never loses it. Stop waits for the acker to
// finish before it touches the backup lists.
//
// Handing a job over never blocks, however long Redis is away: a worker stuck on a full
// channel would keep its slot, and Stop would wait for it forever.
type acker struct {
	jq      *jobQueue
	timeout time.Duration
	log     *slog.Logger

	kick chan struct{} // something was handed over
	done chan struct{} // closed when run ends

	mu       sync.Mutex
	queued   []ackReq       // handed over, not yet sent
	raws     map[string]int // handed over and not yet in Redis (queued or being sent), by job
	perQueue map[string]int // the same, counted by queue, for the poll loop's fetch check
	pending  int            // the same, in all
	stopped  bool           // run has ended: submit writes directly
}

type ackReq struct{ queue, raw string }

// maxAckBatch bounds one pipeline.
const maxAckBatch = 256

func newAcker(jq *jobQueue, timeout time.Duration, log *slog.Logger) *acker {
	return &acker{jq: jq, timeout: timeout, log: log, kick: make(chan struct{}, 1), done: make(chan struct{}),
		raws: map[string]int{}, perQueue: map[string]int{}}
}

// submit hands a finished job over. After the acker has stopped (a worker that outlived
// Stop), it tries the LREM itself.
func (a *acker) submit(queue, raw string) {
	r := ackReq{queue, raw}
	a.mu.Lock()
	a.raws[raw]++
	a.perQueue[queue]++
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
	signal(a.kick)
}

// drain waits until every job handed over is acknowledged in Redis, or ctx ends.
func (a *acker) drain(ctx context.Context) bool {
	for a.count() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
}

// take removes up to max requests from the front of the queue.
func (a *acker) take(max int) []ackReq {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := min(len(a.queued), max)
	batch := append([]ackReq(nil), a.queued[:n]...)
	a.queued = a.queued[n:]
	if len(a.queued) == 0 {
		a.queued = nil // let the backing array go after a burst
	}
	return batch
}

func (a *acker) run(ctx context.Context) {
	defer close(a.done)
	var batch []ackReq
	backoff := time.Duration(0)
	for {
		if len(batch) < maxAckBatch {
			batch = append(batch, a.take(maxAckBatch-len(batch))...)
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
		batch = left
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
			a.stop(batch)
			return
		case <-time.After(backoff):
		}
	}
}

// stop makes one last attempt at everything still held, a pipeline per batch within one
// timeout; what fails stays in the backup list for a rescue. Later submits write directly.
func (a *acker) stop(batch []ackReq) {
	a.mu.Lock()
	a.stopped = true
	rest := append(batch, a.queued...)
	a.queued = nil
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	failed := 0
	for len(rest) > 0 && ctx.Err() == nil {
		n := min(len(rest), maxAckBatch)
		left, _ := a.flushCtx(ctx, rest[:n])
		failed += len(left)
		a.written(left) // given up on: they stay in the backup list
		rest = rest[n:]
	}
	failed += len(rest)
	a.written(rest)
	if failed > 0 {
		a.log.Error("exq: finished jobs could not be acknowledged; they stay in the backup list and will run again", "jobs", failed)
	}
}

// flush sends one pipeline of LREMs and returns the requests that failed.
func (a *acker) flush(batch []ackReq) ([]ackReq, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	return a.flushCtx(ctx, batch)
}

func (a *acker) flushCtx(ctx context.Context, batch []ackReq) ([]ackReq, error) {
	failed, err := a.jq.ackMany(ctx, batch)
	if err == nil {
		a.written(batch)
		return batch[:0], nil
	}
	var left, ok []ackReq
	for i, r := range batch {
		if failed[i] {
			left = append(left, r)
		} else {
			ok = append(ok, r)
		}
	}
	a.written(ok)
	return left, err
}

// written forgets requests that are done with.
func (a *acker) written(reqs []ackReq) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range reqs {
		if a.raws[r.raw]--; a.raws[r.raw] <= 0 {
			delete(a.raws, r.raw)
		}
		if a.perQueue[r.queue]--; a.perQueue[r.queue] <= 0 {
			delete(a.perQueue, r.queue)
		}
	}
	a.pending -= len(reqs)
}

// held returns the jobs handed over and not yet acknowledged in Redis.
func (a *acker) held() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.raws))
	for r, n := range a.raws {
		out[r] = n
	}
	return out
}

// count is how many jobs are handed over and not yet acknowledged in Redis.
func (a *acker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending
}

// heldIn counts the jobs of queue handed over and not yet acknowledged in Redis.
func (a *acker) heldIn(queue string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.perQueue[queue]
}

// direct tries each LREM once, outside the loop.
func (a *acker) direct(reqs []ackReq) {
	for _, r := range reqs {
		ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
		err := a.jq.ack(ctx, r.queue, r.raw, "", "")
		cancel()
		a.written([]ackReq{r})
		if err != nil {
			a.log.Error("exq: could not acknowledge a finished job; it stays in the backup list and will run again",
				"queue", r.queue, "error", err)
		}
	}
}
