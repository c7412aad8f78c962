package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

func (a *app) queuesCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "queues",
		Short: "Every queue: size, paused, global limit in use, rate and starts",
		Long: `Every queue the namespace knows (or that is paused or limited): its waiting jobs, whether it
is paused, its global limit and the slots in use (LIMIT 3/5), its rate and the jobs started
within the rate's window (STARTED). With several namespaces, sizes, slots and starts are summed.`,
		Args: nArgs(0, 0, "no argument (queues pause|resume QUEUE to pause or resume)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			states, err := a.view().QueueStates(ctx)
			if err != nil {
				return err
			}
			if a.json {
				out := make([]queueJSON, len(states))
				for i, q := range states {
					out[i] = queueJSON{Queue: q.Name, Size: q.Size, Paused: q.Paused, GlobalLimit: q.GlobalLimit, InUse: q.InUse,
						Rate: q.Rate.N, RatePerMS: q.Rate.Per.Milliseconds(), Started: q.Started}
				}
				return a.printJSON(out)
			}
			rows := make([][]any, len(states))
			for i, q := range states {
				state, limit, started := "", "", ""
				if q.Paused {
					state = "paused"
				}
				if q.GlobalLimit > 0 {
					limit = fmt.Sprintf("%d/%d", q.InUse, q.GlobalLimit)
				}
				if q.Rate.N > 0 {
					started = fmt.Sprint(q.Started)
				}
				rows[i] = []any{q.Name, q.Size, state, limit, q.Rate.String(), started}
			}
			return a.table([]string{"QUEUE", "SIZE", "STATE", "LIMIT", "RATE", "STARTED"}, rows)
		},
	}
	c.AddCommand(a.pauseCmd(true), a.pauseCmd(false))
	return c
}

func (a *app) pauseCmd(pause bool) *cobra.Command {
	verb, done, short := "resume", "resumed", "Let every node fetch from QUEUE again"
	if pause {
		verb, done, short = "pause", "paused", "Pause QUEUE on every exq node: running jobs finish, no more are fetched"
	}
	return &cobra.Command{
		Use:   verb + " QUEUE",
		Short: short,
		Long: short + `.
The state lives in Redis, so nodes started later see it; Exq and Sidekiq nodes do not honour it.
With several namespaces, the queue is paused or resumed in each.`,
		Args:              nArgs(1, 1, verb+" QUEUE"),
		ValidArgsFunction: a.complete(queueNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, q := cmd.Context(), args[0]
			if err := checkQueue(q); err != nil {
				return err
			}
			if err := a.connect(ctx, true); err != nil {
				return err
			}
			var err error
			if pause {
				err = a.view().PauseQueue(ctx, q)
			} else {
				err = a.view().ResumeQueue(ctx, q)
			}
			if err != nil {
				return err
			}
			if err := a.warnUnknownQueue(ctx, q); err != nil {
				return err
			}
			return a.say(map[string]any{"queue": q, "paused": pause}, "%s queue %s", done, q)
		},
	}
}

// checkQueue refuses a queue name no node could use, before anything reaches Redis.
func checkQueue(q string) error {
	_, err := exq.PrepareJob(time.Now(), exq.JobSpec{Queue: q, Class: "exq.Check", Args: []any{}})
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "queue name"); i >= 0 {
			msg = msg[i:]
		}
		return usagef("QUEUE: %s", msg)
	}
	return nil
}

// warnUnknownQueue warns on stderr when no job, node, pause or limit knows queue q: it is
// most likely a typo.
func (a *app) warnUnknownQueue(ctx context.Context, q string) error {
	states, err := a.view().QueueStates(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, s := range states {
		if s.Name == q && (s.Size > 0 || s.GlobalLimit > 0 || s.Rate.N > 0) {
			return nil
		}
		if s.Name != q {
			names = append(names, s.Name)
		}
	}
	subscribed, err := a.subscribers(ctx, q)
	if err != nil || subscribed > 0 {
		return err
	}
	known := "none"
	if len(names) > 0 {
		known = strings.Join(names, ", ")
	}
	a.warnf("queue %q has no job and no live node subscribes to it; known queues: %s", q, known)
	return nil
}

// subscribers counts the live nodes (of any runtime) that fetch from queue q.
func (a *app) subscribers(ctx context.Context, q string) (int, error) {
	ps, err := a.view().Processes(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		if slices.Contains(p.Queues, q) {
			n++
		}
	}
	return n, nil
}

// queueExists reports whether queue q is known to the namespace (listed, or holding jobs).
func queueExists(ctx context.Context, api *exq.API, q string) (bool, int64, error) {
	size, err := api.QueueSize(ctx, q)
	if err != nil || size > 0 {
		return size > 0, size, err
	}
	qs, err := api.Queues(ctx)
	return slices.Contains(qs, q), 0, err
}
