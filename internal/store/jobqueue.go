package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// incarnation is the token the fetch and acknowledgement scripts check: "" checks nothing.
func (jq *Store) incarnation() string {
	if e := jq.epoch.Load(); e != nil {
		return *e
	}
	return ""
}

// buriedReply is how the fetch scripts refuse a node whose incarnation was buried.
const buriedReply = "BURIED"

// asBuried turns the fetch scripts' BURIED error into ErrBuried.
func asBuried(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), buriedReply) {
		return fmt.Errorf("%w (%v)", ErrBuried, err)
	}
	return err
}

// LimitHeld reports whether a queue's cluster-wide limit held back jobs the queue still has.
func (f FetchRes) LimitHeld() bool {
	for _, w := range f.Wait {
		if w >= 0 {
			return true
		}
	}
	return false
}

// pageSize bounds the work of one recovery script call, so a huge backup list never blocks
// Redis for long.
const pageSize = 100

// Lock is the unique lock an enqueue takes: key P unique:<Token>, held by JID for TTL.
type Lock struct {
	Token string
	JID   string
	TTL   time.Duration
}

// ttlMillis is the Lock's TTL for SET PX: at least 1 ms, since PX 0 is an error (Exq fails the
// enqueue there); a lock that is already due still checks for a holder and expires at once.
func (l *Lock) ttlMillis() int64 { return max(l.TTL.Milliseconds(), 1) }

// conflict turns a {1, holder} script reply into the holder's jid; "" for a plain 0.
func conflict(reply any) (string, bool) {
	r, ok := reply.([]any)
	if !ok || len(r) != 2 {
		return "", false
	}
	holder, _ := r[1].(string)
	return holder, true
}

// Enqueue pushes one job onto queue q now. With a Lock held by another job, nothing is
// written and the holder's jid is returned. With WaitReplicas, an error wrapping
// ErrNotReplicated means the script ran (holder is its reply) and too few replicas confirmed.
func (jq *Store) Enqueue(ctx context.Context, q, job string, l *Lock) (holder string, err error) {
	keys := []string{jq.keys.Queues(), jq.keys.Queue(q)}
	args := []any{q, job, jq.keys.Wake()}
	if l != nil {
		keys = append(keys, jq.keys.Unique(l.Token))
		args = append(args, l.JID, l.ttlMillis())
	}
	cmd, replErr := jq.evalScript(ctx, scripts.Enqueue, keys, args...)
	reply, err := cmd.Result()
	if err != nil {
		return "", err
	}
	holder, _ = conflict(reply)
	return holder, replErr
}

// EnqueueAt adds one job to the schedule set, due at at (unique as enqueue).
func (jq *Store) EnqueueAt(ctx context.Context, at time.Time, job string, l *Lock) (holder string, err error) {
	keys := []string{jq.keys.Schedule()}
	args := []any{wire.FormatTime(at), job, jq.keys.Wake()}
	if l != nil {
		keys = append(keys, jq.keys.Unique(l.Token))
		args = append(args, l.JID, l.ttlMillis())
	}
	cmd, replErr := jq.evalScript(ctx, scripts.EnqueueAt, keys, args...)
	reply, err := cmd.Result()
	if err != nil {
		return "", err
	}
	holder, _ = conflict(reply)
	return holder, replErr
}

// BatchItem is one job of an enqueueAll; a zero at means now.
type BatchItem struct {
	Queue string
	At    time.Time
	Job   string
	Lock  *Lock
}

// batchLayout numbers the distinct queues of the items that go to their queue now (from 1, in
// the order they first appear) and lists the items that take a unique lock, as enqueue_all.lua
// and push_relayed.lua read a batch. item tells the i-th item's queue, whether it goes now, and
// whether it has a lock.
func batchLayout(n int, item func(i int) (queue string, now, locked bool)) (queueNo map[string]int, queues []string, locked []int) {
	queueNo = map[string]int{}
	for i := range n {
		q, now, lock := item(i)
		if _, ok := queueNo[q]; now && !ok {
			queues = append(queues, q)
			queueNo[q] = len(queues)
		}
		if lock {
			locked = append(locked, i)
		}
	}
	return queueNo, queues, locked
}

