package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// KeyPolicy is how a fetch serves a queue's keyed jobs (docs/keys.md): at most Concurrency
// running per key (0: no limit), at most RateN starts per RatePer per key (0: none), keys in
// turn with their Weights (default 1).
type KeyPolicy struct {
	Concurrency int
	RateN       int
	RatePer     time.Duration
	Weights     map[string]int
	// Hold is read by the runner, not the fetch: a failed job holds its key (a Sequence).
	Hold bool
}

// keyScopeSep separates the queue from the key in a keyed job's lease scope: the name under
// which the manager, the heartbeat and the acker pass a lease around (a queue's name for a
// GlobalLimit's lease). Queue names exq serves hold no control characters, nor do keys.
const keyScopeSep = "\x00"

// KeyScope is the lease scope of a job of key in queue q.
func KeyScope(q, key string) string { return q + keyScopeSep + key }

// splitScope is the queue and key of a lease scope; key is "" for a queue's own leases.
func splitScope(scope string) (q, key string) {
	q, key, _ = strings.Cut(scope, keyScopeSep)
	return q, key
}

// leaseKey is the sorted set that holds the leases of scope.
func (jq *Store) leaseKey(scope string) string {
	if q, key := splitScope(scope); key != "" {
		return jq.keys.KeyLeases(q, key)
	}
	return jq.keys.Leases(scope)
}

// EnqueueKeyed writes one keyed job (enqueue_keyed.lua): onto its key's list, or, with a due
// time, into its queue's delayed set. It returns the holder's jid on a unique conflict.
func (jq *Store) EnqueueKeyed(ctx context.Context, it BatchItem, key string) (holder string, err error) {
	keys := []string{jq.keys.Queues(), jq.keys.KeyJobs(it.Queue, key), jq.keys.KeyDelayed(it.Queue)}
	due := ""
	if !it.At.IsZero() {
		due = wire.FormatTime(it.At)
	}
	args := []any{it.Queue, it.Job, jq.keys.Wake(), "", 0, key, jq.keys.Prefix, due}
	if l := it.Lock; l != nil {
		keys = append(keys, jq.keys.Unique(l.Token))
		args[3], args[4] = l.JID, l.ttlMillis()
	}
	cmd, replErr := jq.evalScript(ctx, scripts.EnqueueKeyed, keys, args...)
	reply, err := cmd.Result()
	if err != nil {
		return "", err
	}
	holder, _ = conflict(reply)
	return holder, replErr
}

// KeyedItem is one keyed job of EnqueueKeyedAll.
type KeyedItem struct {
	BatchItem
	Key string
}

// EnqueueKeyedAll writes keyed jobs without locks in one call (enqueue_keyed_all.lua).
func (jq *Store) EnqueueKeyedAll(ctx context.Context, items []KeyedItem) error {
	args := make([]any, 2, 2+4*len(items))
	args[0], args[1] = jq.keys.Wake(), jq.keys.Prefix
	for _, it := range items {
		due := ""
		if !it.At.IsZero() {
			due = wire.FormatTime(it.At)
		}
		args = append(args, it.Queue, it.Key, it.Job, due)
	}
	cmd, replErr := jq.evalScript(ctx, scripts.EnqueueKeyedAll, []string{jq.keys.Queues()}, args...)
	if err := cmd.Err(); err != nil {
		return err
	}
	return replErr
}

// RetryKeyed is Retry for a keyed job (retry_keyed.lua): the rewritten job waits in its
// queue's delayed set until at, and with hold its key runs nothing else before it.
func (jq *Store) RetryKeyed(ctx context.Context, q, key, jid string, hold bool, raw, rewritten string, at time.Time, epoch string) (bool, error) {
	h := "0"
	if hold {
		h = "1"
	}
	cmd, replErr := jq.evalScript(ctx, scripts.RetryKeyed,
		[]string{jq.keys.KeyDelayed(q), jq.keys.Backup(jq.node, q), jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs(),
			jq.keys.KeyHeld(q), jq.keys.KeyReady(q), jq.keys.KeyBlocked(q)},
		wire.FormatTime(at), rewritten, raw, "", jq.node, epoch, key, jid, h)
	jq.wait.shortfall("retry", replErr)
	n, err := cmd.Int()
	return n == 1, err
}

