package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

func (a *app) requeueCmd() *cobra.Command {
	var all bool
	var set string
	c := &cobra.Command{
		Use:     "requeue JID | --all [--set SET]",
		Aliases: []string{"retry"},
		Short:   "Move a retry, scheduled or dead job to its queue now, or every job of a set",
		Long: `Move a retry, scheduled or dead job to its queue now (--set narrows the search), or with
--all every job of --set (default dead), byte for byte, with a progress bar on stderr (plain
lines when stderr is not a terminal). Each job moves once, so a job that fails again during
the move waits for the next call. It is the API's Requeue, RequeueJob and RequeueAll, and the
dashboard's "Retry Now" (retries, dead) and "Add to queue" (scheduled); "exq retry" is the same
command under Sidekiq's and Exq's word.`,
		Example: `  exq requeue 1b4e28ba-2fa1-41d2-883f-0016d3cca427
  exq requeue --all --set retry`,
		Args: nArgs(0, 1, "a JID or --all"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if all == (len(args) == 1) {
				return usagef("give either a JID or --all")
			}
			if all {
				if set == "" {
					set = "dead"
				}
				s, err := parseSet("--set", set)
				if err != nil {
					return err
				}
				return a.requeueAll(ctx, s)
			}
			return a.requeueJob(ctx, args[0], set)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "move every job of --set")
	c.Flags().StringVar(&set, "set", "", "dead, retry or schedule, the sets' names in Redis (retries, scheduled, morgue work too; with --all, default dead)")
	_ = c.RegisterFlagCompletionFunc("set", setNames)
	return c
}

func (a *app) requeueAll(ctx context.Context, s exq.Set) error {
	if err := a.oneNamespace("requeue --all"); err != nil {
		return err
	}
	if err := a.connect(ctx, true); err != nil {
		return err
	}
	size, err := a.api.Size(ctx, s)
	if err != nil {
		return err
	}
	if size == 0 {
		return a.say(map[string]any{"moved": 0, "from": string(s)}, "%s is empty; nothing was moved", s)
	}
	bar := a.newProgress("moving "+string(s)+" jobs to their queues", int(size))
	bar.update(0, int(size))
	moved, err := a.api.RequeueAll(ctx, s, bar.update)
	bar.finish()
	if err != nil {
		return fmt.Errorf("moved %s from %s, then: %w", jobs(moved), s, err)
	}
	return a.say(map[string]any{"moved": moved, "from": string(s)}, "moved %s from %s to their queues", jobs(moved), s)
}

func (a *app) requeueJob(ctx context.Context, jid, set string) error {
	sets, err := setsToSearch(set)
	if err != nil {
		return err
	}
	if err := a.connect(ctx, true); err != nil {
		return err
	}
	found, err := a.inSets(ctx, sets, func(i int, api *exq.API, s exq.Set) error {
		rec, err := api.RequeueJob(ctx, s, jid)
		if err != nil {
			return err
		}
		j, _ := rec.Job() // found by its jid, so it decodes
		v := map[string]any{"jid": jid, "from": string(s), "queue": j.Queue}
		in := a.where(i, v)
		return a.say(v, "moved %s from %s to queue %s%s", jid, s, j.Queue, in)
	})
	if found || err != nil {
		return err
	}
	names := namesOf(sets)
	return fmt.Errorf("%w: no job %s in %s (see exq job %s)", exq.ErrJobNotFound, jid, strings.Join(names, ", "), jid)
}