// EnqueueAll writes every item in one script call and returns, per item, the holder's jid
// when its unique lock was taken ("" when the item was written). With WaitReplicas, an error
// wrapping ErrNotReplicated comes with the holders: the batch was written.
func (jq *Store) EnqueueAll(ctx context.Context, items []BatchItem) ([]string, error) {
	queueNo, queues, locked := batchLayout(len(items), func(i int) (string, bool, bool) {
		return items[i].Queue, items[i].At.IsZero(), items[i].Lock != nil
	})
	keys := make([]string, 0, 2+len(queues)+len(locked))
	keys = append(keys, jq.keys.Schedule(), jq.keys.Queues())
	args := make([]any, 0, 5+len(queues)+len(items)+3*len(locked))
	args = append(args, jq.keys.Wake(), len(queues), len(items), len(locked))
	for _, q := range queues {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	// Where each job goes: nothing to say when all go to the one queue now, else
	// "<queue number>,<score>;" per job (enqueue_all.lua).
	var place []byte
	if len(queues) != 1 || slices.ContainsFunc(items, func(it BatchItem) bool { return !it.At.IsZero() }) {
		place = make([]byte, 0, 4*len(items))
		for _, it := range items {
			if it.At.IsZero() {
				place = strconv.AppendInt(place, int64(queueNo[it.Queue]), 10)
				place = append(place, ',', ';')
			} else {
				place = append(place, '0', ',')
				place = append(place, wire.FormatTime(it.At)...)
				place = append(place, ';')
			}
		}
	}
	args = append(args, string(place))
	for _, it := range items {
		args = append(args, it.Job)
	}
	for _, i := range locked {
		l := items[i].Lock
		keys = append(keys, jq.keys.Unique(l.Token))
		args = append(args, i+1, l.JID, l.ttlMillis())
	}
	cmd, replErr := jq.evalScript(ctx, scripts.EnqueueAll, keys, args...)
	res, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	holders := make([]string, len(items))
	for k := 0; k+1 < len(res); k += 2 {
		i, _ := res[k].(int64)
		if i < 1 || int(i) > len(items) {
			return nil, fmt.Errorf("enqueue all: unexpected reply %v", res)
		}
		holders[i-1], _ = res[k+1].(string)
	}
	return holders, replErr
}

// Unlock releases a unique lock if jid still holds it.
func (jq *Store) Unlock(ctx context.Context, token, jid string) error {
	return scripts.Unlock.Run(ctx, jq.rdb, []string{jq.keys.Unique(token)}, jid).Err()
}

// FetchReq asks for up to n jobs of queue; held is how many of the queue's jobs this node
// holds (running, or finished and not yet acknowledged) when it asks. A queue with cluster-wide
// limits also carries them, the first number for the members of the leases and starts the
// fetch adds, and the leases of jobs that ended since the last fetch (the acker releases them
// too; naming them here makes sure that this fetch does not count them as this node's).
type FetchReq struct {
	Queue   string
	N       int
	Held    int
	Limits  Limits
	First   uint64   // the first lease/start number; the fetch uses first … first+n-1
	Release []string // leases of ended jobs
	// Keys, when set, makes the fetch serve the queue's keyed jobs too (fetch_keyed.lua).
	Keys *KeyPolicy
}

// FetchRes is what a fetch took, per request, oldest first, how long each backup list was
// before it, and, when a queue had limits, per request how long a limit holds the queue back
// (see fetch_limited.lua: -1 not held back, 0 unknown, otherwise that long).
type FetchRes struct {
	Jobs      [][]string
	BackupLen []int
	Wait      []time.Duration
	Epoch     string // the incarnation the fetch ran as
	// JobKeys are, for a request with Keys, the key of each job in Jobs ("" for a job of the
	// queue's own list); nil for other requests.
	JobKeys [][]string
}

// Strays reports whether a backup list held more entries than this node holds jobs of that
// queue: entries nobody works on, left by a fetch whose reply was lost (a broken connection,
// or a client library that sent the fetch again after one).
func (f FetchRes) Strays(reqs []FetchReq) bool {
	for i, r := range reqs {
		if f.BackupLen[i] > r.Held {
			return true
		}
	}
	return false
}

// HeldBack is how long a limit holds request i's queue back: -1 when none does.
func (f FetchRes) HeldBack(i int) time.Duration {
	if f.Wait == nil {
		return -1
	}
	return f.Wait[i]
}

// NextPoll is how long the poll loop waits after a fetch that found no job: idle, or until the
// soonest time a rate allows a start.
func (f FetchRes) NextPoll(idle time.Duration) time.Duration {
	d := idle
	for _, w := range f.Wait {
		if w > 0 && w < d {
			d = w
		}
	}
	return d
}

// Fetch moves up to n jobs of every requested queue into this node's backup lists in one round
// trip, within the queues' cluster-wide limits, and returns them per request, oldest first.
// leaseTTL is how long a new lease lives unless renewed (the node's heartbeat window);
// patience how long, after a fetch a GlobalLimit held back, this node counts as waiting for a
// slot (it asks again within that time), which caps the other nodes at their share.
func (jq *Store) Fetch(ctx context.Context, reqs []FetchReq, leaseTTL, patience time.Duration) (FetchRes, error) {
	for _, r := range reqs {
		if r.Keys != nil {
			return jq.fetchMixed(ctx, reqs, leaseTTL, patience)
		}
	}
	limited := false
	for _, r := range reqs {
		limited = limited || r.Limits.Any()
	}
	epoch := jq.incarnation()
	if limited {
		res, err := jq.fetchLimited(ctx, reqs, leaseTTL, patience, epoch)
		if err != nil {
			return FetchRes{}, asBuried(err)
		}
		return limitedFetchRes(reqs, res, epoch)
	}
	// No limit: the script and the arguments of a node without limits, nothing more.
	keys := make([]string, 4, 4+2*len(reqs))
	keys[0], keys[1], keys[2], keys[3] = jq.keys.Paused(), jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs(), jq.keys.BackupQueues(jq.node)
	args := make([]any, 2, 2+2*len(reqs))
	args[0], args[1] = jq.node, epoch
	for _, r := range reqs {
		keys = append(keys, jq.keys.Queue(r.Queue), jq.keys.Backup(jq.node, r.Queue))
		args = append(args, r.Queue, r.N)
	}
	flat, err := scripts.RunFetch(ctx, jq.rdb, keys, args...)
	if err != nil {
		return FetchRes{}, asBuried(err)
	}
	// fetch.lua: per queue, the backup list's length, the number n of jobs, the n jobs.
	out := FetchRes{Jobs: make([][]string, len(reqs)), BackupLen: make([]int, len(reqs)), Epoch: epoch}
	p := 0
	for i := range reqs {
		if p+2 > len(flat) {
			return FetchRes{}, fmt.Errorf("fetch: a reply of %d items ends before queue %d", len(flat), i+1)
		}
		backup, err1 := strconv.Atoi(flat[p])
		n, err2 := strconv.Atoi(flat[p+1])
		if err1 != nil || err2 != nil || n < 0 || p+2+n > len(flat) {
			return FetchRes{}, fmt.Errorf("fetch: unexpected reply for queue %d: %q %q", i+1, flat[p], flat[p+1])
		}
		out.BackupLen[i] = backup
		if n > 0 {
			out.Jobs[i] = flat[p+2 : p+2+n : p+2+n]
		}
		p += 2 + n
	}
	if p != len(flat) {
		return FetchRes{}, fmt.Errorf("fetch: %d items in the reply after its %d queues", len(flat)-p, len(reqs))
	}
	return out, nil
}

// fetchMixed is Fetch when some request serves keyed jobs: those in one fetch_keyed.lua call,
// the others as Fetch takes them.
func (jq *Store) fetchMixed(ctx context.Context, reqs []FetchReq, leaseTTL, patience time.Duration) (FetchRes, error) {
	var keyed, plain []FetchReq
	var keyedAt, plainAt []int
	for i, r := range reqs {
		if r.Keys != nil {
			keyed, keyedAt = append(keyed, r), append(keyedAt, i)
		} else {
			plain, plainAt = append(plain, r), append(plainAt, i)
		}
	}
	epoch := jq.incarnation()
	out := FetchRes{Jobs: make([][]string, len(reqs)), BackupLen: make([]int, len(reqs)), Epoch: epoch,
		Wait: make([]time.Duration, len(reqs)), JobKeys: make([][]string, len(reqs))}
	if err := jq.fetchKeyed(ctx, keyed, keyedAt, leaseTTL, epoch, jq.fetches.Add(1)%2 == 1, &out); err != nil {
		return FetchRes{}, err
	}
	if len(plain) == 0 {
		return out, nil
	}
	res, err := jq.Fetch(ctx, plain, leaseTTL, patience)
	if err != nil {
		// The keyed jobs are in the backup list: the node's next fetch finds them as strays
		// and hands them back (to their keys) when they were not dispatched.
		return FetchRes{}, err
	}
	for j, i := range plainAt {
		out.Jobs[i], out.BackupLen[i], out.Wait[i] = res.Jobs[j], res.BackupLen[j], res.HeldBack(j)
	}
	return out, nil
}

// limitedFetchRes reads fetch_limited.lua's reply: per request {backup length, wait, jobs…}.
func limitedFetchRes(reqs []FetchReq, res []any, epoch string) (FetchRes, error) {
	if len(res) != len(reqs) {
		return FetchRes{}, fmt.Errorf("fetch: %d replies for %d queues", len(res), len(reqs))
	}
	out := FetchRes{Jobs: make([][]string, len(res)), BackupLen: make([]int, len(res)), Epoch: epoch,
		Wait: make([]time.Duration, len(res))}
	for i, r := range res {
		list, _ := r.([]any)
		if len(list) < 2 {
			return FetchRes{}, fmt.Errorf("fetch: unexpected reply %v", r)
		}
		n, _ := list[0].(int64)
		out.BackupLen[i] = int(n)
		out.Wait[i] = -1 // the script's -1: no limit holds the queue back
		if w, _ := list[1].(int64); w >= 0 {
			out.Wait[i] = time.Duration(w) * time.Millisecond
		}
		if len(list) > 2 {
			jobs := make([]string, 0, len(list)-2)
			for _, j := range list[2:] {
				if s, ok := j.(string); ok {
					jobs = append(jobs, s)
				}
			}
			out.Jobs[i] = jobs
		}
	}
	return out, nil
}

// fetchLimited runs fetch_limited.lua for reqs.
func (jq *Store) fetchLimited(ctx context.Context, reqs []FetchReq, leaseTTL, patience time.Duration, epoch string) ([]any, error) {
	keys := make([]string, 4, 4+6*len(reqs))
	keys[0], keys[1], keys[2], keys[3] = jq.keys.Paused(), jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs(), jq.keys.BackupQueues(jq.node)
	args := make([]any, 4, 4+7*len(reqs))
	args[0], args[1], args[2], args[3] = jq.node, leaseTTL.Seconds(), patience.Seconds(), epoch
	var release []any
	for _, r := range reqs {
		keys = append(keys, jq.keys.Queue(r.Queue), jq.keys.Backup(jq.node, r.Queue),
			jq.keys.Leases(r.Queue), jq.keys.Starts(r.Queue), jq.keys.RatePace(r.Queue), jq.keys.LeaseWaiters(r.Queue))
		args = append(args, r.Queue, r.N, r.Limits.Global, r.Limits.RateN, r.Limits.window().Seconds(), r.First, len(r.Release))
		for _, l := range r.Release {
			release = append(release, l)
		}
	}
	return scripts.FetchLimited.Run(ctx, jq.rdb, keys, append(args, release...)...).Slice()
}

// ReleaseLease removes the lease of an ended job from its queue's leases set, so that every
// node sees the slot free at its next fetch.
func (jq *Store) ReleaseLease(ctx context.Context, q, lease string) error {
	if _, key := splitScope(q); key != "" {
		return jq.releaseKeys(ctx, []AckReq{{Queue: q, Lease: lease}})
	}
	return jq.rdb.ZRem(ctx, jq.keys.Leases(q), lease).Err()
}

// LeaseMember names the lease (and start) number n of this node, as fetch.lua does.
func (jq *Store) LeaseMember(n uint64) string { return jq.node + ":" + strconv.FormatUint(n, 10) }

// Ack removes a finished job from the backup list and, with a token, releases the job's
// unique lock if it still holds it; unless the run (of incarnation epoch) is from before this
// node was buried.
func (jq *Store) Ack(ctx context.Context, q, raw, token, jid, epoch string) error {
	if token == "" {
		_, err := jq.AckMany(ctx, []AckReq{{Queue: q, Raw: raw, Epoch: epoch}})
		return err
	}
	cmd, replErr := jq.evalScript(ctx, scripts.Ack,
		[]string{jq.keys.Backup(jq.node, q), jq.keys.Unique(token), jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs()},
		raw, jid, jq.node, epoch)
	jq.wait.shortfall("ack", replErr)
	return cmd.Err()
}

// AckMany removes finished jobs from their backup lists, and the leases of ended jobs
// (requests with a lease) from their leases sets, in one script call (ack_batch.lua: safe to
// repeat, each request removes one exact member), skipping the jobs whose run belongs to an
// incarnation of this node that was buried. On an error, failed tells which did not happen
// (all of them: the batch is one call).
//
// A request with a Flow records its batch's or workflow's transition in the same atomic call
// (ackSettle), and gets the transition's replies in Flow.Replies.
func (jq *Store) AckMany(ctx context.Context, batch []AckReq) (failed []bool, err error) {
	var keyed []AckReq
	for _, r := range batch {
		if keyedRelease(r) {
			keyed = append(keyed, r)
		}
	}
	if len(keyed) > 0 {
		// Keyed leases after the acknowledgements: a key readied before its job left the
		// backup list could only start its next job sooner, never too many (the lease is
		// what counts), but the order keeps a sequence's logs plain.
		rest := make([]AckReq, 0, len(batch)-len(keyed))
		for _, r := range batch {
			if !keyedRelease(r) {
				rest = append(rest, r)
			}
		}
		if len(rest) > 0 {
			if _, err := jq.AckMany(ctx, rest); err != nil {
				return allFailed(len(batch)), err
			}
		}
		if err := jq.releaseKeys(ctx, keyed); err != nil {
			return allFailed(len(batch)), err
		}
		return nil, nil
	}
	for _, r := range batch {
		if r.Flow != nil && len(r.Flow.Items) > 0 {
			return jq.ackSettle(ctx, batch)
		}
	}
	keys := make([]string, 2, 3)
	keys[0], keys[1] = jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs()
	args := make([]any, 1, 1+len(batch)+4*2)
	args[0] = jq.node
	// Consecutive requests of the same kind, queue and incarnation form one group (as a rule
	// a batch is one group of acks and, with a GlobalLimit, one of leases per queue); a new
	// kind or queue also names a new key. count is the index in args of the open group's
	// member count (0: no group yet; args[0] is the node).
	var lastQueue, lastEpoch string
	lastKind, count := byte(0), 0
	closeGroup := func() {
		if count > 0 {
			args[count] = len(args) - count - 1
		}
	}
	for _, r := range batch {
		kind, op, member := byte('a'), ackOp, r.Raw
		if r.Lease != "" {
			kind, op, member = 'l', releaseOp, r.Lease
		}
		newKey := kind != lastKind || r.Queue != lastQueue
		if newKey || r.Epoch != lastEpoch {
			if newKey {
				if kind == 'l' {
					keys = append(keys, jq.keys.Leases(r.Queue))
				} else {
					keys = append(keys, jq.keys.Backup(jq.node, r.Queue))
				}
			}
			closeGroup()
			args = append(args, op, len(keys)-2, r.Epoch, 0)
			count = len(args) - 1
			lastKind, lastQueue, lastEpoch = kind, r.Queue, r.Epoch
		}
		args = append(args, member)
	}
	closeGroup()
	if jq.wait == nil {
		err = scripts.AckBatch.Run(ctx, jq.rdb, keys, args...).Err()
	} else {
		var replErr error
		replErr, err = jq.wait.pipeline(ctx, jq.rdb, keys[2], func(p redis.Pipeliner) []redis.Cmder {
			// EVAL, not EVALSHA: in a pipeline a NOSCRIPT could not fall back.
			return []redis.Cmder{scripts.AckBatch.Eval(ctx, p, keys, args...)}
		})
		jq.wait.shortfall("ack", replErr)
	}
	if err == nil {
		return nil, nil
	}
	failed = make([]bool, len(batch))
	for i := range failed {
		failed[i] = true
	}
	return failed, err
}

// allFailed is a failed slice of n requests, all failed.
func allFailed(n int) []bool {
	failed := make([]bool, n)
	for i := range failed {
		failed[i] = true
	}
	return failed
}

// What ack_batch.lua does with a request, boxed once.
var (
	ackOp     any = "a" // take a finished job off its backup list
	releaseOp any = "l" // remove a lease
)

// counter is one step of a stats flush, with its key's TTL (0: none): an increment n of a
// counter key, or, with kind 'h', the field increments of a metrics hash, or with kind 'b'
// the bucket increments of a histogram; pairs alternate field (bucket) and increment.
type counter struct {
	Key   string
	N     int64
	TTL   time.Duration
	Kind  byte // 0: a counter
	Pairs []any
}

// addCounters applies one batch of counter increments and metrics, once per batch id, however
// often it is sent (stats_flush.lua).
func (jq *Store) addCounters(ctx context.Context, id string, markerTTL time.Duration, counters []counter) error {
	keys := make([]string, 0, 1+len(counters))
	args := make([]any, 0, 2+3*len(counters))
	keys = append(keys, jq.keys.StatFlush(jq.node))
	args = append(args, id, int64(markerTTL/time.Second))
	for _, c := range counters {
		keys = append(keys, c.Key)
		ttl := int64(c.TTL / time.Second)
		switch c.Kind {
		case 0:
			args = append(args, "c", ttl, c.N)
		default:
			args = append(args, string(c.Kind), ttl, len(c.Pairs)/2)
			args = append(args, c.Pairs...)
		}
	}
	return scripts.StatsFlush.Run(ctx, jq.rdb, keys, args...).Err()
}

// Retry stores the rewritten job in the retry set, due at at, and removes the raw one from the
// backup list, atomically. It reports false when the job was no longer in the backup list, or
// its run (of incarnation epoch) is from before this node was buried.
func (jq *Store) Retry(ctx context.Context, q, raw, rewritten string, at time.Time, epoch string) (bool, error) {
	cmd, replErr := jq.evalScript(ctx, scripts.Retry,
		[]string{jq.keys.Retry(), jq.keys.Backup(jq.node, q), jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs()},
		wire.FormatTime(at), rewritten, raw, jq.keys.Wake(), jq.node, epoch)
	jq.wait.shortfall("retry", replErr)
	n, err := cmd.Int()
	return n == 1, err
}

// Dead stores the rewritten job in the dead set, trims it, and removes the raw job from the
// backup list, atomically.
// With a token, the job's unique lock is released too, if the job still holds it. Nothing is
// written for a run (of incarnation epoch) from before this node was buried.
func (jq *Store) Dead(ctx context.Context, q, raw, rewritten string, now time.Time, keepFor time.Duration, keepMax int, token, jid, epoch string) (bool, error) {
	keys := []string{jq.keys.Dead(), jq.keys.Backup(jq.node, q), jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs()}
	args := []any{wire.FormatTime(now), rewritten, raw, wire.FormatTime(now.Add(-keepFor)), keepMax, jq.node, epoch}
	if token != "" {
		keys = append(keys, jq.keys.Unique(token))
		args = append(args, jid)
	}
	cmd, replErr := jq.evalScript(ctx, scripts.Dead, keys, args...)
	jq.wait.shortfall("dead", replErr)
	n, err := cmd.Int()
	return n == 1, err
}

// BackupList reads this node's whole backup list of q, newest first.
func (jq *Store) BackupList(ctx context.Context, q string) ([]string, error) {
	return jq.rdb.LRange(ctx, jq.keys.Backup(jq.node, q), 0, -1).Result()
}

// Requeue hands raws (newest first) from the backup list back to the consumption end of q.
func (jq *Store) Requeue(ctx context.Context, q string, raws []string) (int, error) {
	args := make([]any, 0, 3+len(raws))
	args = append(args, jq.keys.Wake(), q, jq.keys.Prefix)
	for _, r := range raws {
		args = append(args, r)
	}
	cmd, replErr := jq.evalScript(ctx, scripts.Requeue,
		[]string{jq.keys.Backup(jq.node, q), jq.keys.Queue(q)}, args...)
	jq.wait.shortfall("hand-back", replErr)
	return cmd.Int()
}

// PutBack moves raw from the backup list of q to the enqueue end of q (a job whose class has
// no worker yet); false when it was no longer in the backup list.
func (jq *Store) PutBack(ctx context.Context, q, raw string) (bool, error) {
	cmd, replErr := jq.evalScript(ctx, scripts.PutBack,
		[]string{jq.keys.Backup(jq.node, q), jq.keys.Queue(q)}, jq.keys.Wake(), q, raw, jq.keys.Prefix)
	jq.wait.shortfall("put back", replErr)
	n, err := cmd.Int()
	return n == 1, err
}

// RecoverBackup moves every job of this node's backup list for q back to the consumption end
// of q, oldest in-flight job first, a page per call.
func (jq *Store) RecoverBackup(ctx context.Context, q string) (int, error) {
	total := 0
	for {
		res, err := scripts.Recover.Run(ctx, jq.rdb,
			[]string{jq.keys.Backup(jq.node, q), jq.keys.Queue(q)}, pageSize, q, jq.keys.Prefix).Int64Slice()
		if err != nil {
			return total, err
		}
		if len(res) != 2 {
			return total, fmt.Errorf("recover: unexpected reply %v", res)
		}
		total += int(res[1])
		if res[0] == 0 || res[1] == 0 {
			return total, nil
		}
	}
}

// KnownQueues lists the queues in the queues set.
func (jq *Store) KnownQueues(ctx context.Context) ([]string, error) {
	return jq.rdb.SMembers(ctx, jq.keys.Queues()).Result()
}

// EarliestDue returns the lowest score of the schedule and retry sets (ZRANGE 0 0 WITHSCORES
// on each, pipelined), or the zero time when both are empty.
func (jq *Store) EarliestDue(ctx context.Context) (time.Time, error) {
	var heads [2]*redis.ZSliceCmd
	_, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		heads[0] = p.ZRangeWithScores(ctx, jq.keys.Schedule(), 0, 0)
		heads[1] = p.ZRangeWithScores(ctx, jq.keys.Retry(), 0, 0)
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, h := range heads {
		for _, z := range h.Val() {
			if math.IsInf(z.Score, 1) {
				continue // never due: nothing moves it, nothing to wait for
			}
			at := wire.ParseTime(z.Score)
			if at.IsZero() {
				at = time.Unix(0, 0) // a score of 0 or -inf: long due
			}
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next, nil
}

// MoveDue moves up to page due jobs of zset (schedule or retry) to their queues and reports
// how many members it read (a full page means there may be more). The members are read first
// and routed here, so that the script that moves them declares every key it touches (Redis
// Cluster); it moves only the members still in the set, so racing schedulers never duplicate.
func (jq *Store) MoveDue(ctx context.Context, set string, now time.Time, page int) (int, error) {
	zset, err := jq.setKey(set)
	if err != nil {
		return 0, err
	}
	at := wire.FormatTime(now)
	jobs, err := jq.rdb.ZRangeByScore(ctx, zset, &redis.ZRangeBy{Min: "-inf", Max: at, Count: int64(page)}).Result()
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	keys := []string{zset, jq.keys.Queues(), jq.keys.Dead()}
	args := []any{at, jq.keys.Wake(), "poison-" + uuid.NewString() + "-", wire.PoisonClass, wire.PoisonErrorClass}
	qs := queueNumbers{keys: &keys, jq: jq}
	for _, raw := range jobs {
		q, ok := jobQueueName(raw)
		n := 0
		if ok {
			n = qs.number(q)
		}
		args = append(args, n, q, raw)
	}
	if err := scripts.Schedule.Run(ctx, jq.rdb, keys, args...).Err(); err != nil {
		return 0, err
	}
	return len(jobs), nil
}

// queueNumbers numbers the destination queues of one script call, appending each queue's key
// to keys the first time it is seen; a script finds queue n's key after the fixed keys.
type queueNumbers struct {
	keys *[]string
	jq   *Store
	seen map[string]int
	base int
}

func (qs *queueNumbers) number(q string) int {
	if qs.seen == nil {
		qs.seen, qs.base = map[string]int{}, len(*qs.keys)
	}
	if n, ok := qs.seen[q]; ok {
		return n
	}
	*qs.keys = append(*qs.keys, qs.jq.keys.Queue(q))
	n := len(*qs.keys) - qs.base
	qs.seen[q] = n
	return n
}

// jobQueueName reads the "queue" field of a raw job: ok is false unless raw is a JSON object
// whose "queue" (exactly that key) is a non-empty string, as the scripts used to decide.
func jobQueueName(raw string) (string, bool) {
	var doc map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &doc) != nil {
		return "", false
	}
	var q string
	if json.Unmarshal(doc["queue"], &q) != nil || q == "" {
		return "", false
	}
	return q, true
}

// Beat records that this node is alive (server clock) and when it counts as dead, and renews
// the leases of its running jobs, per queue, to that time, as incarnation epoch. It reports
// false when that incarnation was buried: then it wrote nothing. at is the server's time of the
// beat. It works when Redis is out of memory too, so that no live node is taken for dead then.
// previous is the server's time of this node's previous beat or check (0 for none): a beat
// that runs more than stallGap(window) after it records a stall that ends now (see stale.lua).
func (jq *Store) Beat(ctx context.Context, window time.Duration, leases map[string][]string, epoch string, previous float64) (alive bool, at float64, err error) {
	return jq.beatAs(ctx, "beat", window, leases, epoch, previous)
}

// Join is the first beat of a node's incarnation epoch (at Start, and after a burial): Redis
// refuses it when it is out of memory.
func (jq *Store) Join(ctx context.Context, window time.Duration, leases map[string][]string, epoch string) (at float64, err error) {
	_, at, err = jq.beatAs(ctx, "join", window, leases, epoch, 0)
	return at, err
}

func (jq *Store) beatAs(ctx context.Context, mode string, window time.Duration, leases map[string][]string, epoch string, previous float64) (alive bool, at float64, err error) {
	keys := []string{jq.keys.Heartbeats(), jq.keys.HeartbeatDeadlines(), jq.keys.HeartbeatEpochs(), jq.keys.HeartbeatResumed()}
	args := []any{jq.node, window.Seconds(), mode, epoch, strconv.FormatFloat(previous, 'f', 6, 64), stallGap(window).Seconds()}
	for q, ls := range leases {
		keys = append(keys, jq.leaseKey(q))
		if _, key := splitScope(q); key != "" {
			args = append(args, "k"+strconv.Itoa(len(ls)))
		} else {
			args = append(args, len(ls))
		}
		for _, l := range ls {
			args = append(args, l)
		}
	}
	res, err := scripts.Beat.Run(ctx, jq.rdb, keys, args...).Text()
	if err != nil {
		return false, 0, err
	}
	at, err = strconv.ParseFloat(res, 64)
	if err != nil {
		return false, 0, fmt.Errorf("beat: unexpected reply %q", res)
	}
	return at != 0, at, nil
}

// Forget removes this node's heartbeat and deadline (a clean stop with nothing left to rescue).
func (jq *Store) Forget(ctx context.Context) error {
	_, err := jq.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, jq.keys.Heartbeats(), jq.node)
		p.ZRem(ctx, jq.keys.HeartbeatDeadlines(), jq.node)
		p.HDel(ctx, jq.keys.HeartbeatEpochs(), jq.node)
		p.Del(ctx, jq.keys.BackupQueues(jq.node))
		return nil
	})
	return err
}

