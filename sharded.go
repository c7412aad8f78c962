package exq

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"
	"time"

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
	// token, so that a duplicate meets the lock of the first, whatever By says.
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
	jq := s.ens[s.place(queue, b)].jq
	var holder string
	if b.at.IsZero() {
		holder, err = jq.Enqueue(ctx, queue, b.doc, b.lock)
	} else {
		holder, err = jq.EnqueueAt(ctx, b.at, b.doc, b.lock)
	}
	jid, err := b.result(op, class, queue, holder, err)
	b.finish(jid, err)
	return jid, err
}

// Enqueue pushes a job onto queue in the shard it routes to (ShardOptions.By, or its unique
// token) and returns its jid; see Exq.Enqueue.
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
		if err != nil {
			err = inBatch(err, i)
			for _, done := range builts[:i] {
				done.finish("", err)
			}
			return nil, err
		}
		builts[i] = b
		k := s.place(sp.Queue, b)
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
			items[j] = store.BatchItem{Queue: specs[i].Queue, At: builts[i].at, Job: builts[i].doc, Lock: builts[i].lock}
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

// Sharded is a node that serves several namespaces (shards) with one Redis client: one *Exq
// per namespace, all with the same options, workers and queues. Its enqueue calls spread jobs
// over the shards as ShardOptions.By says. Create it with StartSharded; end it with Stop.
type Sharded struct {
	*sharder
	nodes     []*Exq
	rdb       redis.UniversalClient
	ownClient bool
	released  bool // closeClient was called
	done      chan struct{}
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
	_, rdb, own, err := openRedis(ctx, co)
	if err != nil {
		return nil, err
	}
	s := &Sharded{sharder: &sharder{by: shards.By}, rdb: rdb, ownClient: own, done: make(chan struct{})}
	for _, ns := range shards.Namespaces {
		no := opts
		no.Namespace, no.Redis, no.RedisURL = ns, rdb, ""
		e, err := Start(ctx, no)
		if err != nil {
			_ = s.stopNodes(context.Background())
			_ = closeClient(rdb, own)
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
		err = errors.Join(err, closeClient(s.rdb, s.ownClient))
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

// ShardedClient is an enqueue-only Client over several namespaces, routing as a Sharded node
// does. Create it with NewShardedClient; Close it when done.
type ShardedClient struct {
	*sharder
	clients   []*Client
	rdb       redis.UniversalClient
	ownClient bool
	released  bool // closeClient was called
}

// NewShardedClient connects to Redis and returns an enqueue-only client over shards.
// opts.Namespace and opts.NoNamespace must be unset.
func NewShardedClient(ctx context.Context, opts ClientOptions, shards ShardOptions) (*ShardedClient, error) {
	rdb, own, clients, err := openShards(ctx, opts, shards, func(ctx context.Context, o ClientOptions) (*Client, error) {
		return NewClient(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	c := &ShardedClient{sharder: &sharder{by: shards.By}, clients: clients, rdb: rdb, ownClient: own}
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
	return closeClient(c.rdb, c.ownClient)
}

// openShards opens one Redis client for opts and one T per namespace on it.
func openShards[T any](ctx context.Context, opts ClientOptions, shards ShardOptions,
	open func(context.Context, ClientOptions) (T, error)) (redis.UniversalClient, bool, []T, error) {
	if err := shards.validate(); err != nil {
		return nil, false, nil, err
	}
	if opts.Namespace != "" || opts.NoNamespace {
		return nil, false, nil, fmt.Errorf("%w: Namespace: must be unset for a sharded client (the namespaces are ShardOptions.Namespaces)", ErrInvalidOptions)
	}
	co := opts
	co.Namespace = shards.Namespaces[0]
	_, rdb, own, err := openRedis(ctx, co)
	if err != nil {
		return nil, false, nil, err
	}
	var out []T
	for _, ns := range shards.Namespaces {
		o := opts
		o.Namespace, o.Redis, o.RedisURL = ns, rdb, ""
		x, err := open(ctx, o)
		if err != nil {
			_ = closeClient(rdb, own)
			return nil, false, nil, fmt.Errorf("exq: shard %q: %w", ns, err)
		}
		out = append(out, x)
	}
	return rdb, own, out, nil
}

// ShardedAPI is the admin API over several namespaces: counts and lists are summed or merged
// across shards, and a job found by jid is looked for in each. What works on one namespace
// (a page of a set, signals, removals by raw string) is on Shards.
type ShardedAPI struct {
	shards    []*API
	rdb       redis.UniversalClient
	ownClient bool
	released  bool // closeClient was called
}

// NewShardedAPI connects to Redis and returns an API over shards.Namespaces (By is not used).
// opts.Namespace and opts.NoNamespace must be unset. Close it when done.
func NewShardedAPI(ctx context.Context, opts ClientOptions, shards ShardOptions) (*ShardedAPI, error) {
	rdb, own, apis, err := openShards(ctx, opts, shards, NewAPI)
	if err != nil {
		return nil, err
	}
	return &ShardedAPI{shards: apis, rdb: rdb, ownClient: own}, nil
}

// Close closes the Redis client if NewShardedAPI built it.
func (a *ShardedAPI) Close() error {
	if a.released {
		return nil
	}
	a.released = true
	for _, x := range a.shards {
		_ = x.Close() // the shared client: ends their uses of it, closes nothing
	}
	return closeClient(a.rdb, a.ownClient)
}

// Shards returns the API of each namespace, in ShardOptions.Namespaces order.
func (a *ShardedAPI) Shards() []*API { return append([]*API(nil), a.shards...) }

// Stats sums the all-time counters of every shard.
func (a *ShardedAPI) Stats(ctx context.Context) (Stats, error) {
	var sum Stats
	for _, s := range a.shards {
		st, err := s.Stats(ctx)
		if err != nil {
			return sum, err
		}
		sum.Processed += st.Processed
		sum.Failed += st.Failed
	}
	return sum, nil
}

// Overview sums every shard's overview. A node serving every shard counts once per shard in
// Processes.
func (a *ShardedAPI) Overview(ctx context.Context) (Overview, error) {
	var sum Overview
	for _, s := range a.shards {
		o, err := s.Overview(ctx)
		if err != nil {
			return sum, err
		}
		sum.Add(o)
	}
	return sum, nil
}

// Queues lists the queue names known to any shard, sorted.
func (a *ShardedAPI) Queues(ctx context.Context) ([]string, error) {
	sizes, err := a.QueueSizes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(sizes))
	for q := range sizes {
		out = append(out, q)
	}
	sort.Strings(out)
	return out, nil
}

// QueueSizes maps every queue to its waiting jobs summed over the shards.
func (a *ShardedAPI) QueueSizes(ctx context.Context) (map[string]int64, error) {
	sum := map[string]int64{}
	for _, s := range a.shards {
		m, err := s.QueueSizes(ctx)
		if err != nil {
			return nil, err
		}
		for q, n := range m {
			sum[q] += n
		}
	}
	return sum, nil
}

// PauseQueue pauses queue q in every shard (API.PauseQueue); on an error, the shards before
// the failing one stay paused.
func (a *ShardedAPI) PauseQueue(ctx context.Context, q string) error {
	for _, s := range a.shards {
		if err := s.PauseQueue(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// ResumeQueue resumes queue q in every shard (API.ResumeQueue).
func (a *ShardedAPI) ResumeQueue(ctx context.Context, q string) error {
	for _, s := range a.shards {
		if err := s.ResumeQueue(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// PausedQueues lists, sorted, the queues paused in at least one shard.
func (a *ShardedAPI) PausedQueues(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	for _, s := range a.shards {
		qs, err := s.PausedQueues(ctx)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			seen[q] = true
		}
	}
	out := make([]string, 0, len(seen))
	for q := range seen {
		out = append(out, q)
	}
	sort.Strings(out)
	return out, nil
}

// QueueStates merges every shard's API.QueueStates by queue name, sorted: Size, InUse and
// Started are summed over the shards, and a queue is Paused when it is paused in any shard.
// GlobalLimit and Rate are those of the first shard that has them: a queue's limits are
// enforced per shard, so a GlobalLimit of 5 allows 5 running jobs in each shard (InUse, the
// sum, can reach 5 times the number of shards), and a Rate allows its N starts per Per in
// each shard.
func (a *ShardedAPI) QueueStates(ctx context.Context) ([]QueueState, error) {
	merged := map[string]*QueueState{}
	for _, s := range a.shards {
		states, err := s.QueueStates(ctx)
		if err != nil {
			return nil, err
		}
		for _, st := range states {
			m, ok := merged[st.Name]
			if !ok {
				m = &QueueState{Name: st.Name}
				merged[st.Name] = m
			}
			m.Size += st.Size
			m.InUse += st.InUse
			m.Started += st.Started
			m.Paused = m.Paused || st.Paused
			if m.GlobalLimit == 0 {
				m.GlobalLimit = st.GlobalLimit
			}
			if m.Rate == (Rate{}) {
				m.Rate = st.Rate
			}
		}
	}
	out := make([]QueueState, 0, len(merged))
	for _, m := range merged {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Size sums the size of a sorted set (RetrySet, ScheduledSet, DeadSet) over the shards.
func (a *ShardedAPI) Size(ctx context.Context, set Set) (int64, error) {
	var sum int64
	for _, s := range a.shards {
		n, err := s.Size(ctx, set)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// Processes lists the processes of every shard, by start time. A node serving several shards
// appears once per shard (each shard is a node of its own to Exq and Sidekiq).
func (a *ShardedAPI) Processes(ctx context.Context) ([]Process, error) {
	var out []Process
	for _, s := range a.shards {
		ps, err := s.Processes(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

// Find looks for job jid in a sorted set of each shard, returning the first found and the
// index of its shard. No such job: ErrJobNotFound.
func (a *ShardedAPI) Find(ctx context.Context, set Set, jid string) (JobRecord, int, error) {
	return eachShard(a.shards, func(s *API) (JobRecord, error) { return s.Find(ctx, set, jid) })
}

// FindInQueue looks for job jid waiting in queue q of each shard.
func (a *ShardedAPI) FindInQueue(ctx context.Context, q, jid string) (JobRecord, int, error) {
	return eachShard(a.shards, func(s *API) (JobRecord, error) { return s.FindInQueue(ctx, q, jid) })
}

// RequeueJob moves job jid from a sorted set back to its queue, in the shard that holds it
// (the job stays in its shard).
func (a *ShardedAPI) RequeueJob(ctx context.Context, set Set, jid string) (JobRecord, int, error) {
	return eachShard(a.shards, func(s *API) (JobRecord, error) { return s.RequeueJob(ctx, set, jid) })
}

// List returns up to o.Size jobs of a sorted set from each shard (its first page in the set's
// order: Retries and Scheduled soonest due first, Dead most recent first; Reverse flips it),
// merged in that order. o.Offset skips that many jobs in every shard at once, so a page holds
// up to Size × shards jobs.
func (a *ShardedAPI) List(ctx context.Context, set Set, o ListOptions) ([]JobRecord, error) {
	var out []JobRecord
	for _, s := range a.shards {
		var recs []JobRecord
		var err error
		switch set {
		case RetrySet:
			recs, err = s.Retries(ctx, o)
		case ScheduledSet:
			recs, err = s.Scheduled(ctx, o)
		case DeadSet:
			recs, err = s.Dead(ctx, o)
		default:
			_, err = s.setKey(set)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	newestFirst := (set == DeadSet) != o.Reverse
	sort.SliceStable(out, func(i, j int) bool {
		if newestFirst {
			return out[i].Score > out[j].Score
		}
		return out[i].Score < out[j].Score
	})
	return out, nil
}

func eachShard(shards []*API, f func(*API) (JobRecord, error)) (JobRecord, int, error) {
	for i, s := range shards {
		rec, err := f(s)
		if err == nil {
			return rec, i, nil
		}
		if !errors.Is(err, ErrJobNotFound) {
			return JobRecord{}, i, err
		}
	}
	return JobRecord{}, -1, ErrJobNotFound
}

// ShardNamespaces returns n namespaces "{<prefix>0}", "{<prefix>1}", … chosen so that, on a
// Redis Cluster, their hash tags sit on n different masters as the slot map stands now (it
// skips a candidate whose slot is on a master already taken). With fewer than n masters it
// fails. On a single Redis it returns the first n names. The choice holds until slots are
// moved (resharding, adding masters); a failover keeps it, as the replica takes the slots.
func ShardNamespaces(ctx context.Context, rdb redis.UniversalClient, prefix string, n int) ([]string, error) {
	var out []string
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		for i := range n {
			out = append(out, fmt.Sprintf("{%s%d}", prefix, i))
		}
		return out, nil
	}
	masterOf, err := slotMasters(ctx, cc)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for i := 0; len(out) < n && i < 10000; i++ {
		tag := fmt.Sprintf("%s%d", prefix, i)
		slot, err := cc.ClusterKeySlot(ctx, tag).Result()
		if err != nil {
			return nil, fmt.Errorf("exq: shard namespaces: CLUSTER KEYSLOT: %w", err)
		}
		m := masterOf(slot)
		if m == "" || used[m] {
			continue
		}
		used[m] = true
		out = append(out, "{"+tag+"}")
	}
	if len(out) < n {
		return nil, fmt.Errorf("exq: shard namespaces: found %d masters for %d shards", len(out), n)
	}
	return out, nil
}

// slotMasters returns a function naming the master (by its shard's index) that holds a slot,
// from CLUSTER SHARDS (Redis 7), or from CLUSTER SLOTS on an older cluster.
func slotMasters(ctx context.Context, cc *redis.ClusterClient) (func(slot int64) string, error) {
	type span struct {
		start, end int64
		master     string
	}
	var spans []span
	shards, err := cc.ClusterShards(ctx).Result()
	if err == nil {
		for i, sh := range shards {
			for _, r := range sh.Slots {
				spans = append(spans, span{r.Start, r.End, strconv.Itoa(i)})
			}
		}
	} else {
		//lint:ignore SA1019 the fallback for clusters older than Redis 7, which lack CLUSTER SHARDS
		slots, err2 := cc.ClusterSlots(ctx).Result()
		if err2 != nil {
			return nil, fmt.Errorf("exq: shard namespaces: CLUSTER SHARDS: %w; CLUSTER SLOTS: %w", err, err2)
		}
		for _, s := range slots {
			if len(s.Nodes) > 0 {
				spans = append(spans, span{int64(s.Start), int64(s.End), s.Nodes[0].ID + s.Nodes[0].Addr})
			}
		}
	}
	return func(slot int64) string {
		for _, s := range spans {
			if s.start <= slot && slot <= s.end {
				return s.master
			}
		}
		return ""
	}, nil
}
