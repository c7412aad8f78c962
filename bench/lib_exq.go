package main

import (
	"context"
	"fmt"

	"github.com/exqgo/exq"
)

// exq runs at its defaults only: stats, retries, heartbeats, the scheduler and the busy list
// are all on, and exq builds its own go-redis client from the URL. Jobs carry two ints,
// []any{i, enqueue time}, and the worker decodes them with job.Bind(&i, &at), as the README
// teaches (it used to read one int from the raw args with strconv).
func exqTargets(addr string, db int) []*target {
	url := fmt.Sprintf("redis://%s/%d", addr, db)
	return []*target{{
		Name: "exq", Lib: "exq", DB: db, drainNS: exqNS,
		newProducer: func(ctx context.Context, _ int) (producer, error) {
			// A node with no queues only enqueues (and schedules), like a web process.
			e, err := exq.Start(ctx, exq.Options{RedisURL: url, Namespace: exqNS, Queues: []exq.Queue{}, Logger: discardLogger})
			if err != nil {
				return nil, errorf("exq", "start enqueue-only node", err)
			}
			return &exqProducer{e: e}, nil
		},
		newConsumer: func(ctx context.Context, c int, onJob func(i, at int64)) (consumer, error) {
			e, err := exq.Start(ctx, exq.Options{
				RedisURL:  url,
				Namespace: exqNS,
				Queues:    []exq.Queue{{Name: queueName, Concurrency: c}},
				Workers: map[string]exq.Worker{jobClass: exq.WorkerFunc(func(_ context.Context, j *exq.Job) error {
					var i, at int64
					if err := j.Bind(&i, &at); err != nil {
						argError("exq", err)
						onJob(-1, 0)
						return nil
					}
					onJob(i, at)
					return nil
				})},
				Logger: discardLogger,
			})
			if err != nil {
				return nil, errorf("exq", "start worker node", err)
			}
			return &exqConsumer{e: e}, nil
		},
	}}
}

type exqProducer struct{ e *exq.Exq }

func (p *exqProducer) enqueue(ctx context.Context, i int64) error {
	_, err := p.e.Enqueue(ctx, queueName, jobClass, []any{i, nowNS()})
	return err
}

func (p *exqProducer) enqueueBatch(ctx context.Context, is []int64) error {
	specs := make([]exq.JobSpec, len(is))
	for k, i := range is {
		specs[k] = exq.JobSpec{Queue: queueName, Class: jobClass, Args: []any{i, nowNS()}}
	}
	res, err := p.e.EnqueueAll(ctx, specs)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

func (p *exqProducer) close() error { return p.e.Stop(context.Background()) }

type exqConsumer struct{ e *exq.Exq }

func (c *exqConsumer) stop(ctx context.Context) error { return c.e.Stop(ctx) }