// DropBackupQueues deletes this node's set of backup queues (a clean stop without heartbeats).
func (jq *Store) DropBackupQueues(ctx context.Context) error {
	return jq.rdb.Del(ctx, jq.keys.BackupQueues(jq.node)).Err()
}

// stallGap is the longest gap, by the server's clock, between two consecutive calls (beats and
// checks) of a node with this window that is not a stall: a longer one means that the server
// could not run the node's calls in between (another client's long script, DEBUG SLEEP, BUSY
// replies, calls timing out), or that the node itself was stopped, and the scripts record when
// it ended (scripts/stale.lua). A node checks every interval/2 and beats every interval, and
// its window is at least two intervals (MissedHeartbeatsAllowed ≥ 1), so half a window is at
// least twice its usual gap; and a stall no longer than half a window ends no later than the
// deadline of a node that beat on time before it (its beats are at most an interval apart, its
// deadline a window after the last one), and the beats that waited in it run before a check
// can prove that deadline passed (see internal/heartbeat's RescueDead).
func stallGap(window time.Duration) time.Duration { return window / 2 }

// StaleNode is a node whose last beat is too old, with the score seen and the server time at
// which it counts as dead.
type StaleNode struct {
	Node, Score string
	Beat        float64 // score, parsed
	Deadline    float64
}

