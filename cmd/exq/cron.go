package main

import (
	"context"
	"encoding/json"
	"flag"
	"strings"
	"time"

	"github.com/exqgo/exq"
)

const (
	cronAddUsage = "exq cron add NAME SPEC QUEUE CLASS ['<json array>'] [--timezone ZONE] [--description TEXT] [--disabled]"
	cronUsage    = "exq cron [list] | exq cron history|enqueue|enable|disable|delete NAME | " + cronAddUsage
)

// cronCmd runs the periodic-job subcommands; with none (or only flags) it lists the schedules.
// Periodic jobs live in one namespace: run refuses a list of shards before this is called.
func cronCmd(ctx context.Context, args []string, open opener) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		return cronListCmd(ctx, args, open)
	case "history":
		return cronHistoryCmd(ctx, args, open)
	case "enqueue":
		return cronEnqueueCmd(ctx, args, open)
	case "enable", "disable":
		return cronStatusCmd(ctx, sub == "enable", args, open)
	case "delete":
		return cronDeleteCmd(ctx, args, open)
	case "add":
		return cronAddCmd(ctx, args, open)
	}
	return usagef("unknown cron command %q (want list, history, enqueue, enable, disable, delete or add); usage: %s", sub, cronUsage)
}

// cronName parses the single NAME argument of a cron subcommand and connects.
func cronName(sub string, args []string, open opener) (string, *cli, error) {
	pos, err := parseArgs(flag.NewFlagSet("cron "+sub, flag.ContinueOnError), args, 1, 1, "exq cron "+sub+" NAME")
	if err != nil {
		return "", nil, err
	}
	c, err := open.open()
	if err != nil {
		return "", nil, err
	}
	return pos[0], c, nil
}

// cronTime is t as the tables show it: RFC 3339 in UTC, or "-" when there is none.
func cronTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// utcState is s with its times in UTC, as the JSON output gives every time.
func utcState(s exq.PeriodicState) exq.PeriodicState {
	if !s.LastEnqueued.IsZero() {
		s.LastEnqueued = s.LastEnqueued.UTC()
	}
	if !s.Next.IsZero() {
		s.Next = s.Next.UTC()
	}
	return s
}

func cronListCmd(ctx context.Context, args []string, open opener) error {
	if _, err := parseArgs(flag.NewFlagSet("cron list", flag.ContinueOnError), args, 0, 0, "exq cron [list]"); err != nil {
		return err
	}
	c, err := open.open()
	if err != nil {
		return err
	}
	states, err := c.api.PeriodicJobs(ctx) // sorted by name
	if err != nil {
		return err
	}
	if c.json {
		for i := range states {
			states[i] = utcState(states[i])
		}
		return c.printJSON(states)
	}
	problems := false
	for _, s := range states {
		problems = problems || s.Problem != ""
	}
	header := []string{"NAME", "SPEC", "QUEUE", "CLASS", "STATUS", "LAST", "NEXT"}
	if problems {
		header = append(header, "PROBLEM")
	}
	rows := make([][]any, len(states))
	for i, s := range states {
		status := "disabled"
		if s.Enabled {
			status = "enabled"
		}
		rows[i] = []any{s.Name, s.Spec, s.Queue, s.Class, status, cronTime(s.LastEnqueued), cronTime(s.Next)}
		if problems {
			rows[i] = append(rows[i], cut(s.Problem, 60))
		}
	}
	return c.table(header, rows)
}

func cronHistoryCmd(ctx context.Context, args []string, open opener) error {
	name, c, err := cronName("history", args, open)
	if err != nil {
		return err
	}
	// PeriodicHistory lists nothing for an unknown name: say it is not found instead.
	if _, err := c.api.PeriodicJob(ctx, name); err != nil {
		return err
	}
	runs, err := c.api.PeriodicHistory(ctx, name) // newest first
	if err != nil {
		return err
	}
	if c.json {
		for i := range runs {
			if !runs[i].Enqueued.IsZero() {
				runs[i].Enqueued = runs[i].Enqueued.UTC()
			}
		}
		return c.printJSON(runs)
	}
	rows := make([][]any, len(runs))
	for i, r := range runs {
		rows[i] = []any{r.JID, cronTime(r.Enqueued)}
	}
	return c.table([]string{"JID", "ENQUEUED"}, rows)
}

func cronEnqueueCmd(ctx context.Context, args []string, open opener) error {
	name, c, err := cronName("enqueue", args, open)
	if err != nil {
		return err
	}
	jid, err := c.api.EnqueuePeriodicNow(ctx, name)
	if err != nil {
		return err
	}
	return c.say(map[string]any{"name": name, "jid": jid}, "enqueued %s from periodic job %s", jid, name)
}

func cronStatusCmd(ctx context.Context, enable bool, args []string, open opener) error {
	sub := "disable"
	if enable {
		sub = "enable"
	}
	name, c, err := cronName(sub, args, open)
	if err != nil {
		return err
	}
	if enable {
		err = c.api.EnablePeriodic(ctx, name)
	} else {
		err = c.api.DisablePeriodic(ctx, name)
	}
	if err != nil {
		return err
	}
	return c.say(map[string]any{"name": name, "enabled": enable}, "%sd periodic job %s", sub, name)
}

func cronDeleteCmd(ctx context.Context, args []string, open opener) error {
	name, c, err := cronName("delete", args, open)
	if err != nil {
		return err
	}
	if err := c.api.DeletePeriodic(ctx, name); err != nil {
		return err
	}
	return c.say(map[string]any{"name": name, "deleted": true}, "deleted periodic job %s", name)
}

func cronAddCmd(ctx context.Context, args []string, open opener) error {
	fs := flag.NewFlagSet("cron add", flag.ContinueOnError)
	timezone := fs.String("timezone", "", "")
	description := fs.String("description", "", "")
	disabled := fs.Bool("disabled", false, "")
	pos, err := parseArgs(fs, args, 4, 5, cronAddUsage)
	if err != nil {
		return err
	}
	raw := json.RawMessage("[]")
	if len(pos) == 5 {
		raw = json.RawMessage(pos[4])
		var list []json.RawMessage
		if !json.Valid(raw) {
			return usagef("ARGS is not valid JSON: %s", pos[4])
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return usagef("ARGS must be a JSON array, like '[42,\"welcome\"]'; got %s", pos[4])
		}
	}
	p := exq.PeriodicJob{Name: pos[0], Spec: pos[1], Queue: pos[2], Class: pos[3], Args: raw,
		Timezone: *timezone, Description: *description, Disabled: *disabled}
	c, err := open.open()
	if err != nil {
		return err
	}
	// AddPeriodic checks p before writing: invalid input (ErrInvalidPeriodic, exit 2) writes nothing.
	if err := c.api.AddPeriodic(ctx, p); err != nil {
		return err
	}
	st, err := c.api.PeriodicJob(ctx, p.Name)
	if err != nil {
		return err
	}
	next := "disabled"
	if st.Enabled {
		next = "next at " + cronTime(st.Next)
	}
	return c.say(utcState(st), "added periodic job %s (%s, %s)", st.Name, st.Spec, next)
}
