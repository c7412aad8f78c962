package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The raw baseline: what go-redis and Redis do with no library in between. Jobs are documents
// shaped like exq's (same fields, same size), pushed with LPUSH; workers take them with
// RPOPLPUSH into a backup list (BRPOPLPUSH when the queue is empty) and remove them with
// LREM -1, one round trip each, one goroutine per unit of concurrency. The workers decode the
// document's class, jid and two int args (runDoc, shared with raw-batched); they used to pick
// the one int out of the text.
func rawTargets(addr string, db int) []*target {
	queue, backup := rawNS+":queue:"+queueName, rawNS+":queue:backup::raw::"+queueName
	client := func(pool int) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: addr, DB: db, PoolSize: pool})
	}
	return []*target{{
		Name: "raw go-redis", Lib: "raw", DB: db,
		newProducer: func(ctx context.Context, callers int) (producer, error) {
			rdb := client(callers + 10)
			if err := rdb.Ping(ctx).Err(); err != nil {
				_ = rdb.Close()
				return nil, errorf("raw", "ping", err)
			}
			return &rawProducer{rdb: rdb, queue: queue, docs: newDocMaker()}, nil
		},
		newConsumer: func(ctx context.Context, c int, onJob func(i, at int64)) (consumer, error) {
			rdb := client(c + 10)
			if err := rdb.Ping(ctx).Err(); err != nil {
				_ = rdb.Close()
				return nil, errorf("raw", "ping", err)
			}
			rc := &rawConsumer{rdb: rdb}
			runCtx, cancel := context.WithCancel(context.Background())
			rc.cancel = cancel
			for range c {
				rc.wg.Add(1)
				go func() {
					defer rc.wg.Done()
					rc.work(runCtx, queue, backup, onJob)
				}()
			}
			return rc, nil
		},
	}}
}

// docMaker renders exq-shaped job documents cheaply (strconv, no reflection), so the baseline
// measures Redis and the client, not JSON encoding.
type docMaker struct {
	prefix string
	n      atomic.Uint64
}

func newDocMaker() *docMaker {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return &docMaker{prefix: hex.EncodeToString(b)}
}

func (d *docMaker) doc(i int64) string {
	now := float64(time.Now().UnixMicro()) / 1e6
	b := make([]byte, 0, 192)
	b = append(b, `{"class":"`+jobClass+`","args":[`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, nowNS(), 10)
	b = append(b, `],"queue":"`+queueName+`","jid":"`...)
	b = append(b, d.prefix...)
	seq := strconv.FormatUint(d.n.Add(1), 16)
	for range 16 - len(seq) {
		b = append(b, '0')
	}
	b = append(b, seq...)
	b = append(b, `","enqueued_at":`...)
	b = strconv.AppendFloat(b, now, 'f', 6, 64)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendFloat(b, now, 'f', 6, 64)
	b = append(b, `,"retry":25}`...)
	return string(b)
}

// runDoc decodes a job document made by docMaker (class, jid and the two int args) and calls
// onJob with the args. The decoding is a fixed-shape scan (strings.Index, strconv), no
// reflection: the baselines are meant as ceilings, and encoding/json into a struct cost about
// 4 µs per job (38 % of raw-batched's CPU in a profile, more than exq's whole header decode
// and Bind), which would have put the "ceiling" below exq.
func runDoc(lib, doc string, onJob func(i, at int64)) {
	i, at, err := decodeDoc(doc)
	if err != nil {
		argError(lib, err)
		onJob(-1, 0)
		return
	}
	onJob(i, at)
}

func decodeDoc(doc string) (i, at int64, err error) {
	class, ok1 := stringField(doc, `"class":"`)
	jid, ok2 := stringField(doc, `"jid":"`)
	if !ok1 || !ok2 || class != jobClass || jid == "" {
		return 0, 0, fmt.Errorf("not a %s job with a jid: %.80s", jobClass, doc)
	}
	k := strings.Index(doc, `"args":[`)
	if k < 0 {
		return 0, 0, fmt.Errorf("no args: %.80s", doc)
	}
	rest := doc[k+len(`"args":[`):]
	end := strings.IndexByte(rest, ']')
	a, b, ok := strings.Cut(rest[:max(end, 0)], ",")
	if end < 0 || !ok {
		return 0, 0, fmt.Errorf("args are not two ints: %.80s", doc)
	}
	if i, err = strconv.ParseInt(strings.TrimSpace(a), 10, 64); err == nil {
		at, err = strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	}
	return i, at, err
}

// stringField is the string value after key (which ends with the opening quote); escapes are
// refused (docMaker writes none).
func stringField(doc, key string) (string, bool) {
	k := strings.Index(doc, key)
	if k < 0 {
		return "", false
	}
	v := doc[k+len(key):]
	end := strings.IndexByte(v, '"')
	if end < 0 || strings.IndexByte(v[:end], '\\') >= 0 {
		return "", false
	}
	return v[:end], true
}

type rawProducer struct {
	rdb   *redis.Client
	queue string
	docs  *docMaker
}

func (p *rawProducer) enqueue(ctx context.Context, i int64) error {
	return p.rdb.LPush(ctx, p.queue, p.docs.doc(i)).Err()
}

// enqueueBatch pipelines one LPUSH per job.
func (p *rawProducer) enqueueBatch(ctx context.Context, is []int64) error {
	pipe := p.rdb.Pipeline()
	for _, i := range is {
		pipe.LPush(ctx, p.queue, p.docs.doc(i))
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (p *rawProducer) close() error { return p.rdb.Close() }

type rawConsumer struct {
	rdb    *redis.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   atomic.Int64
}

func (c *rawConsumer) work(ctx context.Context, queue, backup string, onJob func(i, at int64)) {
	for ctx.Err() == nil {
		doc, err := c.rdb.RPopLPush(ctx, queue, backup).Result()
		if errors.Is(err, redis.Nil) {
			// Idle: block (1 s at most, so that stop is prompt).
			doc, err = c.rdb.BRPopLPush(ctx, queue, backup, time.Second).Result()
		}
		if err != nil {
			if !errors.Is(err, redis.Nil) && ctx.Err() == nil {
				c.errs.Add(1)
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		runDoc("raw", doc, onJob)
		if err := c.rdb.LRem(ctx, backup, -1, doc).Err(); err != nil && ctx.Err() == nil {
			c.errs.Add(1)
		}
	}
}

func (c *rawConsumer) stop(context.Context) error {
	c.cancel()
	c.wg.Wait()
	return c.rdb.Close()
}
