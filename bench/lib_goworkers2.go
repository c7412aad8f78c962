package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	workers "github.com/digitalocean/go-workers2"
)

// go-workers2 at its defaults (a go-redis pool of ONE connection, shared by the blocking fetch,
// the acknowledgements and the stats; one fetcher per queue that takes one job per round trip),
// and tuned: the pool sized to the callers or the concurrency + 10, and the queue's
// concurrency split over several fetchers (AddWorker called once per fetcher). Both variants
// set PollInterval (the scheduled/retry poller) to 1 s instead of 15 s so that Stop returns
// promptly; it is on no measured path. Jobs carry []int64{i, at}, read with its simplejson
// Args().GetIndex(k).Int64(), as its README points to (it used to read index 0 only).
func goworkers2Targets(addr string, db int) []*target {
	quiet := log.New(io.Discard, "", 0)
	mk := func(name, knob string, pool func(n int) int, fetchers int) *target {
		opts := func(n int) workers.Options {
			b := make([]byte, 6)
			_, _ = rand.Read(b)
			return workers.Options{
				ServerAddr: addr, Database: db, PoolSize: pool(n),
				Namespace: gw2NS, ProcessID: "bench-" + hex.EncodeToString(b), Logger: quiet,
				// The scheduled/retry poller, on no measured path: Manager.Run waits for its
				// sleep to end, so the default 15 s would add 15 s to every Stop.
				PollInterval: time.Second,
			}
		}
		return &target{
			Name: name, Lib: "goworkers2", Knob: knob, Peer: true, DB: db,
			newProducer: func(ctx context.Context, callers int) (producer, error) {
				p, err := workers.NewProducer(opts(callers))
				if err != nil {
					return nil, errorf("go-workers2", "producer", err)
				}
				if err := p.GetRedisClient().Ping(ctx).Err(); err != nil {
					return nil, errorf("go-workers2", "ping", err)
				}
				return &gw2Producer{p: p}, nil
			},
			newConsumer: func(ctx context.Context, c int, onJob func(i, at int64)) (consumer, error) {
				m, err := workers.NewManager(opts(c))
				if err != nil {
					return nil, errorf("go-workers2", "manager", err)
				}
				f := min(fetchers, c)
				for k := range f {
					share := c / f
					if k < c%f {
						share++
					}
					m.AddWorker(queueName, share, func(msg *workers.Msg) error {
						args := msg.Args()
						i, err := args.GetIndex(0).Int64()
						if err != nil {
							argError("go-workers2", fmt.Errorf("arg 0: %w", err))
							onJob(-1, 0)
							return nil
						}
						at, err := args.GetIndex(1).Int64()
						if err != nil {
							argError("go-workers2", fmt.Errorf("arg 1: %w", err))
							onJob(-1, 0)
							return nil
						}
						onJob(i, at)
						return nil
					})
				}
				gc := &gw2Consumer{m: m}
				gc.wg.Add(1)
				go func() {
					defer gc.wg.Done()
					m.Run()
				}()
				return gc, nil
			},
		}
	}
	return []*target{
		mk("go-workers2", "", func(int) int { return 0 }, 1),
		mk("go-workers2 (tuned)", "PoolSize 1 → callers/concurrency + 10; 4 fetchers (AddWorker ×4) instead of 1", func(n int) int { return n + 10 }, 4),
	}
}

type gw2Producer struct{ p *workers.Producer }

func (p *gw2Producer) enqueue(ctx context.Context, i int64) error {
	_, err := p.p.EnqueueWithContext(ctx, queueName, jobClass, []int64{i, nowNS()}, workers.EnqueueOptions{})
	return err
}

func (p *gw2Producer) close() error { return p.p.GetRedisClient().Close() }

type gw2Consumer struct {
	m  *workers.Manager
	wg sync.WaitGroup
}

func (c *gw2Consumer) stop(context.Context) error {
	c.m.Stop()
	c.wg.Wait()
	return c.m.GetRedisClient().Close()
}
