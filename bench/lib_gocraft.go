package main

import (
	"context"

	"github.com/gocraft/work"
	"github.com/gomodule/redigo/redis"
)

// gocraft/work takes a redigo pool from the caller and has no default for it. "Defaults" here
// is the pool of its README (MaxActive 5, MaxIdle 5, Wait); tuned sizes the pool to the
// callers or the concurrency. Its idle back-off (0, 10, 100, 1000, 5000 ms between empty
// polls, per worker) is a package variable and cannot be tuned. Jobs carry work.Q{"i", "at"}, read
// with ArgInt64 and checked with ArgError, as its README teaches (it used to read "i" only).
func gocraftTargets(addr string, db int) []*target {
	mk := func(name, knob string, size func(n int) int) *target {
		pool := func(n int) *redis.Pool {
			return &redis.Pool{
				MaxActive: size(n),
				MaxIdle:   size(n),
				Wait:      true,
				Dial: func() (redis.Conn, error) {
					return redis.Dial("tcp", addr, redis.DialDatabase(db))
				},
			}
		}
		return &target{
			Name: name, Lib: "gocraft", Knob: knob, Peer: true, DB: db,
			newProducer: func(ctx context.Context, callers int) (producer, error) {
				p := pool(callers)
				conn := p.Get()
				_, err := conn.Do("PING")
				_ = conn.Close()
				if err != nil {
					_ = p.Close()
					return nil, errorf("gocraft", "ping", err)
				}
				return &gocraftProducer{pool: p, e: work.NewEnqueuer(gocraftNS, p)}, nil
			},
			newConsumer: func(ctx context.Context, c int, onJob func(i, at int64)) (consumer, error) {
				p := pool(c)
				wp := work.NewWorkerPool(gocraftCtx{}, uint(c), gocraftNS, p)
				wp.Job(jobClass, func(j *work.Job) error {
					i, at := j.ArgInt64("i"), j.ArgInt64("at")
					if err := j.ArgError(); err != nil {
						argError("gocraft", err)
						onJob(-1, 0)
						return nil
					}
					onJob(i, at)
					return nil
				})
				wp.Start()
				return &gocraftConsumer{pool: p, wp: wp}, nil
			},
		}
	}
	return []*target{
		mk("gocraft/work", "", func(int) int { return 5 }),
		mk("gocraft/work (tuned)", "redigo pool MaxActive/MaxIdle 5 → callers/concurrency + 10", func(n int) int { return n + 10 }),
	}
}

// gocraftCtx is the (empty) context type gocraft/work's worker pool requires.
type gocraftCtx struct{}

type gocraftProducer struct {
	pool *redis.Pool
	e    *work.Enqueuer
}

func (p *gocraftProducer) enqueue(_ context.Context, i int64) error {
	_, err := p.e.Enqueue(jobClass, work.Q{"i": i, "at": nowNS()})
	return err
}

func (p *gocraftProducer) close() error { return p.pool.Close() }

type gocraftConsumer struct {
	pool *redis.Pool
	wp   *work.WorkerPool
}

func (c *gocraftConsumer) stop(context.Context) error {
	c.wp.Stop()
	return c.pool.Close()
}
