package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hibiken/asynq"
)

// asynq at its defaults, and tuned: TaskCheckInterval (how long an idle processor sleeps
// before polling again; default 1 s, jittered to 0.5–1.5 s) down to 1 ms, and the go-redis pool
// (default 10 per CPU) sized to the callers or the concurrency. The payload is a JSON object of
// the two ints, written with json.Marshal and read with json.Unmarshal into a struct, as asynq's
// README teaches (it used to be "[i]", read with strconv).
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
			newConsumer: func(ctx context.Context, c int, onJob func(i, at int64)) (consumer, error) {
				srv := asynq.NewServer(opt(c), asynq.Config{
					Concurrency:       c,
					TaskCheckInterval: checkInterval,
					Logger:            quietAsynq{},
					LogLevel:          asynq.FatalLevel,
				})
				h := asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
					var p asynqPayload
					if err := json.Unmarshal(t.Payload(), &p); err != nil {
						argError("asynq", err)
						onJob(-1, 0)
						return nil
					}
					onJob(p.I, p.At)
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

// asynqPayload is the task's payload.
type asynqPayload struct {
	I  int64 `json:"i"`
	At int64 `json:"at"`
}

type asynqProducer struct{ c *asynq.Client }

func (p *asynqProducer) enqueue(ctx context.Context, i int64) error {
	payload, err := json.Marshal(asynqPayload{I: i, At: nowNS()})
	if err != nil {
		return err
	}
	_, err = p.c.EnqueueContext(ctx, asynq.NewTask(jobClass, payload), asynq.Queue(queueName))
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
