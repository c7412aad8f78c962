package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/textsafe"
)

// keysJSON is a queue's top keys (exq keys QUEUE --json).
type keysJSON struct {
	Queue       string    `json:"queue"`
	Keys        []keyJSON `json:"keys"`
	ReadyKeys   int64     `json:"ready_keys"`
	BlockedKeys int64     `json:"blocked_keys"`
	HeldKeys    int64     `json:"held_keys"`
	PausedKeys  int64     `json:"paused_keys"`
	DelayedJobs int64     `json:"delayed_jobs"`
	Sampled     bool      `json:"sampled"`
}

// keyJSON is one key of a queue.
type keyJSON struct {
	Key          string         `json:"key"`
	Waiting      int64          `json:"waiting"`
	Running      int64          `json:"running"`
	Delayed      int64          `json:"delayed"`
	State        string         `json:"state"`
	BlockedUntil *textsafe.Time `json:"blocked_until,omitempty"`
}

func (a *app) keysCmd() *cobra.Command {
	var p page
	var top int
	c := &cobra.Command{
		Use:   "keys QUEUE [KEY]",
		Short: "The keys of QUEUE with the most jobs waiting; with KEY, that key's waiting jobs",
		Long: `The keys of QUEUE's keyed jobs (docs/keys.md) with the most jobs waiting, at most --top of them:
each with its waiting jobs, its running jobs (live leases, with a Concurrency or a Sequence),
its delayed jobs (among the first ` + fmt.Sprint(exq.KeySample) + ` due) and its state: ready, blocked (until a time), held
(a failed job of its sequence waits for its retry), paused (exq keys pause), or idle. The keys are
read from a bounded page of each of the queue's key sets (` + fmt.Sprint(exq.KeySample) + ` members): a queue with more
keys than that says so on stderr, and the list is the top among that sample.
With KEY, the key's waiting jobs, next to run first, a page of --limit from --offset.`,
		Args:              nArgs(1, 2, "keys QUEUE [KEY] (keys pause|resume QUEUE KEY to pause or resume a key)"),
		ValidArgsFunction: a.complete(queueNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, q := cmd.Context(), args[0]
			if err := checkQueue(q); err != nil {
				return err
			}
			if top < 1 || top > exq.MaxKeysLimit {
				return usagef("--top must be 1 to %d, got %d", exq.MaxKeysLimit, top)
			}
			if err := p.check(); err != nil {
				return err
			}
			if err := a.oneNamespace("keys"); err != nil {
				return err
			}
			if len(args) == 2 {
				if err := checkKeyArg(args[1]); err != nil {
					return err
				}
			}
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			if len(args) == 2 {
				key := args[1]
				recs, err := a.api.KeyJobs(ctx, q, key, exq.ListOptions{Offset: p.offset, Size: p.limit})
				if err != nil {
					return err
				}
				total, err := a.api.KeySize(ctx, q, key)
				if err != nil {
					return err
				}
				if err := a.records(recs, false); err != nil {
					return err
				}
				a.shown(p.offset, len(recs), total)
				return nil
			}
			rep, err := a.api.Keys(ctx, q, exq.KeysOptions{Limit: top})
			if err != nil {
				return err
			}
			if rep.Sampled {
				a.warnf("queue %q has more keys than one read takes (%d of each set): these are the top among the first %d", q, exq.KeySample, exq.KeySample)
			}
			if a.json {
				out := keysJSON{Queue: rep.Queue, Keys: make([]keyJSON, len(rep.Keys)), ReadyKeys: rep.ReadyKeys, BlockedKeys: rep.BlockedKeys,
					HeldKeys: rep.HeldKeys, PausedKeys: rep.PausedKeys, DelayedJobs: rep.DelayedJobs, Sampled: rep.Sampled}
				for i, k := range rep.Keys {
					out.Keys[i] = keyJSON{Key: k.Key, Waiting: k.Waiting, Running: k.Running, Delayed: k.Delayed, State: k.State}
					if k.BlockedUntil != nil {
						out.Keys[i].BlockedUntil = ts(*k.BlockedUntil)
					}
				}
				return a.printJSON(out)
			}
			rows := make([][]any, len(rep.Keys))
			for i, k := range rep.Keys {
				state := k.State
				if k.BlockedUntil != nil {
					state += " until " + when(*k.BlockedUntil)
				}
				rows[i] = []any{k.Key, k.Waiting, k.Running, k.Delayed, state}
			}
			return a.table([]string{"KEY", "WAITING", "RUNNING", "DELAYED", "STATE"}, rows)
		},
	}
	p.flags(c)
	c.Flags().IntVar(&top, "top", 50, fmt.Sprintf("how many keys to show, those with the most jobs waiting (1 to %d)", exq.MaxKeysLimit))
	c.AddCommand(a.pauseKeyCmd(true), a.pauseKeyCmd(false))
	return c
}

// checkKeyArg refuses a KEY no job could carry, before anything reaches Redis.
func checkKeyArg(key string) error {
	if _, err := exq.PrepareJob(time.Now(), exq.JobSpec{Queue: "q", Class: "exq.Check", Args: []any{}, Options: []exq.EnqueueOption{exq.Key(key)}}); err != nil {
		return usagef("KEY: %s", err)
	}
	return nil
}

func (a *app) pauseKeyCmd(pause bool) *cobra.Command {
	verb, done, short := "resume", "resumed", "Let KEY of QUEUE run again"
	if pause {
		verb, done, short = "pause", "paused", "Pause KEY of QUEUE on every exq node: its running jobs finish, none of its jobs starts"
	}
	return &cobra.Command{
		Use:   verb + " QUEUE KEY",
		Short: short,
		Long: short + `.
The queue's other keys go on; the key's new jobs wait. The state lives in Redis (docs/keys.md).`,
		Args:              nArgs(2, 2, verb+" QUEUE KEY"),
		ValidArgsFunction: a.complete(queueNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, q, key := cmd.Context(), args[0], args[1]
			if err := checkQueue(q); err != nil {
				return err
			}
			if err := checkKeyArg(key); err != nil {
				return err
			}
			if err := a.oneNamespace("keys " + verb); err != nil {
				return err
			}
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			var err error
			if pause {
				err = a.api.PauseKey(ctx, q, key)
			} else {
				err = a.api.ResumeKey(ctx, q, key)
			}
			if err != nil {
				return err
			}
			return a.say(map[string]any{"queue": q, "key": key, "paused": pause}, "%s key %s of queue %s", done, key, q)
		},
	}
}
