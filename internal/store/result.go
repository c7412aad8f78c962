package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetResult stores job jid's result for ttl and announces it to whoever waits for it.
func (jq *Store) SetResult(ctx context.Context, jid string, val []byte, ttl time.Duration) error {
	p := jq.rdb.TxPipeline()
	p.Set(ctx, jq.keys.Result(jid), val, max(ttl, time.Millisecond))
	p.Publish(ctx, jq.keys.ResultReady(jid), "")
	_, err := p.Exec(ctx)
	return err
}

// Result reads job jid's result; ok is false when none is stored.
func (jq *Store) Result(ctx context.Context, jid string) (val []byte, ok bool, err error) {
	val, err = jq.rdb.Get(ctx, jq.keys.Result(jid)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return val, err == nil, err
}

// WaitResult waits until job jid's result is stored and returns it, or until ctx ends. It
// subscribes before it reads, so a result stored in between is not missed; a wake-up lost with
// a broken connection is covered by reading again every recheck.
func (jq *Store) WaitResult(ctx context.Context, jid string, recheck time.Duration) ([]byte, error) {
	sub := jq.rdb.Subscribe(ctx, jq.keys.ResultReady(jid))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is confirmed
		return nil, err
	}
	ch := sub.Channel()
	tick := time.NewTicker(recheck)
	defer tick.Stop()
	for {
		val, ok, err := jq.Result(ctx, jid)
		if err != nil {
			return nil, err
		}
		if ok {
			return val, nil
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-ch:
		case <-tick.C:
		}
	}
}

// ResultHead is the start of one job's stored result and the whole result's length.
type ResultHead struct {
	// Head is the first bytes of the result, at most the limit asked for.
	Head []byte
	// Size is the whole result's length in bytes: 0 when none is stored.
	Size int64
	// Err is Redis's refusal for this job alone (the key holds no string): the others are read.
	Err error
}

// resultHeadsChunk bounds the jobs read in one pipeline.
const resultHeadsChunk = 500

// ResultHeads reads, for each of jids, the first limit bytes of its stored result and the
// result's length (GETRANGE and STRLEN, pipelined): a result may be megabytes where a display
// wants its start. It writes nothing.
func (jq *Store) ResultHeads(ctx context.Context, jids []string, limit int64) ([]ResultHead, error) {
	out := make([]ResultHead, len(jids))
	for start := 0; start < len(jids); start += resultHeadsChunk {
		chunk := jids[start:min(start+resultHeadsChunk, len(jids))]
		p := jq.rdb.Pipeline()
		heads := make([]*redis.StringCmd, len(chunk))
		sizes := make([]*redis.IntCmd, len(chunk))
		for i, jid := range chunk {
			k := jq.keys.Result(jid)
			heads[i] = p.GetRange(ctx, k, 0, max(limit, 1)-1)
			sizes[i] = p.StrLen(ctx, k)
		}
		_, _ = p.Exec(ctx) // each command's error is read below
		for i := range chunk {
			r := &out[start+i]
			head, err := heads[i].Bytes()
			if err == nil {
				r.Size, err = sizes[i].Result()
			}
			var refused redis.Error
			switch {
			case errors.As(err, &refused):
				r.Err = err
			case err != nil:
				return nil, err
			case r.Size > 0:
				r.Head = head
			}
		}
	}
	return out, nil
}
