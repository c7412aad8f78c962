package main

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

func (a *app) enqueueCmd() *cobra.Command {
	var in time.Duration
	var at, jid string
	var maxRetries int
	c := &cobra.Command{
		Use:   "enqueue QUEUE CLASS [ARGS]",
		Short: "Enqueue a job; ARGS is a JSON array (default [])",
		Long: `Enqueue a job of CLASS on QUEUE with ARGS, a JSON array (default []), now or later (--in,
--at; an --at that has passed runs it now, as the library's EnqueueAt does). Bad input (ARGS not
an array, a CLASS that looks like JSON args, a negative --in or --max-retries) exits 2 and writes
nothing. A warning on stderr says when no live node subscribes to QUEUE or it is paused.`,
		Example: `  exq enqueue mail MyApp.SendEmail '[42,"welcome"]' --max-retries 3
  exq enqueue mail MyApp.SendEmail '[42,"tips"]' --in 24h`,
		Args:              nArgs(2, 3, "enqueue QUEUE CLASS [ARGS]"),
		ValidArgsFunction: a.complete(queueNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := a.oneNamespace("enqueue"); err != nil {
				return err
			}
			q, class, raw := args[0], args[1], json.RawMessage("[]")
			if err := checkClassArg(class, "QUEUE CLASS [ARGS]"); err != nil {
				return err
			}
			if len(args) == 3 {
				if err := checkArgsJSON("ARGS", args[2]); err != nil {
					return err
				}
				raw = json.RawMessage(args[2])
			}
			var opts []exq.EnqueueOption
			if cmd.Flags().Changed("max-retries") {
				if maxRetries < 0 {
					return usagef("--max-retries must be 0 or more, got %d", maxRetries)
				}
				opts = append(opts, exq.MaxRetries(maxRetries))
			}
			if jid != "" {
				opts = append(opts, exq.JID(jid))
			}
			var due time.Time
			switch {
			case cmd.Flags().Changed("in") && at != "":
				return usagef("give --in or --at, not both")
			case cmd.Flags().Changed("in"):
				if in <= 0 {
					return usagef("--in must be positive, got %s", in)
				}
				due = time.Now().Add(in)
			case at != "":
				t, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return usagef("--at %q: want an RFC 3339 time like 2030-01-02T15:04:05Z", at)
				}
				if t.After(time.Now()) {
					due = t
				} else {
					a.warnf("--at %s has passed: the job runs now", at)
				}
			}
			// Refuse bad input before connecting, so nothing is ever written for it.
			if _, err := exq.PrepareJob(time.Now(), exq.JobSpec{Queue: q, Class: class, Args: raw, At: due, Options: opts}); err != nil {
				return err
			}
			if err := a.connect(ctx, false); err != nil {
				return err
			}
			id, err := a.enqueue(ctx, q, class, raw, due, opts)
			if err != nil {
				return err
			}
			if err := a.warnNoSubscriber(ctx, q); err != nil {
				return err
			}
			if due.IsZero() {
				return a.say(map[string]any{"jid": id, "queue": q}, "enqueued %s to %s", id, q)
			}
			return a.say(map[string]any{"jid": id, "queue": q, "at": ts(due)},
				"scheduled %s on %s at %s", id, q, due.UTC().Format(time.RFC3339))
		},
	}
	c.Flags().DurationVar(&in, "in", 0, "run it after this long (e.g. 10m)")
	c.Flags().StringVar(&at, "at", "", "run it at this RFC 3339 time (e.g. 2030-01-02T15:04:05Z)")
	c.Flags().IntVar(&maxRetries, "max-retries", 0, "retries it gets (default: the client's, 25)")
	c.Flags().StringVar(&jid, "jid", "", "its jid (default: a new UUID)")
	return c
}

func (a *app) enqueue(ctx context.Context, q, class string, raw json.RawMessage, due time.Time, opts []exq.EnqueueOption) (string, error) {
	cl, err := exq.NewClient(ctx, a.opts)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	if due.IsZero() {
		return cl.Enqueue(ctx, q, class, raw, opts...)
	}
	return cl.EnqueueAt(ctx, q, class, due, raw, opts...)
}

// warnNoSubscriber warns when queue q is paused or no live node fetches from it: the job
// waits, and a typo in the queue name would otherwise pass silently.
func (a *app) warnNoSubscriber(ctx context.Context, q string) error {
	n, err := a.subscribers(ctx, q)
	if err != nil {
		return err
	}
	if n == 0 {
		a.warnf("no live node subscribes to queue %q: the job waits until one does (see exq processes)", q)
	}
	paused, err := a.api.PausedQueues(ctx)
	if err != nil {
		return err
	}
	for _, p := range paused {
		if p == q {
			a.warnf("queue %q is paused: exq nodes run the job once it is resumed (exq queues resume %s)", q, q)
		}
	}
	return nil
}

// checkArgsJSON checks that s, given as name, is a JSON array.
func checkArgsJSON(name, s string) error {
	if !json.Valid([]byte(s)) {
		return usagef("%s is not valid JSON: %s", name, s)
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		return usagef("%s must be a JSON array, like '[42,\"welcome\"]'; got %s", name, s)
	}
	return nil
}

// checkClassArg refuses a CLASS that cannot be one: empty is left to the library, but JSON
// (args given where the class goes, an argument forgotten before it) or space is a command line
// in the wrong order, which would otherwise create a job nothing runs.
func checkClassArg(class, order string) error {
	if t := strings.TrimSpace(class); t != "" && strings.ContainsAny(t[:1], `[{"`) {
		return usagef("CLASS %q looks like JSON args: the order is %s", class, order)
	}
	if strings.ContainsFunc(class, unicode.IsSpace) {
		return usagef("CLASS %q contains a space: the order is %s", class, order)
	}
	return nil
}
