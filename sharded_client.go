package exq

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/exqgo/exq/internal/store"
)

// sharder routes built jobs to one enqueuer per namespace. Jobs are built by the first
// enqueuer (a document does not depend on its namespace) and then written by the shard's,
// with the unique lock's key rebuilt in the shard's namespace.
type sharder struct {
	by  ShardBy
	ens []*enqueuer
}

func (s *sharder) index(queue string, b built) int {
	key := queue
	switch {
	case b.token != "":
		key = "unique:" + b.token
	case b.debounce != nil:
		key = "debounce:" + b.debounce.Key
	case s.by == ByJID:
		key = b.jid
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(s.ens)))
}

// place returns the shard of b (its lock is taken in that shard's namespace).
func (s *sharder) place(queue string, b built) int {
	return s.index(queue, b)
}

func (s *sharder) enqueueAt(ctx context.Context, op, queue, class string, at time.Time, args any, opts []EnqueueOption) (string, error) {
	b, err := s.ens[0].build(ctx, op, queue, class, args, at, opts)
	if err != nil {
		return "", err
	}
	if b.debounce != nil {
		return s.ens[s.place(queue, b)].enqueueDebounced(ctx, b)
	}
	jq := s.ens[s.place(queue, b)].jq
	var holder string
	switch {
	case b.key != "":
		holder, err = jq.EnqueueKeyed(ctx, store.BatchItem{Queue: queue, At: b.at, Job: b.doc, Lock: b.lock}, b.key)
	case b.at.IsZero():
		holder, err = jq.Enqueue(ctx, queue, b.doc, b.lock)
	default:
		holder, err = jq.EnqueueAt(ctx, b.at, b.doc, b.lock)
	}
	jid, err := b.result(op, class, queue, holder, err)
	b.finish(jid, err)
	return jid, err
}

// Enqueue pushes a job onto queue in the shard it routes to (ShardOptions.By, or its unique
// token, or its debounce key) and returns its jid; see Exq.Enqueue.
func (s *sharder) Enqueue(ctx context.Context, queue, class string, args any, opts ...EnqueueOption) (string, error) {
	return s.enqueueAt(ctx, "enqueue", queue, class, time.Time{}, args, opts)
}

// EnqueueIn schedules a job to run after d in the shard it routes to; see Exq.EnqueueIn.
func (s *sharder) EnqueueIn(ctx context.Context, queue, class string, d time.Duration, args any, opts ...EnqueueOption) (string, error) {
	now, err := s.ens[0].serverNow(ctx, "enqueue in")
	if err != nil {
		return "", err
	}
	return s.enqueueAt(ctx, "enqueue in", queue, class, now.Add(d), args, opts)
}

// EnqueueAt schedules a job to run at t in the shard it routes to; see Exq.EnqueueAt.
func (s *sharder) EnqueueAt(ctx context.Context, queue, class string, t time.Time, args any, opts ...EnqueueOption) (string, error) {
	if t.IsZero() {
		return "", &invalidJobError{op: "enqueue at", msg: "time is zero"}
	}
	return s.enqueueAt(ctx, "enqueue at", queue, class, t, args, opts)
}

