package exq

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/wire"
)

// nodeTTL is how long a node's hash (and busy list) outlives its last ping: after that
// readers treat the node as gone.
const nodeTTL = 60 * time.Second

// maxSignalsPerPing bounds the signals read in one ping, as Exq does.
const maxSignalsPerPing = 100

// pinger registers this node where Exq's and Sidekiq's UIs look for processes: the processes
// set, the node hash (info, busy, beat, quiet, rtt_us, rss) and the busy list; it reads the
// node's signals; and it prunes nodes whose hash has expired.
type pinger struct {
	e        *Exq
	hostname string
	started  time.Time
	rtt      time.Duration // of the previous ping
}

func newPinger(e *Exq) *pinger {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return &pinger{e: e, hostname: host, started: e.opts.now()}
}

func (p *pinger) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		err := p.ping(ctx)
		if err == nil {
			err = p.e.prune(ctx)
		}
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			p.e.log.Warn("exq: node ping failed; will retry", "error", err)
			failing = true
		case err == nil && failing:
			p.e.log.Info("exq: node ping works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ping writes this node's state and takes its pending signals, in one MULTI.
func (p *pinger) ping(ctx context.Context) error {
	e := p.e
	keys := e.jq.keys
	node := e.opts.NodeID
	subs := e.mgr.subscriptions()
	names := make([]string, len(subs))
	for i, q := range subs {
		names[i] = q.Name
	}
	busy := e.mgr.inFlight()
	quiet := e.mgr.quiet.Load() || len(subs) == 0
	info := wire.NodeInfo{
		Hostname:    p.hostname,
		Identity:    node,
		StartedAt:   float64(p.started.UnixMicro()) / 1e6,
		PID:         os.Getpid(),
		Queues:      names,
		Concurrency: e.mgr.concurrency(),
		Busy:        busy,
		Quiet:       quiet,
	}
	var signals *redis.StringSliceCmd
	begin := time.Now()
	_, err := e.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		pl.SAdd(ctx, keys.Processes(), node)
		pl.HSet(ctx, keys.Node(node),
			"info", info.Encode(),
			"busy", busy,
			"beat", wire.FormatTime(e.opts.now()),
			"quiet", strconv.FormatBool(quiet),
			"rtt_us", p.rtt.Microseconds(),
			"rss", rssKB())
		pl.Expire(ctx, keys.Node(node), nodeTTL)
		if !e.stats.disabled {
			pl.Expire(ctx, keys.Workers(node), nodeTTL)
		}
		signals = pl.LRange(ctx, keys.Signals(node), 0, maxSignalsPerPing-1)
		pl.LTrim(ctx, keys.Signals(node), maxSignalsPerPing, -1)
		return nil
	})
	p.rtt = time.Since(begin)
	if err != nil {
		return err
	}
	// Senders LPUSH, so the oldest signal is last: handle them in the order they were sent.
	sigs := signals.Val()
	for i := len(sigs) - 1; i >= 0; i-- {
		e.handleSignal(sigs[i])
	}
	return nil
}

// unregister removes this node from the processes set and deletes its busy list (clean stop).
// The node hash is left to expire, as Sidekiq does.
func (p *pinger) unregister(ctx context.Context) error {
	keys := p.e.jq.keys
	_, err := p.e.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		pl.SRem(ctx, keys.Processes(), p.e.opts.NodeID)
		pl.Del(ctx, keys.Workers(p.e.opts.NodeID))
		return nil
	})
	return err
}

// prune removes from the processes set every node whose hash has expired (it stopped pinging
// a minute ago), and deletes those nodes' busy lists, and only theirs.
func (e *Exq) prune(ctx context.Context) error { return prune(ctx, e.rdb, e.jq.keys, e.log) }

func prune(ctx context.Context, rdb redis.UniversalClient, keys wire.Keys, log *slog.Logger) error {
	members, err := rdb.SMembers(ctx, keys.Processes()).Result()
	if err != nil || len(members) == 0 {
		return err
	}
	exists := make([]*redis.BoolCmd, len(members))
	if _, err := rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, m := range members {
			exists[i] = pl.HExists(ctx, keys.Node(m), "info")
		}
		return nil
	}); err != nil {
		return err
	}
	var gone []string
	for i, m := range members {
		if !exists[i].Val() {
			gone = append(gone, m)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	_, err = rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		args := make([]any, len(gone))
		for i, g := range gone {
			args[i] = g
			pl.Del(ctx, keys.Workers(g))
		}
		pl.SRem(ctx, keys.Processes(), args...)
		return nil
	})
	if err == nil && log != nil {
		log.Info("exq: pruned processes that stopped pinging", "nodes", gone)
	}
	return err
}

// rssKB is this process' resident set size in KB (Linux), or 0 where it cannot be read.
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte("VmRSS:")) {
			f := bytes.Fields(line[len("VmRSS:"):])
			if len(f) > 0 {
				n, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return n
			}
		}
	}
	return 0
}
