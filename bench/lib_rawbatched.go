package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The bare ceiling, raw-batched: exq's job model (PERF-NOTES' "bare implementation") with none
// of its bookkeeping. Jobs are the same exq-shaped documents as raw's (docMaker), pushed with
// LPUSH (pipelined for batches). One fetcher moves up to `free` jobs per round trip with a Lua
// loop of RPOPLPUSH from the queue into a backup list of this consumer's own (a blocking
// BRPOPLPUSH of one job, 0.2 s at most, when the queue is empty); c long-lived workers decode the
// document's class, jid and two int args (runDoc, no reflection); an acker removes finished jobs with
// one pipeline per batch (every job that finished while the previous pipeline was in flight):
// `LREM backup -1 <raw>` per job and one INCRBY of a processed counter. No stats per second,
// no busy list, no heartbeat, no retries, no scheduler, no pub/sub wake-up. A worker frees its
// slot when its job is handed to the acker, as exq's do (asynchronous acks), so at most c jobs
// run at once.
func rawBatchedTargets(addr string, db int) []*target {
	queue := rawbNS + ":queue:" + queueName
	client := func(pool int) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: addr, DB: db, PoolSize: pool})
	}
	return []*target{{
		Name: "raw-batched", Lib: "raw-batched", DB: db, NoEnqueue: true, drainNS: rawbNS,
		newProducer: func(ctx context.Context, callers int) (producer, error) {
			rdb := client(callers + 10)
			if err := rdb.Ping(ctx).Err(); err != nil {
				_ = rdb.Close()
				return nil, errorf("raw-batched", "ping", err)
			}
			return &rawProducer{rdb: rdb, queue: queue, docs: newDocMaker()}, nil
		},
		newConsumer: func(ctx context.Context, c int, onJob func(i, at int64)) (consumer, error) {
			rdb := client(4) // the fetcher's and the acker's connections, and spares
			if err := rdb.Ping(ctx).Err(); err != nil {
				_ = rdb.Close()
				return nil, errorf("raw-batched", "ping", err)
			}
			id := make([]byte, 6)
			_, _ = rand.Read(id)
			rc := &rawBatchedConsumer{
				rdb:       rdb,
				queue:     queue,
				backup:    rawbNS + ":queue:backup::" + hex.EncodeToString(id) + "::" + queueName,
				processed: rawbNS + ":stat:processed",
				c:         c,
				slots:     make(chan struct{}, c),
				jobs:      make(chan string, c),
				done:      make(chan string, c),
			}
			for range c {
				rc.slots <- struct{}{}
			}
			runCtx, cancel := context.WithCancel(context.Background())
			rc.cancel = cancel
			rc.fetching.Add(1)
			go rc.fetch(runCtx)
			for range c {
				rc.working.Add(1)
				go rc.work(onJob)
			}
			rc.acking.Add(1)
			go rc.ack()
			return rc, nil
		},
	}}
}

// fetchScript moves up to ARGV[1] jobs from the queue (KEYS[1]) into the backup list (KEYS[2])
// and returns them, oldest first.
var fetchScript = redis.NewScript(`
local out = {}
for k = 1, tonumber(ARGV[1]) do
  local job = redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
  if not job then break end
  out[k] = job
end
return out
`)

type rawBatchedConsumer struct {
	rdb                      *redis.Client
	queue, backup, processed string
	c                        int
	slots                    chan struct{} // one token per free worker slot
	jobs                     chan string   // fetched, to the workers
	done                     chan string   // finished, to the acker
	cancel                   context.CancelFunc
	fetching, working        sync.WaitGroup
	acking                   sync.WaitGroup
	errs                     atomic.Int64
	firstErr                 atomic.Pointer[error]
	// for describe: round trips and the jobs they carried
	fetches, fetched, acks, acked atomic.Int64
}