// EnqueueAll writes each shard's part of the batch in one atomic step per shard. A shard that
// fails does not undo the others: its jobs' results carry its error (JID empty), the others'
// say what was written, and the error names the failed shards.
func (s *sharder) EnqueueAll(ctx context.Context, specs []JobSpec) ([]EnqueueResult, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	now, err := s.ens[0].serverNow(ctx, "enqueue all")
	if err != nil {
		return nil, err
	}
	parts := make([][]int, len(s.ens))
	builts := make([]built, len(specs))
	for i, sp := range specs {
		b, err := s.ens[0].buildSpec(ctx, now, "enqueue all", sp)
		if err == nil && b.debounce != nil {
			err = b.refuseInBatch("enqueue all")
		}
		if err == nil && b.key != "" {
			err = &invalidJobError{op: "enqueue all", msg: "Key is not supported by a sharded EnqueueAll yet: enqueue keyed jobs one by one"}
			b.finish("", err)
		}
		if err != nil {
			err = inBatch(err, i)
			for _, done := range builts[:i] {
				done.finish("", err)
			}
			return nil, err
		}
		builts[i] = b
		k := s.place(b.queue, b)
		parts[k] = append(parts[k], i)
	}
	results := make([]EnqueueResult, len(specs))
	var errs []error
	for k, idx := range parts {
		if len(idx) == 0 {
			continue
		}
		items := make([]store.BatchItem, len(idx))
		for j, i := range idx {
			items[j] = store.BatchItem{Queue: builts[i].queue, At: builts[i].at, Job: builts[i].doc, Lock: builts[i].lock}
		}
		ns := s.ens[k].jq.Namespace()
		holders, err := s.ens[k].jq.EnqueueAll(ctx, items)
		if err != nil && !errors.Is(err, ErrNotReplicated) {
			err = fmt.Errorf("exq: enqueue all: shard %q (%d jobs): %w", ns, len(idx), err)
			errs = append(errs, err)
			for _, i := range idx {
				results[i] = EnqueueResult{Err: err}
			}
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("exq: enqueue all: shard %q (%d jobs): written on the master: %w", ns, len(idx), err))
		}
		for j, h := range holders {
			i := idx[j]
			if h != "" {
				results[i] = EnqueueResult{JID: h, Err: &UniqueConflictError{JID: h, Token: builts[i].token}}
			} else {
				results[i] = EnqueueResult{JID: builts[i].jid}
			}
		}
	}
	for i, b := range builts {
		b.finish(results[i].JID, results[i].Err)
	}
	return results, errors.Join(errs...)
}

// ShardedClient is an enqueue-only Client over several namespaces, routing as a Sharded node
// does. Create it with NewShardedClient; Close it when done.
type ShardedClient struct {
	*sharder
	clients  []*Client
	conn     *store.Conn
	released bool // conn was closed
}

// NewShardedClient connects to Redis and returns an enqueue-only client over shards.
// opts.Namespace and opts.NoNamespace must be unset.
func NewShardedClient(ctx context.Context, opts ClientOptions, shards ShardOptions) (*ShardedClient, error) {
	conn, clients, err := openShards(ctx, opts, shards, func(ctx context.Context, o ClientOptions) (*Client, error) {
		return NewClient(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	c := &ShardedClient{sharder: &sharder{by: shards.By}, clients: clients, conn: conn}
	for _, x := range clients {
		c.ens = append(c.ens, x.enq)
	}
	return c, nil
}

// Close closes the Redis client if NewShardedClient built it.
func (c *ShardedClient) Close() error {
	if c.released {
		return nil
	}
	c.released = true
	for _, x := range c.clients {
		_ = x.Close() // the shared client: ends their uses of it, closes nothing
	}
	return c.conn.Close()
}

// openShards opens one Redis client for opts and one T per namespace on it.
func openShards[T any](ctx context.Context, opts ClientOptions, shards ShardOptions,
	open func(context.Context, ClientOptions) (T, error)) (*store.Conn, []T, error) {
	if err := shards.validate(); err != nil {
		return nil, nil, err
	}
	if opts.Namespace != "" || opts.NoNamespace {
		return nil, nil, fmt.Errorf("%w: Namespace: must be unset for a sharded client (the namespaces are ShardOptions.Namespaces)", ErrInvalidOptions)
	}
	co := opts
	co.Namespace = shards.Namespaces[0]
	_, conn, err := openRedis(ctx, co)
	if err != nil {
		return nil, nil, err
	}
	var out []T
	for _, ns := range shards.Namespaces {
		o := opts
		o.Namespace, o.Redis, o.RedisURL = ns, conn.Client(), ""
		x, err := open(ctx, o)
		if err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("exq: shard %q: %w", ns, err)
		}
		out = append(out, x)
	}
	return conn, out, nil
}
