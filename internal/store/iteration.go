package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// IterationTTL is how long an iterable job's state lives after its last write: Sidekiq 7.3's
// STATE_TTL (30 days), refreshed at every save as Sidekiq's flush_state does.
const IterationTTL = 30 * 24 * time.Hour

// IterationDoneTTL is how long the state of a completed iteration is kept, marked done, so
// that a run of the same job that starts again (rescued after it completed but before its
// acknowledgement reached Redis) ends at once instead of walking everything again.
const IterationDoneTTL = 24 * time.Hour

// The fields of the state hash. ex, c, rt and cancelled are Sidekiq 7.3's
// (lib/sidekiq/job/iterable.rb: flush_state, fetch_previous_iteration_state, cancel!);
// exq_done is exq's own, which Sidekiq does not read.
const (
	iterExecutions = "ex"        // runs begun, an integer
	iterCursor     = "c"         // the cursor of the next item, as JSON ("null" for none)
	iterRuntime    = "rt"        // seconds spent iterating over all runs, a float
	iterCancelled  = "cancelled" // Unix seconds of the first cancellation, an integer
	iterDone       = "exq_done"  // "1" once the iteration completed (exq only)
)

// IterationState is an iterable job's saved state.
type IterationState struct {
	Executions int
	Cursor     []byte // JSON; nil when none was saved
	Runtime    float64
	Cancelled  int64 // Unix seconds; 0: not cancelled
	Done       bool
	Exists     bool // the hash exists
}

// parseIteration reads the state from a hash's fields. A field that does not parse counts as
// absent: the hash may have been written by anyone.
func parseIteration(f map[string]string) IterationState {
	st := IterationState{Exists: len(f) > 0}
	if v, err := strconv.Atoi(f[iterExecutions]); err == nil && v > 0 {
		st.Executions = v
	}
	if c, ok := f[iterCursor]; ok {
		st.Cursor = []byte(c)
	}
	if v, err := strconv.ParseFloat(f[iterRuntime], 64); err == nil && v >= 0 {
		st.Runtime = v
	}
	if v, err := strconv.ParseInt(f[iterCancelled], 10, 64); err == nil && v > 0 {
		st.Cancelled = v
	}
	st.Done = f[iterDone] == "1"
	return st
}

// Iteration reads the state of iterable job jid (a missing hash is the zero state).
func (jq *Store) Iteration(ctx context.Context, jid string) (IterationState, error) {
	f, err := jq.rdb.HGetAll(ctx, jq.keys.Iteration(jid)).Result()
	if err != nil {
		return IterationState{}, err
	}
	return parseIteration(f), nil
}

// Iterations reads the states of jids in one round trip, by jid; jids with no state are left out.
func (jq *Store) Iterations(ctx context.Context, jids []string) (map[string]IterationState, error) {
	if len(jids) == 0 {
		return nil, nil
	}
	p := jq.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(jids))
	for i, jid := range jids {
		cmds[i] = p.HGetAll(ctx, jq.keys.Iteration(jid))
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := map[string]IterationState{}
	for i, c := range cmds {
		if st := parseIteration(c.Val()); st.Exists {
			out[jids[i]] = st
		}
	}
	return out, nil
}

// formatRuntime writes seconds as Ruby's Float#to_s does for the values a runtime takes
// ("12.5", "3.0"), which Sidekiq reads back with to_f.
func formatRuntime(s float64) string {
	v := strconv.FormatFloat(s, 'f', -1, 64)
	if !strings.Contains(v, ".") {
		v += ".0"
	}
	return v
}

// SaveIteration writes iterable job jid's executions, cursor (JSON) and runtime (seconds),
// refreshes the TTL, and reads the cancellation flag, in one MULTI as Sidekiq's flush_state. It
// returns the Unix time of the cancellation, 0 when there is none.
func (jq *Store) SaveIteration(ctx context.Context, jid string, executions int, cursor []byte, runtime float64) (int64, error) {
	key := jq.keys.Iteration(jid)
	p := jq.rdb.TxPipeline()
	p.HSet(ctx, key, iterExecutions, strconv.Itoa(executions), iterCursor, string(cursor), iterRuntime, formatRuntime(runtime))
	p.Expire(ctx, key, IterationTTL)
	get := p.HGet(ctx, key, iterCancelled)
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	at, _ := strconv.ParseInt(get.Val(), 10, 64)
	return max(at, 0), nil
}

// CompleteIteration marks iterable job jid's iteration done, with its last state, for
// IterationDoneTTL (see there).
func (jq *Store) CompleteIteration(ctx context.Context, jid string, executions int, cursor []byte, runtime float64) error {
	key := jq.keys.Iteration(jid)
	p := jq.rdb.TxPipeline()
	p.HSet(ctx, key, iterExecutions, strconv.Itoa(executions), iterCursor, string(cursor), iterRuntime, formatRuntime(runtime), iterDone, "1")
	p.Expire(ctx, key, IterationDoneTTL)
	_, err := p.Exec(ctx)
	return err
}

// DeleteIteration removes iterable job jid's state (UNLINK, as Sidekiq's cleanup).
func (jq *Store) DeleteIteration(ctx context.Context, jid string) error {
	return jq.rdb.Unlink(ctx, jq.keys.Iteration(jid)).Err()
}

// CancelIteration sets iterable job jid's cancellation flag to now (Unix seconds) unless it is
// set, and refreshes the TTL, as Sidekiq's cancel! does (HSETNX, EXPIRE). It returns the flag's
// value and whether the job had a saved iteration state before: runs begun ("ex") and not
// completed. A hash holding only an earlier flag (a plain job cancelled before) is no state.
func (jq *Store) CancelIteration(ctx context.Context, jid string, now time.Time) (at int64, existed bool, err error) {
	key := jq.keys.Iteration(jid)
	p := jq.rdb.TxPipeline()
	before := p.HMGet(ctx, key, iterExecutions, iterDone)
	p.HSetNX(ctx, key, iterCancelled, strconv.FormatInt(now.Unix(), 10))
	get := p.HGet(ctx, key, iterCancelled)
	p.Expire(ctx, key, IterationTTL)
	if _, err := p.Exec(ctx); err != nil {
		return 0, false, err
	}
	at, _ = strconv.ParseInt(get.Val(), 10, 64)
	f := before.Val()
	return at, len(f) == 2 && f[0] != nil && f[1] != "1", nil
}

// UncancelIteration removes the state CancelIteration created for a jid that turned out to be
// nowhere, so that a mistaken call leaves Redis as it was. It removes only a hash that holds
// nothing but the flag.
func (jq *Store) UncancelIteration(ctx context.Context, jid string) error {
	key := jq.keys.Iteration(jid)
	f, err := jq.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return err
	}
	if _, ok := f[iterCancelled]; ok && len(f) == 1 {
		return jq.rdb.Unlink(ctx, key).Err()
	}
	return nil
}

// KillQueued moves raw from queue q to the dead set, scored now, if it is still there, and trims
// the dead set as KillSet does (kill.lua): a waiting job that CancelJob cancels. It reports
// whether the job moved.
func (jq *Store) KillQueued(ctx context.Context, q, raw string, now time.Time, keepFor time.Duration, keepMax int) (bool, error) {
	n, err := scripts.Kill.Run(ctx, jq.rdb, []string{jq.keys.Queue(q), jq.keys.Dead()},
		wire.FormatTime(now), wire.FormatTime(now.Add(-keepFor)), keepMax, raw).Int()
	return n == 1, err
}
