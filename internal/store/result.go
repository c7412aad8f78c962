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
