package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicaWait is Options.WaitReplicas at work: after a write, WAIT n timeout on the same
// connection, so the write is known to be on n replicas before the call returns. WAIT counts
// the writes of its own connection only, so the write and its WAIT always travel in one
// pipeline. A nil *replicaWait (WaitReplicas 0) costs one nil check per write.
type replicaWait struct {
	n       int
	timeout time.Duration
	log     *slog.Logger

	lastWarn atomic.Int64 // unix nanoseconds of the last shortfall warning, to log one per minute
}

// newReplicaWait returns nil when n is 0: no WAIT at all.
func newReplicaWait(n int, timeout time.Duration, log *slog.Logger) *replicaWait {
	if n <= 0 {
		return nil
	}
	return &replicaWait{n: n, timeout: timeout, log: log}
}

// pipeline sends the commands queue adds and then WAIT, in one pipeline on one connection.
// err is the pipeline's error when a command of queue failed (their own errors say which);
// replErr, when they all succeeded, wraps ErrNotReplicated when fewer than n replicas
// acknowledged them within the timeout or the WAIT reply was lost.
func (w *replicaWait) pipeline(ctx context.Context, rdb redis.UniversalClient, key string,
	queue func(p redis.Pipeliner) []redis.Cmder) (replErr, err error) {
	// A Cluster pipeline sends a keyless command such as WAIT to any node: send both to the
	// master of the key's slot instead (a namespace lives in one slot).
	var target redis.Cmdable = rdb
	if c, ok := rdb.(interface {
		MasterForKey(context.Context, string) (*redis.Client, error)
	}); ok {
		m, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		target = m
	}
	var cmds []redis.Cmder
	var wait *redis.IntCmd
	timeout := w.waitFor(ctx)
	_, _ = target.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmds = queue(p)
		// Pipeliner has no Wait method; in a pipeline the connection's ReadTimeout bounds the
		// reply, which is why WaitTimeout must stay below it (config.go).
		wait = redis.NewIntCmd(ctx, "wait", w.n, timeout.Milliseconds())
		_ = p.Process(ctx, wait)
		return nil
	})
	for _, c := range cmds {
		if c.Err() != nil {
			return nil, c.Err()
		}
	}
	return w.check(wait, timeout), nil
}

// waitFor is how long WAIT may block: WaitTimeout, or less when ctx ends sooner. The deadline
// ends the read of the reply, and a write whose reply was cut off reads as a failed call
// although its job was written; a WAIT that answers in time returns ErrNotReplicated, which
// says the job is on the master. A quarter of what ctx leaves is kept for the write itself and
// the round trip. (A caller queued behind another write of its Client, or a write sent again
// after NOSCRIPT on a new master, has less than its whole deadline left.)
func (w *replicaWait) waitFor(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return w.timeout
	}
	left := time.Until(d) * 3 / 4
	if left >= w.timeout {
		return w.timeout
	}
	return max(left, time.Millisecond) // WAIT n 0 would block for ever
}

// check turns a WAIT reply into nil or an error wrapping ErrNotReplicated.
func (w *replicaWait) check(wait *redis.IntCmd, timeout time.Duration) error {
	got, err := wait.Result()
	if err != nil {
		return fmt.Errorf("%w: WAIT failed after the write: %v", ErrNotReplicated, err)
	}
	if int(got) < w.n {
		return fmt.Errorf("%w: %d of %d replicas acknowledged the write within %s", ErrNotReplicated, got, w.n, timeout)
	}
	return nil
}

// eval runs a script and then WAIT in one pipeline. The script goes by EVALSHA; on NOSCRIPT
// (a restarted or failed-over Redis) the pair is sent again with EVAL, which is safe: a
// NOSCRIPT reply means the script did not run.
func (w *replicaWait) eval(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	var cmd *redis.Cmd
	run := func(sha bool) (error, error) {
		return w.pipeline(ctx, rdb, keys[0], func(p redis.Pipeliner) []redis.Cmder {
			if sha {
				cmd = s.EvalSha(ctx, p, keys, args...)
			} else {
				cmd = s.Eval(ctx, p, keys, args...)
			}
			return []redis.Cmder{cmd}
		})
	}
	replErr, err := run(true)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		replErr, _ = run(false)
	}
	return cmd, replErr
}

// shortfall logs an outcome write (ack, retry, snooze, dead, hand-back) that fewer replicas
// than asked for confirmed, at most once a minute, and lets it count as written. The write is
// on the master; what a failover before the replicas caught up could do is run the job again
// (it is still in the backup list there), never lose it, so holding the job, or its slot,
// until the replicas answer would stall the node while a replica is down and buy nothing.
func (w *replicaWait) shortfall(what string, err error) {
	if w == nil || err == nil {
		return
	}
	now := time.Now().UnixNano()
	last := w.lastWarn.Load()
	if now-last < int64(time.Minute) || !w.lastWarn.CompareAndSwap(last, now) {
		return
	}
	w.log.Warn("exq: an outcome write was not confirmed by enough replicas (logged once a minute); "+
		"a failover now could run its job again", "write", what, "error", err)
}

// evalScript runs a script on jq's Redis and, with WaitReplicas, WAITs for it (see
// replicaWait.eval); replErr reports a shortfall. A refusal for want of memory matches
// ErrRedisOOM.
func (jq *Store) evalScript(ctx context.Context, s *redis.Script, keys []string, args ...any) (cmd *redis.Cmd, replErr error) {
	if jq.wait == nil {
		cmd = s.Run(ctx, jq.rdb, keys, args...)
	} else {
		cmd, replErr = jq.wait.eval(ctx, jq.rdb, s, keys, args...)
	}
	if err := cmd.Err(); err != nil {
		cmd.SetErr(MarkOOM(err))
	}
	return cmd, replErr
}

// ReadTimeout is the read timeout of rdb's connections (0 when unknown): a WAIT in a pipeline
// must end before it.
func ReadTimeout(rdb redis.UniversalClient) time.Duration {
	switch c := rdb.(type) {
	case interface{ Options() *redis.Options }:
		return c.Options().ReadTimeout
	case interface{ Options() *redis.ClusterOptions }:
		return c.Options().ReadTimeout
	}
	return 0
}