// StaleNodes lists the nodes that count as dead (server clock): past the deadline they
// publish, or, for nodes that publish none, with a beat older than foreignWindow; and, either
// way, a whole window of theirs past the end of the latest stall of Redis. window is this
// node's own and previous the server's time of its previous beat or check (0 for none): a
// check that runs more than stallGap(window) after it records a stall that ends now. now is
// the server's time of the call.
func (jq *Store) StaleNodes(ctx context.Context, foreignWindow, window time.Duration, previous float64) (stale []StaleNode, now float64, err error) {
	res, err := scripts.Stale.Run(ctx, jq.rdb,
		[]string{jq.keys.Heartbeats(), jq.keys.HeartbeatDeadlines(), jq.keys.HeartbeatResumed()},
		foreignWindow.Seconds(), strconv.FormatFloat(previous, 'f', 6, 64), stallGap(window).Seconds()).StringSlice()
	if err != nil {
		return nil, 0, err
	}
	if len(res)%3 != 1 {
		return nil, 0, fmt.Errorf("stale: unexpected reply %v", res)
	}
	if now, err = strconv.ParseFloat(res[0], 64); err != nil {
		return nil, 0, fmt.Errorf("stale: unexpected server time %q", res[0])
	}
	stale = make([]StaleNode, 0, len(res)/3)
	for i := 1; i+2 < len(res); i += 3 {
		b, err := strconv.ParseFloat(res[i+1], 64)
		if err != nil {
			return nil, 0, fmt.Errorf("stale: unexpected heartbeat %q of node %q", res[i+1], res[i])
		}
		d, err := strconv.ParseFloat(res[i+2], 64)
		if err != nil {
			return nil, 0, fmt.Errorf("stale: unexpected deadline %q of node %q", res[i+2], res[i])
		}
		stale = append(stale, StaleNode{Node: res[i], Score: res[i+1], Beat: b, Deadline: d})
	}
	return stale, now, nil
}