// releaseKeys removes the leases of ended keyed jobs and readies their keys (release_keys.lua).
func (jq *Store) releaseKeys(ctx context.Context, reqs []AckReq) error {
	args := make([]any, 2, 2+3*len(reqs))
	args[0], args[1] = jq.keys.Prefix, jq.keys.Wake()
	for _, r := range reqs {
		q, key := splitScope(r.Queue)
		args = append(args, q, key, r.Lease)
	}
	// The first key only routes the call (to the namespace's slot on Redis Cluster).
	q, key := splitScope(reqs[0].Queue)
	return scripts.ReleaseKeys.Run(ctx, jq.rdb, []string{jq.keys.KeyLeases(q, key)}, args...).Err()
}

// keyedRelease reports whether r releases a keyed job's lease.
func keyedRelease(r AckReq) bool {
	return r.Lease != "" && strings.Contains(r.Queue, keyScopeSep)
}

// fetchKeyed runs fetch_keyed.lua for reqs (each with a KeyPolicy) and fills their rows of out
// (at the indexes idx).
func (jq *Store) fetchKeyed(ctx context.Context, reqs []FetchReq, idx []int, leaseTTL time.Duration, epoch string, parity bool, out *FetchRes) error {
	keys := make([]string, 4, 4+5*len(reqs))
	keys[0], keys[1], keys[2], keys[3] = jq.keys.Paused(), jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs(), jq.keys.BackupQueues(jq.node)
	p := 0
	if parity {
		p = 1
	}
	args := []any{jq.node, leaseTTL.Seconds(), epoch, jq.keys.Prefix, p}
	for _, r := range reqs {
		k := r.Keys
		keys = append(keys, jq.keys.Queue(r.Queue), jq.keys.Backup(jq.node, r.Queue), jq.keys.KeyReady(r.Queue),
			jq.keys.KeyBlocked(r.Queue), jq.keys.KeyDelayed(r.Queue))
		per := 0.0
		if k.RateN > 0 {
			per = k.RatePer.Seconds()
		}
		args = append(args, r.Queue, r.N, k.Concurrency, k.RateN, per, r.First, len(k.Weights))
		for key, w := range k.Weights {
			args = append(args, key, w)
		}
	}
	res, err := scripts.FetchKeyed.Run(ctx, jq.rdb, keys, args...).Slice()
	if err != nil {
		return asBuried(err)
	}
	if len(res) != len(reqs) {
		return fmt.Errorf("fetch: %d replies for %d keyed queues", len(res), len(reqs))
	}
	for j, r := range res {
		i := idx[j]
		list, _ := r.([]any)
		if len(list) < 2 || len(list)%2 != 0 {
			return fmt.Errorf("fetch: unexpected keyed reply %v", r)
		}
		n, _ := list[0].(int64)
		out.BackupLen[i] = int(n)
		out.Wait[i] = -1
		if w, _ := list[1].(int64); w >= 0 {
			out.Wait[i] = time.Duration(w) * time.Millisecond
		}
		if len(list) > 2 {
			jobs := make([]string, 0, (len(list)-2)/2)
			jk := make([]string, 0, (len(list)-2)/2)
			for m := 2; m < len(list); m += 2 {
				job, _ := list[m].(string)
				key, _ := list[m+1].(string)
				jobs = append(jobs, job)
				jk = append(jk, key)
			}
			out.Jobs[i], out.JobKeys[i] = jobs, jk
		}
	}
	return nil
}

// RouteToKey moves raw, a keyed job fetched from its queue's own list (where Sidekiq Web's
// "retry now" of a dead keyed job puts it), from this node's backup list to the head of its
// key's list; false when it was no longer in the backup list.
func (jq *Store) RouteToKey(ctx context.Context, q, raw string) (bool, error) {
	return jq.PutBack(ctx, q, raw) // put_back.lua routes a keyed job to its key
}

// KillKeyed buries raw, a waiting job of key in queue q (jid its jid), from its key's list or
// the queue's delayed set into the dead set (kill_keyed.lua, trimmed by keepFor and keepMax);
// false when it was in neither (fetched, or moved, meanwhile).
func (jq *Store) KillKeyed(ctx context.Context, q, key, jid, raw string, now time.Time, keepFor time.Duration, keepMax int) (bool, error) {
	n, err := scripts.KillKeyed.Run(ctx, jq.rdb,
		[]string{jq.keys.KeyJobs(q, key), jq.keys.KeyDelayed(q), jq.keys.Dead(), jq.keys.KeyHeld(q)},
		wire.FormatTime(now), wire.FormatTime(now.Add(-keepFor)), keepMax, raw, jid, q, key, jq.keys.Prefix, jq.keys.Wake()).Int()
	return n == 1, err
}
