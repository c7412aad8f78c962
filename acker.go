package exq

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// acker removes finished jobs from the backup lists in pipelines: every job that finishes
// while a pipeline is on its way joins the next one, so under load one round trip
// acknowledges many jobs, and a lone job still goes at once. A job's worker waits for its own
// acknowledgement (and keeps its slot) until it is in Redis.
type acker struct {
	e    *Exq
	reqs chan ackReq
	done chan struct{} // closed when run ends
}

type ackReq struct {
	queue, raw string
	result     chan error
}

// maxAckBatch bounds one pipeline.
const maxAckBatch = 256

func newAcker(e *Exq) *acker {
	return &acker{e: e, reqs: make(chan ackReq, maxAckBatch), done: make(chan struct{})}
}

// ack removes raw from this node's backup list for queue, through the next pipeline. When the
// acker has stopped (the node stopped while a worker ignored its context), it writes directly.
func (a *acker) ack(ctx context.Context, queue, raw string) error {
	req := ackReq{queue: queue, raw: raw, result: make(chan error, 1)}
	select {
	case a.reqs <- req:
	case <-a.done:
		return a.e.jq.ack(ctx, queue, raw, "", "")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.result:
		return err
	case <-a.done:
		// Stopped right after we queued: it may or may not have answered. A second LREM
		// of the same string is harmless.
		select {
		case err := <-req.result:
			return err
		default:
			return a.e.jq.ack(ctx, queue, raw, "", "")
		}
	case <-ctx.Done():
		return ctx.Err() // the pipeline may still remove it; persist tries again
	}
}

func (a *acker) run(ctx context.Context) {
	defer close(a.done)
	batch := make([]ackReq, 0, maxAckBatch)
	for {
		select {
		case <-ctx.Done():
			// Answer whoever is still waiting, so no worker blocks on a stopped acker.
			for {
				select {
				case r := <-a.reqs:
					r.result <- a.e.jq.ack(context.Background(), r.queue, r.raw, "", "")
				default:
					return
				}
			}
		case r := <-a.reqs:
			batch = append(batch[:0], r)
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
		a.flush(batch)
	}
}

// flush sends one pipeline of LREMs and answers each request with its own result.
func (a *acker) flush(batch []ackReq) {
	ctx, cancel := context.WithTimeout(context.Background(), a.e.opts.RedisTimeout)
	defer cancel()
	cmds := make([]*redis.IntCmd, len(batch))
	_, _ = a.e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range batch {
			cmds[i] = p.LRem(ctx, a.e.jq.keys.Backup(a.e.opts.NodeID, r.queue), -1, r.raw)
		}
		return nil
	})
	for i, r := range batch {
		r.result <- cmds[i].Err()
	}
}