// RescueBackup moves the backup list of dead node n for queue q back to q, a page per call,
// while n's heartbeat is still the stale one. It reports the jobs moved.
// Each page is a call of its own, bounded by timeout.
func (jq *Store) RescueBackup(ctx context.Context, n StaleNode, q string, timeout time.Duration) (int, error) {
	total := 0
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		left, moved, err := jq.RescuePage(cctx, n, q, pageSize)
		cancel()
		total += moved
		if err != nil || left == 0 || moved == 0 {
			return total, err
		}
	}
}

// RescuePage moves up to page entries; it reports the entries left and moved.
func (jq *Store) RescuePage(ctx context.Context, n StaleNode, q string, page int) (left, moved int, err error) {
	res, err := scripts.Rescue.Run(ctx, jq.rdb,
		[]string{jq.keys.Backup(n.Node, q), jq.keys.Queue(q), jq.keys.Heartbeats()},
		n.Node, n.Score, page, jq.keys.Wake(), q, jq.keys.Prefix).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("rescue: unexpected reply %v", res)
	}
	return int(res[0]), int(res[1]), nil
}

// Replies of bury.lua.
const (
	BuryBeatAgain = 0
	BuryDone      = 1
	BuryJobsLeft  = 2
)

// Bury forgets dead node n (busy list, heartbeat, incarnation, set of backup queues) unless it
// beat again or a backup list of queues, or one of a queue they do not name, holds jobs. It
// returns bury.lua's reply.
func (jq *Store) Bury(ctx context.Context, n StaleNode, queues []string) (int, error) {
	keys := []string{jq.keys.Heartbeats(), jq.keys.Workers(n.Node), jq.keys.HeartbeatDeadlines(),
		jq.keys.HeartbeatEpochs(), jq.keys.BackupQueues(n.Node)}
	args := []any{n.Node, n.Score}
	for _, q := range queues {
		keys = append(keys, jq.keys.Backup(n.Node, q))
		args = append(args, q)
	}
	r, err := scripts.Bury.Run(ctx, jq.rdb, keys, args...).Int()
	if r == BuryDone && err == nil {
		// What the UIs show of the node goes too: the busy list under its Sidekiq 7 name, and
		// its process hash and membership, which would otherwise count its rescued jobs as
		// busy until the hash expired (up to a minute after the kill). It need not go in the
		// script's step: a node that beats again writes them anew.
		_, err = jq.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			pl.Del(ctx, jq.keys.Work(n.Node))
			pl.Del(ctx, jq.keys.Node(n.Node))
			pl.SRem(ctx, jq.keys.Processes(), n.Node)
			return nil
		})
	}
	return r, err
}

// BackupQueuesOf lists the queues in which node may have backup lists: those its fetches
// recorded (exq nodes), and those a SCAN of the namespace finds (any node, Exq's too).
func (jq *Store) BackupQueuesOf(ctx context.Context, node string) ([]string, error) {
	queues, err := jq.rdb.SMembers(ctx, jq.keys.BackupQueues(node)).Result()
	if err != nil {
		return nil, err
	}
	// On a Redis Cluster every key of the namespace lives in one slot (its hash tag): SCAN
	// the master that holds it.
	var scanner redis.Cmdable = jq.rdb
	if cc, ok := jq.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, jq.keys.BackupQueues(node))
		if err != nil {
			return nil, err
		}
		scanner = m
	}
	var cursor uint64
	for {
		found, next, err := scanner.ScanType(ctx, cursor, jq.keys.BackupPattern(node), 1000, "list").Result()
		if err != nil {
			return nil, fmt.Errorf("scan for backup lists: %w", err)
		}
		for _, key := range found {
			if q, ok := jq.keys.BackupQueue(node, key); ok {
				queues = append(queues, q)
			}
		}
		if cursor = next; cursor == 0 {
			return queues, nil
		}
	}
}
