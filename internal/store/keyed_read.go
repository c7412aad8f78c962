package store

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// KeyRow is one key of a queue as KeysOf reads it.
type KeyRow struct {
	Key     string
	Waiting int64 // jobs in its list
	Running int64 // live leases (a policy with a Concurrency or a Sequence)
	Delayed int64 // its jobs among the sampled delayed ones
	Ready   bool
	Held    bool
	Paused  bool
	// Blocked is the server time its limit frees it (zero when not blocked).
	Blocked time.Time
}

// KeysRead is a bounded read of a queue's keys: the rows of the top keys by waiting jobs
// among the sampled ones, and the sizes of the sets they were sampled from.
type KeysRead struct {
	Rows                                  []KeyRow
	Ready, Blocked, Held, Paused, Delayed int64
	// Sampled reports that a set had more members than sample: the rows are the top among
	// a sample.
	Sampled bool
}

// KeysOf reads queue q's keys in three round trips, whatever their number: a page of at most
// sample members of each key set (and of the delayed jobs, whose keys are decoded), the
// length of each sampled key's list, then the state and live leases of the top keys by that
// length (at most top of them); sample is the most members read of each
// set (the ready keys by turn, the blocked keys by time, the held and paused keys, the delayed
// jobs by due time). It only reads. A key whose keys are of another type reads as
// empty.
func (jq *Store) KeysOf(ctx context.Context, q string, sample, top int) (KeysRead, error) {
	var out KeysRead
	k := jq.keys
	now, err := jq.rdb.Time(ctx).Result()
	if err != nil {
		return out, err
	}
	var ready, delayed *redis.StringSliceCmd
	var blocked *redis.ZSliceCmd
	var held, paused *redis.ScanCmd
	var nReady, nBlocked, nHeld, nPaused, nDelayed *redis.IntCmd
	if sent, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ready = p.ZRange(ctx, k.KeyReady(q), 0, int64(sample-1))
		blocked = p.ZRangeWithScores(ctx, k.KeyBlocked(q), 0, int64(sample-1))
		held = p.HScan(ctx, k.KeyHeld(q), 0, "", int64(sample))
		paused = p.SScan(ctx, k.KeyPaused(q), 0, "", int64(sample))
		delayed = p.ZRange(ctx, k.KeyDelayed(q), 0, int64(sample-1))
		nReady, nBlocked = p.ZCard(ctx, k.KeyReady(q)), p.ZCard(ctx, k.KeyBlocked(q))
		nHeld, nPaused, nDelayed = p.HLen(ctx, k.KeyHeld(q)), p.SCard(ctx, k.KeyPaused(q)), p.ZCard(ctx, k.KeyDelayed(q))
		return nil
	}); err != nil && !onlyWrongType(err, sent) {
		return out, err
	}
	out.Ready, out.Blocked, out.Held, out.Paused, out.Delayed = nReady.Val(), nBlocked.Val(), nHeld.Val(), nPaused.Val(), nDelayed.Val()
	out.Sampled = out.Ready > int64(sample) || out.Blocked > int64(sample) || out.Held > int64(sample) || out.Paused > int64(sample) || out.Delayed > int64(sample)

	seen := map[string]bool{}
	var cands []string
	add := func(key string) {
		if key != "" && !seen[key] && len(cands) < 5*sample {
			seen[key] = true
			cands = append(cands, key)
		}
	}
	for _, key := range ready.Val() {
		add(key)
	}
	for _, z := range blocked.Val() {
		key, _ := z.Member.(string)
		add(key)
	}
	hk, _ := held.Val()
	for i := 0; i < len(hk) && i < 2*sample; i += 2 { // field, value pairs
		add(hk[i])
	}
	pk, _ := paused.Val()
	for i := 0; i < len(pk) && i < sample; i++ {
		add(pk[i])
	}
	delayedOf := map[string]int64{}
	for _, job := range delayed.Val() {
		if h, err := wire.DecodeHeader(job); err == nil && h.Key != "" {
			delayedOf[h.Key]++
			add(h.Key)
		}
	}
	if len(cands) == 0 {
		out.Rows = []KeyRow{}
		return out, nil
	}

	lens := make([]*redis.IntCmd, len(cands))
	if sent, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range cands {
			lens[i] = p.LLen(ctx, k.KeyJobs(q, key))
		}
		return nil
	}); err != nil && !onlyWrongType(err, sent) {
		return out, err
	}
	rows := make([]KeyRow, len(cands))
	for i, key := range cands {
		rows[i] = KeyRow{Key: key, Waiting: lens[i].Val(), Delayed: delayedOf[key]}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Waiting != rows[j].Waiting {
			return rows[i].Waiting > rows[j].Waiting
		}
		return rows[i].Key < rows[j].Key
	})
	if top >= 0 && len(rows) > top {
		rows = rows[:top]
	}

	nowS := strconv.FormatFloat(float64(now.UnixMicro())/1e6, 'f', 6, 64)
	type cmds struct {
		running     *redis.IntCmd
		paused      *redis.BoolCmd
		held        *redis.BoolCmd
		ready, till *redis.FloatCmd
	}
	cs := make([]cmds, len(rows))
	if sent, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range rows {
			cs[i] = cmds{
				running: p.ZCount(ctx, k.KeyLeases(q, r.Key), "("+nowS, "+inf"),
				paused:  p.SIsMember(ctx, k.KeyPaused(q), r.Key),
				held:    p.HExists(ctx, k.KeyHeld(q), r.Key),
				ready:   p.ZScore(ctx, k.KeyReady(q), r.Key),
				till:    p.ZScore(ctx, k.KeyBlocked(q), r.Key),
			}
		}
		return nil
	}); err != nil && !onlyMissing(sent) {
		return out, err
	}
	for i := range rows {
		c := cs[i]
		rows[i].Running = c.running.Val()
		rows[i].Paused, rows[i].Held = c.paused.Val(), c.held.Val()
		rows[i].Ready = c.ready.Err() == nil
		if c.till.Err() == nil {
			rows[i].Blocked = wire.ParseTime(c.till.Val())
		}
	}
	out.Rows = rows
	return out, nil
}

