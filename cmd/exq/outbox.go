package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq"
)

// outboxPlugin is the program `exq outbox relay` runs: the relay needs a Postgres driver,
// which this module does not carry (module exqpg builds it).
const outboxPlugin = "exq-outbox"

// staleReport is how old a relay's report may be before status calls it stale: relays report
// every few seconds (exqpg's StatusInterval, 5 s by default).
const staleReport = time.Minute

func (a *app) outboxCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "outbox",
		Short: "The Postgres outbox of transactional enqueues (module exqpg)",
		Long: `Jobs enqueued inside a Postgres transaction (module exqpg) wait in an outbox table until a
relay pushes them to Redis. "status" shows what the relays last reported; "relay" runs one.`,
	}
	c.AddCommand(a.outboxStatusCmd(), a.outboxRelayCmd())
	return c
}

func (a *app) outboxStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Backlog of the outbox, as its relays last reported it",
		Long: `How many committed jobs wait in the outbox table, how long the oldest had waited, and how many
rows a relay refused, as the relays last wrote it to Redis: every few seconds, soon after a
relay drains its backlog, and as a relay stops. OLDEST AT REPORT (--json: oldest_age_ms) is the
oldest waiting row's age when the report was made, not now: a drained row waits no longer. A
report older than a minute is marked stale: no relay runs, or none reaches Redis.`,
		Args: nArgs(0, 0, "no argument"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := a.oneNamespace("outbox status"); err != nil {
				return err
			}
			if err := a.connect(ctx, false); err != nil {
				return err
			}
			s, err := a.api.Outbox(ctx)
			if err != nil {
				return err
			}
			for _, m := range s.Invalid {
				a.warnf("%s (left out)", m)
			}
			stale := s.Reported && time.Since(s.UpdatedAt) > staleReport
			if a.json {
				return a.printJSON(toOutboxJSON(s, stale))
			}
			if !s.Reported {
				_, err := fmt.Fprintf(a.stdout, "no outbox relay has reported in namespace %q (exq outbox relay runs one)\n", a.nss[0])
				return err
			}
			reported := ago(s.UpdatedAt) + " ago"
			if s.UpdatedAt.IsZero() {
				reported = "at an unreadable time"
			}
			if stale {
				reported += " (stale: is a relay running?)"
			}
			oldest := "-"
			if !s.OldestAt.IsZero() && !s.UpdatedAt.IsZero() {
				oldest = ageText(oldestAge(s))
			}
			return a.table([]string{"BACKLOG", "OLDEST AT REPORT", "FAILED", "REPORTED"},
				[][]any{{s.Backlog, oldest, s.Failed, reported}})
		},
	}
}

// oldestAge is the oldest waiting row's age when the relays reported: what the table and
// --json (oldest_age_ms) both show. Zero when none waited.
func oldestAge(s exq.OutboxStatus) time.Duration {
	if s.OldestAt.IsZero() {
		return 0
	}
	return max(s.UpdatedAt.Sub(s.OldestAt), 0)
}

// ageText is an age rounded as ago rounds it.
func ageText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < 24*time.Hour:
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%dd%s", int(d/(24*time.Hour)), (d % (24 * time.Hour)).Round(time.Minute))
}

func (a *app) outboxRelayCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "relay [ARGS...]",
		Short: "Run an outbox relay (the exq-outbox program, module exqpg)",
		Long: `Runs ` + outboxPlugin + ` relay ARGS..., found on $PATH, until interrupted: the relay that moves
committed outbox rows from Postgres to Redis. Every argument goes to it unchanged (see
exq outbox relay --help); $EXQ_REDIS_URL and $EXQ_NAMESPACE reach it through the environment.
Install it with: go install github.com/exqgo/exq/exqpg/cmd/exq-outbox@latest`,
		DisableFlagParsing: true,
		Annotations:        map[string]string{untimed: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runPlugin(cmd.Context(), append([]string{"relay"}, args...))
		},
	}
}

// runPlugin runs exq-outbox with args, its streams connected to ours, and passes an interrupt
// on to it so that it ends its round cleanly.
func (a *app) runPlugin(ctx context.Context, args []string) error {
	path, err := exec.LookPath(outboxPlugin)
	if err != nil {
		return fmt.Errorf("the %s program is not on $PATH (%v); install it with:\n"+
			"  go install github.com/exqgo/exq/exqpg/cmd/exq-outbox@latest", outboxPlugin, err)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.rawStdout, a.rawStderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && ctx.Err() == nil {
		return pluginExit{code: exit.ExitCode()}
	}
	if ctx.Err() != nil {
		return nil // interrupted: the relay stopped as asked
	}
	return err
}

// pluginExit is the plugin's own failure: it has said why on stderr; exq exits with its code.
type pluginExit struct{ code int }

func (p pluginExit) Error() string {
	return fmt.Sprintf("%s exited with status %d", outboxPlugin, p.code)
}