// describe says how many jobs a fetch and an ack pipeline carried on average (logged after a
// process run).
func (c *rawBatchedConsumer) describe() string {
	f, a := max(c.fetches.Load(), 1), max(c.acks.Load(), 1)
	return fmt.Sprintf("%.1f jobs per fetch round trip (%d fetches), %.1f per ack pipeline (%d pipelines)",
		float64(c.fetched.Load())/float64(f), c.fetches.Load(), float64(c.acked.Load())/float64(a), c.acks.Load())
}

func (c *rawBatchedConsumer) redisErr(err error) {
	c.errs.Add(1)
	c.firstErr.CompareAndSwap(nil, &err)
}

// fetch takes the free slots (at least one, waiting for it), fetches up to that many jobs in one
// round trip, hands them to the workers and gives back the slots it did not fill. Redis calls
// use their own context: stop ends the loop between calls (within 0.2 s), never in the middle of
// a pop whose job would then be left in the backup list.
func (c *rawBatchedConsumer) fetch(ctx context.Context) {
	defer c.fetching.Done()
	defer close(c.jobs)
	bg := context.Background()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.slots:
		}
		free := 1
	more:
		for free < c.c {
			select {
			case <-c.slots:
				free++
			default:
				break more
			}
		}
		docs, err := fetchScript.Run(bg, c.rdb, []string{c.queue, c.backup}, free).StringSlice()
		if err == nil && len(docs) == 0 {
			// Empty: block for one job, 0.2 s at most (go-redis's BRPopLPush rounds timeouts
			// up to 1 s), so that stop waits little.
			var doc string
			doc, err = c.rdb.Do(bg, "BRPOPLPUSH", c.queue, c.backup, "0.2").Text()
			switch {
			case err == nil:
				docs = []string{doc}
			case errors.Is(err, redis.Nil):
				err = nil
			}
		}
		c.fetches.Add(1)
		c.fetched.Add(int64(len(docs)))
		for _, d := range docs {
			c.jobs <- d // never blocks: one slot per job, and jobs holds c
		}
		for range free - len(docs) {
			c.slots <- struct{}{}
		}
		if err != nil {
			c.redisErr(err)
			if !sleepCtx(ctx, 10*time.Millisecond) {
				return
			}
		}
	}
}

func (c *rawBatchedConsumer) work(onJob func(i, at int64)) {
	defer c.working.Done()
	for doc := range c.jobs {
		runDoc("raw-batched", doc, onJob)
		c.done <- doc
		c.slots <- struct{}{}
	}
}

// ack removes finished jobs from the backup list and counts them: one pipeline per batch, a
// batch being the first finished job and every other one already waiting.
func (c *rawBatchedConsumer) ack() {
	defer c.acking.Done()
	bg := context.Background()
	batch := make([]string, 0, 1024)
	for doc := range c.done {
		batch = append(batch[:0], doc)
	more:
		for len(batch) < cap(batch) {
			select {
			case d, ok := <-c.done:
				if !ok {
					break more
				}
				batch = append(batch, d)
			default:
				break more
			}
		}
		pipe := c.rdb.Pipeline()
		for _, d := range batch {
			pipe.LRem(bg, c.backup, -1, d)
		}
		pipe.IncrBy(bg, c.processed, int64(len(batch)))
		c.acks.Add(1)
		c.acked.Add(int64(len(batch)))
		if _, err := pipe.Exec(bg); err != nil {
			c.redisErr(err)
		}
	}
}

// stop ends the fetcher, lets the workers run what was fetched, and waits for the acker to
// write the last acknowledgements.
func (c *rawBatchedConsumer) stop(context.Context) error {
	c.cancel()
	c.fetching.Wait()
	c.working.Wait()
	close(c.done)
	c.acking.Wait()
	err := c.rdb.Close()
	if n := c.errs.Load(); n > 0 {
		return fmt.Errorf("raw-batched: %d Redis errors, the first: %w", n, *c.firstErr.Load())
	}
	return err
}
