package exq

import (
	"context"
	"log/slog"
	"time"
)

// scheduler moves due jobs from the schedule and retry sets to their queues. Every node runs
// one; each move is one atomic script call, so nodes racing never lose or duplicate a job.
type scheduler struct {
	jq       *jobQueue
	interval time.Duration
	page     int
	now      func() time.Time
	log      *slog.Logger
	timeout  time.Duration
}

func (s *scheduler) run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	failing := false
	for {
		err := s.tick(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.log.Warn("exq: scheduler: moving due jobs failed; will retry", "error", err)
			failing = true
		case err == nil && failing:
			s.log.Info("exq: scheduler: moving due jobs works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick moves every due job of both sets, a page per script call.
func (s *scheduler) tick(ctx context.Context) error {
	now := s.now()
	for _, set := range []string{s.jq.keys.Schedule(), s.jq.keys.Retry()} {
		for ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, s.timeout)
			n, err := s.jq.moveDue(cctx, set, now, s.page)
			cancel()
			if err != nil {
				return err
			}
			if n < s.page {
				break
			}
		}
	}
	return nil
}
