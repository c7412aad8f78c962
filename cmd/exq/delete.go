package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

// deletePage is how many jobs one removal call takes: small enough that Redis is never
// blocked for long, large enough that 100 000 jobs take a few hundred round trips.
const deletePage = 500

func (a *app) deleteCmd() *cobra.Command {
	var all, force bool
	var set, queue string
	c := &cobra.Command{
		Use:   "delete JID | --all --set SET | --queue QUEUE",
		Short: "Delete one job, every job of a set, or a queue and its jobs",
		Long: `Delete one job (waiting in a queue, or in retry, schedule or dead; --set looks in that set
only; a stored document that is no job is named by the ref:… the listings show for it), every job of a set (--all --set dead|retry|schedule), or a queue with its waiting jobs
(--queue).

The bulk forms ask for confirmation on a terminal and need --force otherwise; they show a
progress bar (plain lines when stderr is not a terminal), release the unique locks of the jobs
they remove, and say how many jobs they removed. A queue that does not exist fails (exit 1).`,
		Example: `  exq delete 1b4e28ba-2fa1-41d2-883f-0016d3cca427
  exq delete --all --set dead --force
  exq delete --queue mail`,
		Args: nArgs(0, 1, "a JID, --all --set SET, or --queue QUEUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			modes := 0
			for _, on := range []bool{len(args) == 1, all, queue != ""} {
				if on {
					modes++
				}
			}
			if modes != 1 {
				return usagef("give exactly one of a JID, --all --set SET, or --queue QUEUE")
			}
			switch {
			case queue != "":
				return a.deleteQueue(ctx, queue, force)
			case all:
				if set == "" {
					return usagef("--all needs --set dead|retry|schedule")
				}
				s, err := parseSet("--set", set)
				if err != nil {
					return err
				}
				return a.deleteSet(ctx, s, force)
			}
			return a.deleteJob(ctx, args[0], set)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "delete every job of --set")
	c.Flags().StringVar(&set, "set", "", "dead, retry or schedule")
	c.Flags().StringVar(&queue, "queue", "", "delete this queue and its waiting jobs")
	c.Flags().BoolVarP(&force, "force", "f", false, "do not ask for confirmation (required when stdin is not a terminal)")
	_ = c.RegisterFlagCompletionFunc("set", setNames)
	_ = c.RegisterFlagCompletionFunc("queue", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return a.completeNames(queueNames)
	})
	return c
}

// setsToSearch is the set named by --set, or retry, schedule and dead.
func setsToSearch(set string) ([]exq.Set, error) {
	if set == "" {
		return []exq.Set{exq.RetrySet, exq.ScheduledSet, exq.DeadSet}, nil
	}
	s, err := parseSet("--set", set)
	return []exq.Set{s}, err
}

// parseSet reads a set name given to flag.
func parseSet(flag, s string) (exq.Set, error) {
	switch s {
	case "dead", "morgue":
		return exq.DeadSet, nil
	case "retry", "retries":
		return exq.RetrySet, nil
	case "schedule", "scheduled":
		return exq.ScheduledSet, nil
	}
	return "", usagef("%s %q: want dead, retry or schedule", flag, s)
}

func (a *app) deleteQueue(ctx context.Context, q string, force bool) error {
	if err := a.oneNamespace("delete --queue"); err != nil {
		return err
	}
	if err := a.mustForce(force, "delete --queue "+q+" deletes the queue and its jobs"); err != nil {
		return err
	}
	if err := a.connect(ctx, true); err != nil {
		return err
	}
	ok, size, err := queueExists(ctx, a.api, q)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no queue %q in namespace %q (see exq queues); nothing was deleted", q, a.nss[0])
	}
	if err := a.confirm(force, fmt.Sprintf("Delete queue %s and its %s?", q, jobs(int(size)))); err != nil {
		return err
	}
	bar := a.newProgress("deleting queue "+q, int(size))
	deleted, err := drain(ctx, bar,
		func() ([]exq.JobRecord, error) { return a.api.Jobs(ctx, q, exq.ListOptions{Size: deletePage}) },
		func(raws []string) (int, error) {
			return a.api.RemoveJobs(ctx, q, raws, exq.RemoveOptions{ClearUniqueLocks: true})
		},
		func() (int64, error) { return a.api.QueueSize(ctx, q) })
	if err == nil {
		err = a.api.RemoveQueue(ctx, q) // drops the (now empty) queue from the queues set
	}
	if err != nil {
		return fmt.Errorf("deleted %s of queue %s, then: %w", jobs(deleted), q, err)
	}
	return a.say(map[string]any{"queue": q, "deleted": deleted}, "deleted queue %s and its %s", q, jobs(deleted))
}

