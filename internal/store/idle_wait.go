package store

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/loop"
	"github.com/exqgo/exq/internal/wire"
)

// IdleWaiter notices jobs pushed without a wake-up (by Sidekiq's client, Exq's enqueue, a plain
// LPUSH) onto the queues an idle node polled empty, so that such a job does not wait for the
// poll loop's backed-off timer (up to 5 s). For every such queue it blocks in
//
//	BLMOVE <queue> <queue> RIGHT RIGHT <timeout>
//
// on a connection of its own: Redis answers as soon as the list holds a job, and the command
// pops the oldest job and pushes it back where it was, in one step, so the queue is unchanged
// and no job is ever out of Redis' lists (nothing to lose when the connection dies or Stop
// closes it, nothing for the stop sweep to hand back). The waiter only wakes the poll loop; the
// loop's batched fetch then takes the job, and with it pause, limits, Dequeuer, weights and
// Stop apply exactly as for any other fetch. The key is the queue's own, so the command has one
// hash slot on Redis Cluster. Another node's waiter blocked on the same queue is served right
// after (the push back makes the list ready again), then Sidekiq's BRPOP, if any.
//
// A queue is armed by a fetch that asked it for jobs and got fewer, with no limit holding it
// back: the list was empty then, so the BLMOVE blocks until the next push and fires once. It
// is disarmed when it fires and by any fetch after which it is not idle any more (full, or it
// gave every job asked for). A paused queue is seen after the BLMOVE (SISMEMBER of the paused
// set) and does not wake the loop. Idle cost: one BLMOVE per armed queue per block (30 s: the
// root's idleWaitBlock), and one connection per armed queue, opened on first use.
type IdleWaiter struct {
	rdb    redis.UniversalClient // a client of its own: Close ends a blocked BLMOVE at once
	keys   wire.Keys
	block  time.Duration // BLMOVE timeout
	wake   func()        // wakes the poll loop
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	queues   map[string]*queueWait
	disabled bool // the server refused BLMOVE (Redis < 6.2, ACL): polling alone
	stopped  bool
}

// queueWait is one queue's waiter: armed says a fetch saw the queue empty with slots free.
type queueWait struct {
	name  string
	armed bool
	kick  chan struct{} // armed changed to true
}

// Blocking idle wait: how long one BLMOVE blocks at least, and the back-off after a failed
// one. go-redis sends BLMOVE's timeout in whole seconds: a shorter one blocks for a second
// anyway, and go-redis logs a warning for it at every call.
const (
	minIdleWaitBlock = time.Second
	idleWaitRetry    = time.Second
)

