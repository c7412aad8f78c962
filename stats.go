package exq

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stat key lifetimes, as Sidekiq sets them.
const (
	statDayTTL    = 5 * 365 * 24 * time.Hour
	statSecondTTL = 120 * time.Second
)

// stats counts processed and failed runs in memory and writes them in one MULTI per flush:
// never a round trip per job. A Redis outage never blocks a worker; what was counted meanwhile
// is written once Redis answers. (The busy list is the pinger's: node.go.)
type stats struct {
	e        *Exq
	disabled bool

	mu      sync.Mutex
	pending map[statKey]int64
}

// statKey is one counter: kind is "processed" or "failed"; at is the second it counts for
// (zero for the all-time total, a UTC midnight for a day, a second for the realtime key).
type statKey struct {
	kind string
	span byte // 't' total, 'd' day, 's' second
	at   int64
}

func newStats(e *Exq, disabled bool) *stats {
	return &stats{e: e, disabled: disabled, pending: map[statKey]int64{}}
}

// record counts one run that ended at now: ok for processed, else failed.
func (s *stats) record(ok bool, now time.Time) {
	if s.disabled {
		return
	}
	kind := "failed"
	if ok {
		kind = "processed"
	}
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).Unix()
	s.mu.Lock()
	s.pending[statKey{kind, 't', 0}]++
	s.pending[statKey{kind, 'd', day}]++
	s.pending[statKey{kind, 's', now.Unix()}]++
	s.mu.Unlock()
}

// run flushes every interval until ctx ends.
func (s *stats) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.flush(ctx)
		switch {
		case err != nil && !failing:
			s.e.log.Warn("exq: stats: writing counters failed; keeping them until Redis answers", "error", err)
			failing = true
		case err == nil && failing:
			s.e.log.Info("exq: stats: writing counters works again")
			failing = false
		}
	}
}

// flush writes the pending counters.
func (s *stats) flush(ctx context.Context) error {
	s.mu.Lock()
	counts := s.pending
	s.pending = map[statKey]int64{}
	s.mu.Unlock()

	keys := s.e.jq.keys
	if len(counts) == 0 {
		return nil
	}
	now := s.e.opts.now()
	_, err := s.e.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for k, n := range counts {
			switch k.span {
			case 't':
				p.IncrBy(ctx, keys.Stat(k.kind), n)
			case 'd':
				key := keys.StatDay(k.kind, time.Unix(k.at, 0))
				p.IncrBy(ctx, key, n)
				p.Expire(ctx, key, statDayTTL)
			case 's':
				key := keys.StatSecond(k.kind, time.Unix(k.at, 0))
				p.IncrBy(ctx, key, n)
				p.Expire(ctx, key, statSecondTTL)
			}
		}
		return nil
	})
	if err != nil {
		s.restore(counts, now)
		return err
	}
	return nil
}

// restore puts counts that could not be written back, except realtime seconds that would
// already have expired: writing them late would only distort the realtime graph.
func (s *stats) restore(counts map[statKey]int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range counts {
		if k.span == 's' && now.Unix()-k.at > int64(statSecondTTL/time.Second) {
			continue
		}
		s.pending[k] += n
	}
}
