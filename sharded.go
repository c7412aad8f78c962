package exq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store"
)

// ShardBy says how a sharded enqueuer picks the namespace (shard) of a job.
type ShardBy int

const (
	// ByQueue hashes the queue name: all jobs of a queue go to one shard, so a queue stays
	// FIFO and its Concurrency is a limit per node, as without sharding. Many queues spread
	// over the shards; one hot queue does not.
	ByQueue ShardBy = iota
	// ByJID hashes the job's jid: the jobs of every queue spread evenly over all shards. Order
	// holds only within a shard (a job enqueued later can run first), and a queue's
	// Concurrency applies per shard (a node runs up to Concurrency jobs of the queue in each).
	ByJID
)

// String names the mode.
func (b ShardBy) String() string {
	switch b {
	case ByQueue:
		return "ByQueue"
	case ByJID:
		return "ByJID"
	}
	return fmt.Sprintf("ShardBy(%d)", int(b))
}

// ShardOptions lists the namespaces a sharded node, client or API spreads jobs over.
type ShardOptions struct {
	// Namespaces are the shards, each a plain Exq/Sidekiq namespace. On a Redis Cluster each
	// needs a hash tag, and the tags should sit on different masters (ShardNamespaces finds
	// such tags). Required; at least one, no duplicates. Their order is part of the routing:
	// every enqueuer of a set of shards must list them in the same order.
	Namespaces []string
	// By picks a job's shard. Default ByQueue. Unique jobs are always routed by their unique
	// token, so that a duplicate meets the lock of the first, whatever By says, and debounced
	// jobs by their debounce key, so that a burst lives in one shard.
	By ShardBy
}

func (s ShardOptions) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: ShardOptions.%s", ErrInvalidOptions, fmt.Sprintf(format, a...))
	}
	if len(s.Namespaces) == 0 {
		return bad("Namespaces: at least one namespace is needed")
	}
	seen := map[string]bool{}
	for _, ns := range s.Namespaces {
		if ns == "" {
			return bad("Namespaces: a namespace is empty")
		}
		if seen[ns] {
			return bad("Namespaces: %q is listed twice", ns)
		}
		seen[ns] = true
	}
	if s.By != ByQueue && s.By != ByJID {
		return bad("By: unknown mode %d", int(s.By))
	}
	return nil
}

// Sharded is a node that serves several namespaces (shards) with one Redis client: one *Exq
// per namespace, all with the same options, workers and queues. Its enqueue calls spread jobs
// over the shards as ShardOptions.By says. Create it with StartSharded; end it with Stop.
type Sharded struct {
	*sharder
	nodes    []*Exq
	conn     *store.Conn
	released bool // conn was closed
	done     chan struct{}
}

var (
	_ Enqueuer = (*Sharded)(nil)
	_ Enqueuer = (*ShardedClient)(nil)
)

// StartSharded starts one node per namespace of shards, sharing one Redis client (built from
// opts.RedisURL unless opts.Redis is set). opts.Namespace and opts.NoNamespace must be unset:
// the namespaces come from shards. Every other option applies to every shard, so a queue's
// Concurrency is a limit per shard (a Sharded node with three shards may run three times
// Concurrency jobs of a queue). ctx bounds the nodes' lives as for Start.
func StartSharded(ctx context.Context, opts Options, shards ShardOptions) (*Sharded, error) {
	if err := shards.validate(); err != nil {
		return nil, err
	}
	if opts.Namespace != "" || opts.NoNamespace {
		return nil, fmt.Errorf("%w: Namespace: must be unset for StartSharded (the namespaces are ShardOptions.Namespaces)", ErrInvalidOptions)
	}
	co := opts.ClientOptions()
	co.Namespace = shards.Namespaces[0]
	_, conn, err := openRedis(ctx, co)
	if err != nil {
		return nil, err
	}
	s := &Sharded{sharder: &sharder{by: shards.By}, conn: conn, done: make(chan struct{})}
	for _, ns := range shards.Namespaces {
		no := opts
		no.Namespace, no.Redis, no.RedisURL = ns, conn.Client(), ""
		e, err := Start(ctx, no)
		if err != nil {
			_ = s.stopNodes(context.Background())
			_ = conn.Close()
			return nil, fmt.Errorf("exq: start shard %q: %w", ns, err)
		}
		s.nodes = append(s.nodes, e)
		s.ens = append(s.ens, e.enq)
	}
	go func() {
		// Done closes when any shard is asked to stop (TERM, ctx): the node as a whole is.
		cases := make(chan struct{}, len(s.nodes))
		for _, e := range s.nodes {
			go func() {
				<-e.Done()
				cases <- struct{}{}
			}()
		}
		<-cases
		close(s.done)
	}()
	return s, nil
}

// Nodes returns the node of each shard, in ShardOptions.Namespaces order, for what is per
// namespace (Subscriptions, NodeID).
func (s *Sharded) Nodes() []*Exq { return append([]*Exq(nil), s.nodes...) }

// Register adds the worker for class on every shard (ErrAlreadyRegistered if it has one).
func (s *Sharded) Register(class string, w Worker) error {
	for _, e := range s.nodes {
		if err := e.Register(class, w); err != nil {
			return err
		}
	}
	return nil
}

// RegistrationDone tells every shard that every worker is registered (Exq.RegistrationDone).
func (s *Sharded) RegistrationDone() {
	for _, e := range s.nodes {
		e.RegistrationDone()
	}
}

// Subscribe makes every shard work on queue with at most concurrency jobs at once per shard.
func (s *Sharded) Subscribe(queue string, concurrency int) error {
	for _, e := range s.nodes {
		if err := e.Subscribe(queue, concurrency); err != nil {
			return err
		}
	}
	return nil
}

// Unsubscribe stops fetching jobs of queue on every shard.
func (s *Sharded) Unsubscribe(queue string) error {
	for _, e := range s.nodes {
		if err := e.Unsubscribe(queue); err != nil {
			return err
		}
	}
	return nil
}

// Done is closed when the node is asked to stop (TERM to any shard, Start's ctx ending).
func (s *Sharded) Done() <-chan struct{} { return s.done }

// Stop stops every shard at once, as Exq.Stop does, and closes the Redis client if
// StartSharded built it. It returns the shards' errors joined.
func (s *Sharded) Stop(ctx context.Context) error {
	err := s.stopNodes(ctx)
	if !s.released {
		s.released = true
		err = errors.Join(err, s.conn.Close())
	}
	return err
}

func (s *Sharded) stopNodes(ctx context.Context) error {
	errs := make([]error, len(s.nodes))
	var wg sync.WaitGroup
	for i, e := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.Stop(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// API returns an admin API over every shard.
func (s *Sharded) API() *ShardedAPI {
	a := &ShardedAPI{}
	for _, e := range s.nodes {
		a.shards = append(a.shards, e.API())
	}
	return a
}

// ShardNamespaces returns n namespaces "{<prefix>0}", "{<prefix>1}", … chosen so that, on a
// Redis Cluster, their hash tags sit on n different masters as the slot map stands now (it
// skips a candidate whose slot is on a master already taken). With fewer than n masters it
// fails. On a single Redis it returns the first n names. The choice holds until slots are
// moved (resharding, adding masters); a failover keeps it, as the replica takes the slots.
func ShardNamespaces(ctx context.Context, rdb redis.UniversalClient, prefix string, n int) ([]string, error) {
	return store.ShardNamespaces(ctx, rdb, prefix, n)
}
