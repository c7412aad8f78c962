package exq

import (
	"context"
	"errors"
	"sort"

	"github.com/exqgo/exq/internal/store"
)

// ShardedAPI is the admin API over several namespaces: counts and lists are summed or merged
// across shards, and a job found by jid is looked for in each. What works on one namespace
// (a page of a set, signals, removals by raw string) is on Shards.
type ShardedAPI struct {
	shards   []*API
	conn     *store.Conn
	released bool // conn was closed
}

// NewShardedAPI connects to Redis and returns an API over shards.Namespaces (By is not used).
// opts.Namespace and opts.NoNamespace must be unset. Close it when done.
func NewShardedAPI(ctx context.Context, opts ClientOptions, shards ShardOptions) (*ShardedAPI, error) {
	conn, apis, err := openShards(ctx, opts, shards, NewAPI)
	if err != nil {
		return nil, err
	}
	return &ShardedAPI{shards: apis, conn: conn}, nil
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
	return a.conn.Close()
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
