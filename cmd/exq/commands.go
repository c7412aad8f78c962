package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/exqgo/exq"
)

// opener connects to Redis; commands call it only after their input is known to be valid, so
// bad input never touches Redis.
type opener func() (*cli, error)

type command struct {
	parse func(ctx context.Context, args []string, open opener) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"stats":     {statsCmd},
		"queues":    {queuesCmd},
		"jobs":      {jobsCmd},
		"retries":   {setCmd(exq.RetrySet)},
		"scheduled": {setCmd(exq.ScheduledSet)},
		"dead":      {setCmd(exq.DeadSet)},
		"retry":     {retryCmd},
		"delete":    {deleteCmd},
		"enqueue":   {enqueueCmd},
		"processes": {processesCmd},
		"busy":      {busyCmd},
		"quiet":     {signalCmd("TSTP")},
		"stop":      {signalCmd("TERM")},
		"cancel":    {cancelCmd},
	}
}

// parseArgs parses flags anywhere among the positional args and checks their number.
func parseArgs(fs *flag.FlagSet, args []string, minPos, maxPos int, usage string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usagef("%v; usage: %s", err, usage)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) < minPos || len(pos) > maxPos {
		return nil, usagef("usage: %s", usage)
	}
	return pos, nil
}

// openBare checks that a command got no arguments and connects.
func openBare(name string, args []string, open opener) (*cli, error) {
	if _, err := parseArgs(flag.NewFlagSet(name, flag.ContinueOnError), args, 0, 0, "exq "+name); err != nil {
		return nil, err
	}
	return open()
}

func parseSet(s string) (exq.Set, error) {
	switch s {
	case "dead", "morgue":
		return exq.DeadSet, nil
	case "retry", "retries":
		return exq.RetrySet, nil
	case "schedule", "scheduled":
		return exq.ScheduledSet, nil
	}
	return "", usagef("unknown set %q (want dead, retry or schedule)", s)
}

func statsCmd(ctx context.Context, args []string, open opener) error {
	c, err := openBare("stats", args, open)
	if err != nil {
		return err
	}
	o, err := c.api.Overview(ctx)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"processed": o.Processed, "failed": o.Failed, "busy": o.Busy, "processes": o.Processes,
			"enqueued": o.Enqueued, "retries": o.Retries, "scheduled": o.Scheduled, "dead": o.Dead})
	}
	return c.table([]string{"PROCESSED", "FAILED", "BUSY", "PROCESSES", "ENQUEUED", "RETRIES", "SCHEDULED", "DEAD"},
		[][]any{{o.Processed, o.Failed, o.Busy, o.Processes, o.Enqueued, o.Retries, o.Scheduled, o.Dead}})
}

func queuesCmd(ctx context.Context, args []string, open opener) error {
	c, err := openBare("queues", args, open)
	if err != nil {
		return err
	}
	sizes, err := c.api.QueueSizes(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(sizes))
	for q := range sizes {
		names = append(names, q)
	}
	sort.Strings(names)
	if c.json {
		out := make([]map[string]any, len(names))
		for i, q := range names {
			out[i] = map[string]any{"queue": q, "size": sizes[q]}
		}
		return c.printJSON(out)
	}
	rows := make([][]any, len(names))
	for i, q := range names {
		rows[i] = []any{q, sizes[q]}
	}
	return c.table([]string{"QUEUE", "SIZE"}, rows)
}

func pageFlags(fs *flag.FlagSet) (limit, offset *int) {
	return fs.Int("limit", 20, ""), fs.Int("offset", 0, "")
}

func jobsCmd(ctx context.Context, args []string, open opener) error {
	fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
	limit, offset := pageFlags(fs)
	oldest := fs.Bool("oldest", false, "")
	pos, err := parseArgs(fs, args, 1, 1, "exq jobs QUEUE [--limit N] [--offset N] [--oldest]")
	if err != nil {
		return err
	}
	c, err := open()
	if err != nil {
		return err
	}
	recs, err := c.api.Jobs(ctx, pos[0], exq.ListOptions{Offset: *offset, Size: *limit, Reverse: *oldest})
	if err != nil {
		return err
	}
	return c.records(recs, false)
}

func setCmd(s exq.Set) func(context.Context, []string, opener) error {
	return func(ctx context.Context, args []string, open opener) error {
		fs := flag.NewFlagSet(string(s), flag.ContinueOnError)
		limit, offset := pageFlags(fs)
		if _, err := parseArgs(fs, args, 0, 0, "exq retries|scheduled|dead [--limit N] [--offset N]"); err != nil {
			return err
		}
		c, err := open()
		if err != nil {
			return err
		}
		o := exq.ListOptions{Offset: *offset, Size: *limit}
		var recs []exq.JobRecord
		switch s {
		case exq.RetrySet:
			recs, err = c.api.Retries(ctx, o)
		case exq.ScheduledSet:
			recs, err = c.api.Scheduled(ctx, o)
		default:
			recs, err = c.api.Dead(ctx, o)
		}
		if err != nil {
			return err
		}
		return c.records(recs, true)
	}
}