func (a *app) deleteSet(ctx context.Context, s exq.Set, force bool) error {
	if err := a.oneNamespace("delete --all"); err != nil {
		return err
	}
	if err := a.mustForce(force, "delete --all --set "+string(s)+" deletes every job of "+string(s)); err != nil {
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
		return a.say(map[string]any{"set": string(s), "deleted": 0}, "%s is empty; nothing was deleted", s)
	}
	if err := a.confirm(force, fmt.Sprintf("Delete every job of %s (%s)?", s, jobs(int(size)))); err != nil {
		return err
	}
	bar := a.newProgress("deleting "+string(s)+" jobs", int(size))
	deleted, err := drain(ctx, bar,
		func() ([]exq.JobRecord, error) {
			recs, _, err := listSet(ctx, a.api, s, exq.ListOptions{Size: deletePage})
			return recs, err
		},
		func(raws []string) (int, error) {
			return a.api.Remove(ctx, s, raws, exq.RemoveOptions{ClearUniqueLocks: true})
		},
		func() (int64, error) { return a.api.Size(ctx, s) })
	if err != nil {
		return fmt.Errorf("deleted %s of %s, then: %w", jobs(deleted), s, err)
	}
	return a.say(map[string]any{"set": string(s), "deleted": deleted}, "deleted %s of %s", jobs(deleted), s)
}

// drain removes pages of jobs until none is left, reporting progress; jobs that arrive
// meanwhile are removed too (and counted). It returns how many jobs it removed.
func drain(ctx context.Context, bar *progress, next func() ([]exq.JobRecord, error),
	remove func([]string) (int, error), left func() (int64, error)) (int, error) {
	deleted, stuck := 0, 0
	defer bar.finish()
	bar.update(0, bar.total)
	for {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		recs, err := next()
		if err != nil || len(recs) == 0 {
			return deleted, err
		}
		raws := make([]string, len(recs))
		for i, r := range recs {
			raws[i] = r.Raw
		}
		n, err := remove(raws)
		deleted += n
		if err != nil {
			return deleted, err
		}
		rest, err := left()
		if err != nil {
			return deleted, err
		}
		bar.update(deleted, deleted+int(rest))
		// A page that removes nothing was taken by someone else meanwhile (a node fetching,
		// the scheduler); a few in a row mean the jobs cannot be removed: stop, do not spin.
		if n > 0 {
			stuck = 0
		} else if stuck++; stuck == 3 {
			return deleted, fmt.Errorf("%d jobs are left that could not be removed", rest)
		}
	}
}

func (a *app) deleteJob(ctx context.Context, jid, set string) error {
	sets, err := setsToSearch(set)
	if err != nil {
		return err
	}
	if err := a.connect(ctx, true); err != nil {
		return err
	}
	found, err := a.inSets(ctx, sets, func(i int, api *exq.API, s exq.Set) error {
		rec, err := api.Find(ctx, s, jid)
		if err != nil {
			return err
		}
		if _, err := api.Remove(ctx, s, []string{rec.Raw}, exq.RemoveOptions{ClearUniqueLocks: true}); err != nil {
			return err
		}
		v := map[string]any{"jid": jid, "from": string(s), "deleted": 1}
		in := a.where(i, v)
		return a.say(v, "deleted %s from %s%s", jid, s, in)
	})
	if found || err != nil {
		return err
	}
	names := namesOf(sets)
	if set == "" {
		names = append(names, "any queue")
		for i, api := range a.shards() {
			q, ok, err := deleteFromQueues(ctx, api, jid)
			if err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
			v := map[string]any{"jid": jid, "from": "queue", "queue": q, "deleted": 1}
			in := a.where(i, v)
			return a.say(v, "deleted %s from queue %s%s", jid, q, in)
		}
	}
	return fmt.Errorf("%w: no job %s in %s (see exq job %s)", exq.ErrJobNotFound, jid, strings.Join(names, ", "), jid)
}

// inSets runs act on each set of each shard, in turn, until one does not answer
// exq.ErrJobNotFound; found says whether one did.
func (a *app) inSets(ctx context.Context, sets []exq.Set, act func(shard int, api *exq.API, s exq.Set) error) (found bool, err error) {
	for i, api := range a.shards() {
		for _, s := range sets {
			if err := act(i, api, s); !errors.Is(err, exq.ErrJobNotFound) {
				return true, err
			}
		}
	}
	return false, nil
}

// namesOf lists sets for a message.
func namesOf(sets []exq.Set) []string {
	names := make([]string, len(sets))
	for i, s := range sets {
		names[i] = string(s)
	}
	return names
}

// deleteFromQueues removes waiting job jid from the first queue that holds it.
func deleteFromQueues(ctx context.Context, api *exq.API, jid string) (string, bool, error) {
	qs, err := api.Queues(ctx)
	if err != nil {
		return "", false, err
	}
	for _, q := range qs {
		rec, err := api.FindInQueue(ctx, q, jid)
		if errors.Is(err, exq.ErrJobNotFound) {
			continue
		}
		if err != nil {
			return "", false, err
		}
		n, err := api.RemoveJobs(ctx, q, []string{rec.Raw}, exq.RemoveOptions{ClearUniqueLocks: true})
		if err != nil || n == 1 {
			return q, n == 1, err
		}
	}
	return "", false, nil
}
