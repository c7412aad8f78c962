package exq

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// acker removes successfully finished jobs from the backup lists in pipelines, so under load
// one round trip acknowledges many jobs, and a lone job still goes at once. The worker hands
// its job over and frees its slot; the acker keeps the job until Redis has taken the LREM,
// retrying while Redis is unreachable. Until then the job is still in the backup list: a crash
// at that moment runs it again (at least once), never loses it. Stop waits for the acker to
// finish before it touches the backup lists.
type acker struct {
	e       *Exq
	reqs    chan ackReq
	pending atomic.Int64  // handed over, not yet in Redis
	done    chan struct{} // closed when run ends

	mu   sync.Mutex
	raws map[string]int // the jobs counted in pending, for the manager's reconcile
}

type ackReq struct{ queue, raw string }

// maxAckBatch bounds one pipeline.
const maxAckBatch = 256

func newAcker(e *Exq) *acker {
	return &acker{e: e, reqs: make(chan ackReq, 4*maxAckBatch), done: make(chan struct{}), raws: map[string]int{}}
}

// submit hands a finished job over. After the acker has stopped (a worker that outlived
// Stop), it tries the LREM itself.
func (a *acker) submit(queue, raw string) {
	a.mu.Lock()
	a.raws[raw]++
	a.mu.Unlock()
	a.pending.Add(1)
	select {
	case a.reqs <- ackReq{queue, raw}:
	case <-a.done:
		a.direct([]ackReq{{queue, raw}})
	}
}

// drain waits until every job handed over is acknowledged in Redis, or ctx ends.
func (a *acker) drain(ctx context.Context) bool {
	for a.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
}

func (a *acker) run(ctx context.Context) {
	defer close(a.done)
	var batch []ackReq
	backoff := time.Duration(0)
	for {
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case r := <-a.reqs:
				batch = append(batch, r)
			}
		}
	more:
		for len(batch) < maxAckBatch {
			select {
			case r := <-a.reqs:
				batch = append(batch, r)
			default:
				break more
			}
		}
		left, err := a.flush(batch)
		batch = left
		if err == nil {
			if backoff != 0 {
				a.e.log.Info("exq: acknowledging jobs works again")
				backoff = 0
			}
			continue
		}
		if backoff == 0 {
			a.e.log.Warn("exq: acknowledging finished jobs failed; keeping them until Redis answers", "jobs", len(left), "error", err)
		}
		backoff = min(max(2*backoff, 20*time.Millisecond), time.Second)
		select {
		case <-ctx.Done():
			a.direct(batch) // one last try; what fails stays in the backup list
			return
		case <-time.After(backoff):
		}
	}
}

// flush sends one pipeline of LREMs and returns the requests that failed.
func (a *acker) flush(batch []ackReq) ([]ackReq, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.e.opts.RedisTimeout)
	defer cancel()
	cmds := make([]*redis.IntCmd, len(batch))
	_, err := a.e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range batch {
			cmds[i] = p.LRem(ctx, a.e.jq.keys.Backup(a.e.opts.NodeID, r.queue), -1, r.raw)
		}
		return nil
	})
	if err == nil {
		a.written(batch)
		return batch[:0], nil
	}
	var left, ok []ackReq
	for i, r := range batch {
		if cmds[i].Err() != nil {
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
	for _, r := range reqs {
		if a.raws[r.raw]--; a.raws[r.raw] <= 0 {
			delete(a.raws, r.raw)
		}
	}
	a.mu.Unlock()
	a.pending.Add(-int64(len(reqs)))
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

// direct tries each LREM once, outside the loop.
func (a *acker) direct(reqs []ackReq) {
	for _, r := range reqs {
		ctx, cancel := context.WithTimeout(context.Background(), a.e.opts.RedisTimeout)
		err := a.e.jq.ack(ctx, r.queue, r.raw, "", "")
		cancel()
		a.written([]ackReq{r})
		if err != nil {
			a.e.log.Error("exq: could not acknowledge a finished job; it stays in the backup list and will run again",
				"queue", r.queue, "error", err)
		}
	}
}