// findAnywhere looks for jid in the given set, or in retry, schedule and dead.
func findAnywhere(ctx context.Context, api *exq.API, jid, set string) (exq.Set, exq.JobRecord, error) {
	sets, err := setsToSearch(set)
	if err != nil {
		return "", exq.JobRecord{}, err
	}
	for _, s := range sets {
		rec, err := api.Find(ctx, s, jid)
		if err == nil {
			return s, rec, nil
		}
		if !errors.Is(err, exq.ErrJobNotFound) {
			return "", exq.JobRecord{}, err
		}
	}
	return "", exq.JobRecord{}, notFound(jid, sets)
}

func retryCmd(ctx context.Context, args []string, open opener) error {
	fs := flag.NewFlagSet("retry", flag.ContinueOnError)
	all := fs.Bool("all", false, "")
	set := fs.String("set", "", "")
	pos, err := parseArgs(fs, args, 0, 1, "exq retry JID [--set S] | exq retry --all [--set dead|retry|schedule]")
	if err != nil {
		return err
	}
	if *all == (len(pos) == 1) {
		return usagef("give either a JID or --all")
	}
	if *all {
		name := *set
		if name == "" {
			name = "dead"
		}
		s, err := parseSet(name)
		if err != nil {
			return err
		}
		c, err := open()
		if err != nil {
			return err
		}
		bar := newProgress(c.errOut, "moving "+string(s)+" jobs to their queues")
		moved, err := c.api.RequeueAll(ctx, s, bar.update)
		bar.done()
		if err != nil {
			return err
		}
		return c.say(map[string]any{"moved": moved, "from": string(s)}, "moved %d jobs from %s to their queues", moved, s)
	}
	c, err := open()
	if err != nil {
		return err
	}
	sets, err := setsToSearch(*set)
	if err != nil {
		return err
	}
	for _, s := range sets {
		rec, err := c.api.RequeueJob(ctx, s, pos[0])
		if errors.Is(err, exq.ErrJobNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		j, _ := rec.Job() // found by its jid, so it decodes
		return c.say(map[string]any{"jid": pos[0], "from": string(s), "queue": j.Queue}, "moved %s from %s to queue %s", pos[0], s, j.Queue)
	}
	return notFound(pos[0], sets)
}

// setsToSearch is the set named by --set, or retry, schedule and dead.
func setsToSearch(set string) ([]exq.Set, error) {
	if set == "" {
		return []exq.Set{exq.RetrySet, exq.ScheduledSet, exq.DeadSet}, nil
	}
	s, err := parseSet(set)
	return []exq.Set{s}, err
}

func notFound(jid string, sets []exq.Set) error {
	return fmt.Errorf("%w: no job %s in %s", exq.ErrJobNotFound, jid, strings.Trim(fmt.Sprint(sets), "[]"))
}

func deleteCmd(ctx context.Context, args []string, open opener) error {
	fs := flag.NewFlagSet("delete", flag.ContinueOnError)
	all := fs.Bool("all", false, "")
	set := fs.String("set", "", "")
	queue := fs.String("queue", "", "")
	pos, err := parseArgs(fs, args, 0, 1, "exq delete JID [--set S] | exq delete --all --set S | exq delete --queue QUEUE")
	if err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{len(pos) == 1, *all, *queue != ""} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		return usagef("give exactly one of a JID, --all --set S, or --queue QUEUE")
	}
	switch {
	case *queue != "":
		c, err := open()
		if err != nil {
			return err
		}
		if err := c.api.RemoveQueue(ctx, *queue); err != nil {
			return err
		}
		return c.say(map[string]any{"queue": *queue}, "deleted queue %s", *queue)
	case *all:
		if *set == "" {
			return usagef("--all needs --set dead|retry|schedule")
		}
		s, err := parseSet(*set)
		if err != nil {
			return err
		}
		c, err := open()
		if err != nil {
			return err
		}
		if err := c.api.Clear(ctx, s); err != nil {
			return err
		}
		return c.say(map[string]any{"cleared": string(s)}, "deleted every job of %s", s)
	}
	c, err := open()
	if err != nil {
		return err
	}
	s, rec, err := findAnywhere(ctx, c.api, pos[0], *set)
	if err != nil {
		return err
	}
	if _, err := c.api.Remove(ctx, s, []string{rec.Raw}, exq.RemoveOptions{}); err != nil {
		return err
	}
	return c.say(map[string]any{"jid": pos[0], "from": string(s)}, "deleted %s from %s", pos[0], s)
}