// NewIdleWaiter builds the waiter of the store's node on a client of its own, made from the
// store's client's options, each BLMOVE blocking for block (at least minIdleWaitBlock); nil
// (polling alone) when the store's client is one whose options it cannot copy.
func (jq *Store) NewIdleWaiter(block time.Duration, wake func(), log *slog.Logger) *IdleWaiter {
	own := blockingClient(jq.rdb)
	if own == nil {
		log.Info("exq: jobs pushed without a wake-up are found by polling alone: the Redis client is neither a *redis.Client nor a *redis.ClusterClient")
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &IdleWaiter{rdb: own, keys: jq.keys, block: max(block, minIdleWaitBlock), wake: wake, log: log,
		ctx: ctx, cancel: cancel, queues: map[string]*queueWait{}}
}

// blockingPoolSize bounds the waiter's connections: one per queue blocked at once.
const blockingPoolSize = 1000

// blockingClient is a new client with rdb's options and a pool of its own, or nil. Its
// connections are dialled when a queue first blocks, and go-redis reads a blocking command's
// reply with the command's timeout plus 10 s, whatever ReadTimeout says.
func blockingClient(rdb redis.UniversalClient) redis.UniversalClient {
	switch c := rdb.(type) {
	case *redis.Client:
		o := *c.Options()
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = blockingPoolSize, 0, 0, 0
		return redis.NewClient(&o)
	case *redis.ClusterClient:
		o := *c.Options()
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = blockingPoolSize, 0, 0, 0
		return redis.NewClusterClient(&o)
	}
	return nil
}

// Arm sets the armed queues after a fetch: those it asked for jobs and got fewer from, with no
// limit holding them back. Every other queue is disarmed. nil-safe.
func (w *IdleWaiter) Arm(reqs []FetchReq, res FetchRes) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.disabled || w.stopped {
		return
	}
	for _, s := range w.queues {
		s.armed = false
	}
	for i, r := range reqs {
		if r.N == 0 || i >= len(res.Jobs) || len(res.Jobs[i]) >= r.N || res.HeldBack(i) >= 0 {
			continue
		}
		s := w.queues[r.Queue]
		if s == nil {
			s = &queueWait{name: r.Queue, kick: make(chan struct{}, 1)}
			w.queues[r.Queue] = s
			w.wg.Add(1)
			go w.watch(s)
		}
		s.armed = true
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// DisarmAll disarms every queue (no slot free anywhere). nil-safe.
func (w *IdleWaiter) DisarmAll() { w.Arm(nil, FetchRes{}) }

// isArmed reports whether s is armed and the waiter still runs.
func (w *IdleWaiter) isArmed(s *queueWait) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return s.armed && !w.stopped && !w.disabled
}

// fire disarms s and wakes the poll loop, if s was still armed.
func (w *IdleWaiter) fire(s *queueWait) {
	w.mu.Lock()
	armed := s.armed && !w.stopped
	s.armed = false
	w.mu.Unlock()
	if armed {
		w.wake()
	}
}

// watch is the goroutine of one queue: it waits to be armed, then blocks on the queue until a
// job is there, the block times out (and it blocks again while armed), or the waiter stops.
func (w *IdleWaiter) watch(s *queueWait) {
	defer w.wg.Done()
	key := w.keys.Queue(s.name)
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-s.kick:
		}
		for w.isArmed(s) {
			_, err := w.rdb.BLMove(w.ctx, key, key, "RIGHT", "RIGHT", w.block).Result()
			if w.ctx.Err() != nil {
				return
			}
			if errors.Is(err, redis.Nil) {
				continue // timed out, nothing pushed
			}
			if err != nil {
				if refused(err) {
					w.disable(err)
					return
				}
				w.log.Debug("exq: blocking idle wait failed; retrying", "queue", s.name, "error", err)
				if !loop.Sleep(w.ctx, idleWaitRetry) {
					return
				}
				continue
			}
			paused, err := w.rdb.SIsMember(w.ctx, w.keys.Paused(), s.name).Result()
			if err == nil && paused {
				// The job waits for ResumeQueue, which wakes the nodes; until then, look again
				// only once per block.
				if !loop.Sleep(w.ctx, w.block) {
					return
				}
				continue
			}
			w.fire(s)
		}
	}
}

// refused reports an error that says the server will never run BLMOVE for us.
func refused(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "unknown command")
}

// disable turns the waiter off for good: polling alone finds foreign pushes.
func (w *IdleWaiter) disable(err error) {
	w.mu.Lock()
	first := !w.disabled
	w.disabled = true
	w.mu.Unlock()
	if first {
		w.log.Warn("exq: Redis refused BLMOVE; jobs pushed without a wake-up (by Sidekiq or Exq) are found by polling alone, within the idle poll cap",
			"error", err)
	}
}

// Stop ends every blocked BLMOVE at once (by closing the waiter's client) and waits for the
// goroutines. Nothing is lost: a BLMOVE that ran put its job back where it was. nil-safe.
func (w *IdleWaiter) Stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.cancel()
	_ = w.rdb.Close()
	w.wg.Wait()
}

// ArmedQueues lists the queues armed now, for diagnostics and tests.
func (w *IdleWaiter) ArmedQueues() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, s := range w.queues {
		if s.armed {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
