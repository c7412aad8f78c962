package main

import (
	"context"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
)

// asynq at its defaults, and tuned: TaskCheckInterval (how long an idle processor sleeps
// before polling again; default 1 s, jittered to 0.5–1.5 s) down to 1 ms, and the go-redis pool
// (default 10 per CPU) sized to the callers or the concurrency.
func asynqTargets(addr string, db int) []*target {
	mk := func(name, knob string, checkInterval time.Duration, pool func(n int) int) *target {
		opt := func(n int) asynq.RedisClientOpt {
			return asynq.RedisClientOpt{Addr: addr, DB: db, PoolSize: pool(n)}
		}
		return &target{
			Name: name, Lib: "asynq", Knob: knob, Peer: true, DB: db,
			newProducer: func(ctx context.Context, callers int) (producer, error) {
				c := asynq.NewClient(opt(callers))
				if err := c.Ping(); err != nil {
					_ = c.Close()
					return nil, errorf("asynq", "ping", err)
				}
				return &asynqProducer{c: c}, nil
			},
			newConsumer: func(ctx context.Context, c int, onJob func(int64)) (consumer, error) {
				srv := asynq.NewServer(opt(c), asynq.Config{
					Concurrency:       c,
					TaskCheckInterval: checkInterval,
					Logger:            quietAsynq{},
					LogLevel:          asynq.FatalLevel,
				})
				h := asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
					onJob(parseArgs(t.Payload()))
					return nil
				})
				if err := srv.Start(h); err != nil {
					return nil, errorf("asynq", "start server", err)
				}
				return &asynqConsumer{srv: srv}, nil
			},
		}
	}
	return []*target{
		mk("asynq", "", 0, func(int) int { return 0 }),
		mk("asynq (tuned)", "TaskCheckInterval 1 s → 1 ms; PoolSize 20 → callers/concurrency + 10", time.Millisecond,
			func(n int) int { return n + 10 }),
	}
}

type asynqProducer struct{ c *asynq.Client }

func (p *asynqProducer) enqueue(ctx context.Context, i int64) error {
	payload := strconv.AppendInt(append(make([]byte, 0, 24), '['), i, 10)
	payload = append(payload, ']')
	_, err := p.c.EnqueueContext(ctx, asynq.NewTask(jobClass, payload), asynq.Queue(queueName))
	return err
}

func (p *asynqProducer) close() error { return p.c.Close() }

type asynqConsumer struct{ srv *asynq.Server }

func (c *asynqConsumer) stop(context.Context) error {
	c.srv.Shutdown()
	return nil
}

// quietAsynq drops asynq's log lines (exq's are dropped too).
type quietAsynq struct{}

func (quietAsynq) Debug(...interface{}) {}
func (quietAsynq) Info(...interface{})  {}
func (quietAsynq) Warn(...interface{})  {}
func (quietAsynq) Error(...interface{}) {}
func (quietAsynq) Fatal(...interface{}) {}