func enqueueCmd(ctx context.Context, args []string, open opener) error {
	fs := flag.NewFlagSet("enqueue", flag.ContinueOnError)
	in := fs.Duration("in", 0, "")
	at := fs.String("at", "", "")
	maxRetries := fs.Int("max-retries", -1, "")
	jid := fs.String("jid", "", "")
	usage := "exq enqueue QUEUE CLASS '<json array>' [--in 10m | --at RFC3339] [--max-retries N] [--jid JID]"
	pos, err := parseArgs(fs, args, 3, 3, usage)
	if err != nil {
		return err
	}
	raw := json.RawMessage(pos[2])
	var list []json.RawMessage
	if !json.Valid(raw) {
		return usagef("ARGS is not valid JSON: %s", pos[2])
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return usagef("ARGS must be a JSON array, like '[42,\"welcome\"]'; got %s", pos[2])
	}
	var opts []exq.EnqueueOption
	if *maxRetries >= 0 {
		opts = append(opts, exq.MaxRetries(*maxRetries))
	}
	if *jid != "" {
		opts = append(opts, exq.JID(*jid))
	}
	var when time.Time
	switch {
	case *in != 0 && *at != "":
		return usagef("give --in or --at, not both")
	case *at != "":
		if when, err = time.Parse(time.RFC3339, *at); err != nil {
			return usagef("--at wants an RFC 3339 time like 2030-01-02T15:04:05Z: %v", err)
		}
	case *in != 0:
		when = time.Now().Add(*in)
	}
	// Refuse bad input before connecting, so nothing is ever written for it.
	if _, err := exq.PrepareJob(time.Now(), exq.JobSpec{Queue: pos[0], Class: pos[1], Args: raw, At: when, Options: opts}); err != nil {
		return err
	}
	c, err := open()
	if err != nil {
		return err
	}
	enq, err := exq.NewClient(ctx, c.opts)
	if err != nil {
		return err
	}
	defer enq.Close()
	var id string
	if when.IsZero() {
		id, err = enq.Enqueue(ctx, pos[0], pos[1], raw, opts...)
	} else {
		id, err = enq.EnqueueAt(ctx, pos[0], pos[1], when, raw, opts...)
	}
	if err != nil {
		return err
	}
	if when.IsZero() {
		return c.say(map[string]any{"jid": id, "queue": pos[0]}, "enqueued %s to %s", id, pos[0])
	}
	return c.say(map[string]any{"jid": id, "queue": pos[0], "at": when.UTC().Format(time.RFC3339Nano)},
		"scheduled %s on %s at %s", id, pos[0], when.UTC().Format(time.RFC3339))
}

func processesCmd(ctx context.Context, args []string, open opener) error {
	c, err := openBare("processes", args, open)
	if err != nil {
		return err
	}
	ps, err := c.api.Processes(ctx)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(ps)
	}
	rows := make([][]any, len(ps))
	for i, p := range ps {
		rows[i] = []any{p.Identity, p.Hostname, p.PID, strings.Join(p.Queues, ","), p.Concurrency, p.Busy, p.Quiet,
			p.Beat.UTC().Format(time.RFC3339)}
	}
	return c.table([]string{"NODE", "HOST", "PID", "QUEUES", "CONCURRENCY", "BUSY", "QUIET", "BEAT"}, rows)
}

func busyCmd(ctx context.Context, args []string, open opener) error {
	c, err := openBare("busy", args, open)
	if err != nil {
		return err
	}
	busy, err := c.api.BusyJobs(ctx)
	if err != nil {
		return err
	}
	if c.json {
		out := make([]map[string]any, len(busy))
		for i, b := range busy {
			out[i] = map[string]any{"node": b.Node, "queue": b.Queue, "run_at": b.RunAt.UTC().Format(time.RFC3339), "job": jobJSON(b.JobRecord)}
		}
		return c.printJSON(out)
	}
	rows := make([][]any, len(busy))
	for i, b := range busy {
		jid, class := "?", "?"
		if j, err := b.Job(); err == nil {
			jid, class = j.JID, j.Class
		}
		rows[i] = []any{b.Node, b.Queue, jid, class, b.RunAt.UTC().Format(time.RFC3339)}
	}
	return c.table([]string{"NODE", "QUEUE", "JID", "CLASS", "RUN AT"}, rows)
}

func signalCmd(sig string) func(context.Context, []string, opener) error {
	return func(ctx context.Context, args []string, open opener) error {
		pos, err := parseArgs(flag.NewFlagSet("signal", flag.ContinueOnError), args, 1, 1, "exq quiet|stop NODE")
		if err != nil {
			return err
		}
		c, err := open()
		if err != nil {
			return err
		}
		ps, err := c.api.Processes(ctx)
		if err != nil {
			return err
		}
		found := false
		for _, p := range ps {
			found = found || p.Identity == pos[0]
		}
		if !found {
			return fmt.Errorf("no live node %q (see exq processes)", pos[0])
		}
		if err := c.api.SendSignal(ctx, pos[0], sig); err != nil {
			return err
		}
		return c.say(map[string]any{"node": pos[0], "signal": sig}, "sent %s to %s; it acts on it at its next ping (within 5 s)", sig, pos[0])
	}
}

func cancelCmd(ctx context.Context, args []string, open opener) error {
	pos, err := parseArgs(flag.NewFlagSet("cancel", flag.ContinueOnError), args, 1, 1, "exq cancel JID")
	if err != nil {
		return err
	}
	c, err := open()
	if err != nil {
		return err
	}
	node, err := c.api.CancelJob(ctx, pos[0])
	if err != nil {
		return err
	}
	return c.say(map[string]any{"jid": pos[0], "node": node}, "asked %s to cancel %s", node, pos[0])
}