// KeyJobsRange reads key's waiting jobs in queue q from index start to stop (LRANGE; the head,
// index 0, runs next); none when the key is of another type.
func (jq *Store) KeyJobsRange(ctx context.Context, q, key string, start, stop int64) ([]string, error) {
	jobs, err := jq.rdb.LRange(ctx, jq.keys.KeyJobs(q, key), start, stop).Result()
	if wrongType(err) {
		return nil, nil
	}
	return jobs, err
}

// KeyJobsLen is the number of key's waiting jobs in queue q.
func (jq *Store) KeyJobsLen(ctx context.Context, q, key string) (int64, error) {
	n, err := jq.rdb.LLen(ctx, jq.keys.KeyJobs(q, key)).Result()
	if wrongType(err) {
		return 0, nil
	}
	return n, err
}

// PauseKey pauses (pause) or resumes key of queue q on every node (key_pause.lua); changed
// reports that its state changed. A resume's wake-up is published by the script.
func (jq *Store) PauseKey(ctx context.Context, q, key string, pause bool) (changed bool, err error) {
	mode := "0"
	if pause {
		mode = "1"
	}
	n, err := scripts.KeyPause.Run(ctx, jq.rdb,
		[]string{jq.keys.KeyPaused(q), jq.keys.KeyReady(q), jq.keys.KeyBlocked(q), jq.keys.KeyJobs(q, key)},
		mode, q, key, jq.keys.Prefix, jq.keys.Wake()).Int()
	return n == 1, err
}

// onlyMissing reports that the commands sent failed with nothing but redis.Nil (a missing
// member) or WRONGTYPE (a key of another type reads as empty).
func onlyMissing(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if e := c.Err(); e != nil && e != redis.Nil && !wrongType(e) {
			return false
		}
	}
	return true
}

// KeysWithJobs lists the keys of queue q that may have jobs waiting: the members of its ready,
// blocked, held and paused sets, read in one MULTI, so that a key with jobs waiting then is
// listed whichever of the sets it moves between. A set of another type reads as empty.
func (jq *Store) KeysWithJobs(ctx context.Context, q string) ([]string, error) {
	k := jq.keys
	var ready, blocked, held, paused *redis.StringSliceCmd
	_, err := jq.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ready = p.ZRange(ctx, k.KeyReady(q), 0, -1)
		blocked = p.ZRange(ctx, k.KeyBlocked(q), 0, -1)
		held = p.HKeys(ctx, k.KeyHeld(q))
		paused = p.SMembers(ctx, k.KeyPaused(q))
		return nil
	})
	if err != nil && !onlyMissing([]redis.Cmder{ready, blocked, held, paused}) {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range []*redis.StringSliceCmd{ready, blocked, held, paused} {
		for _, key := range c.Val() {
			if !seen[key] {
				seen[key] = true
				out = append(out, key)
			}
		}
	}
	return out, nil
}

// KeyJobsFirst reads the first n waiting jobs of each of keys in queue q, in one round trip
// (a key of another type reads as empty).
func (jq *Store) KeyJobsFirst(ctx context.Context, q string, keys []string, n int64) ([][]string, error) {
	cmds := make([]*redis.StringSliceCmd, len(keys))
	_, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keys {
			cmds[i] = p.LRange(ctx, jq.keys.KeyJobs(q, key), 0, n-1)
		}
		return nil
	})
	if err != nil {
		cs := make([]redis.Cmder, len(cmds))
		for i, c := range cmds {
			cs[i] = c
		}
		if !onlyMissing(cs) {
			return nil, err
		}
	}
	out := make([][]string, len(keys))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// KeyDelayedRange reads queue q's delayed keyed jobs (retries and jobs due later) from index
// start to stop, earliest first; none when the set is of another type.
func (jq *Store) KeyDelayedRange(ctx context.Context, q string, start, stop int64) ([]string, error) {
	jobs, err := jq.rdb.ZRange(ctx, jq.keys.KeyDelayed(q), start, stop).Result()
	if wrongType(err) {
		return nil, nil
	}
	return jobs, err
}
