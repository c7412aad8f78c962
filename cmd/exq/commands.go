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

// opener connects to Redis; commands call open only after their input is known to be valid,
// so bad input never touches Redis. sharded is set when --namespace lists several namespaces.
type opener struct {
	connect func() (*cli, error)
	sharded bool
}

func (o opener) open() (*cli, error) { return o.connect() }

// oneNamespace refuses a mode of a command that works on one namespace only.
func (o opener) oneNamespace(what string) error {
	if o.sharded {
		return usagef("%s works on one namespace; pass a single --namespace (run it once per shard)", what)
	}
	return nil
}

// command is a CLI command. sharded: it works with several namespaces (some of its modes may
// still refuse them with oneNamespace); without it, run refuses several namespaces up front.
type command struct {
	parse   func(ctx context.Context, args []string, open opener) error
	sharded bool
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"stats":     {statsCmd, true},
		"queues":    {queuesCmd, true},
		"jobs":      {jobsCmd, false},
		"retries":   {setCmd(exq.RetrySet), false},
		"scheduled": {setCmd(exq.ScheduledSet), false},
		"dead":      {setCmd(exq.DeadSet), false},
		"retry":     {retryCmd, true},
		"delete":    {deleteCmd, true},
		"enqueue":   {enqueueCmd, false},
		"processes": {processesCmd, true},
		"busy":      {busyCmd, true},
		"quiet":     {signalCmd("TSTP"), true},
		"stop":      {signalCmd("TERM"), true},
		"cancel":    {cancelCmd, true},
		"cron":      {cronCmd, false},
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
	return open.open()
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
	o, err := c.view().Overview(ctx)
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
	pos, err := parseArgs(flag.NewFlagSet("queues", flag.ContinueOnError), args, 0, 2, "exq queues [pause|resume QUEUE]")
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
	case len(pos) == 2 && (pos[0] == "pause" || pos[0] == "resume"):
		return pauseCmd(ctx, pos[0] == "pause", pos[1], open)
	case pos[0] == "pause" || pos[0] == "resume":
		return usagef("usage: exq queues %s QUEUE", pos[0])
	default:
		return usagef("unknown queues command %q (want pause or resume); usage: exq queues [pause|resume QUEUE]", pos[0])
	}
	c, err := open.open()
	if err != nil {
		return err
	}
	states, err := c.view().QueueStates(ctx) // every known, paused or limited queue, sorted
	if err != nil {
		return err
	}
	if c.json {
		out := make([]map[string]any, len(states))
		for i, q := range states {
			out[i] = map[string]any{"queue": q.Name, "size": q.Size, "paused": q.Paused,
				"global_limit": q.GlobalLimit, "in_use": q.InUse,
				"rate": q.Rate.N, "rate_per_ms": q.Rate.Per.Milliseconds(), "started": q.Started}
		}
		return c.printJSON(out)
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
	return c.table([]string{"QUEUE", "SIZE", "STATE", "LIMIT", "RATE", "STARTED"}, rows)
}

// pauseCmd pauses or resumes queue q (in every shard with several namespaces).
func pauseCmd(ctx context.Context, pause bool, q string, open opener) error {
	c, err := open.open()
	if err != nil {
		return err
	}
	type pauser interface {
		PauseQueue(ctx context.Context, q string) error
		ResumeQueue(ctx context.Context, q string) error
	}
	var p pauser = c.api
	if c.sharded != nil {
		p = c.sharded
	}
	verb := "resumed"
	if pause {
		verb = "paused"
		err = p.PauseQueue(ctx, q)
	} else {
		err = p.ResumeQueue(ctx, q)
	}
	if err != nil {
		return err
	}
	return c.say(map[string]any{"queue": q, "paused": pause}, "%s queue %s", verb, q)
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
	c, err := open.open()
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
		c, err := open.open()
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

// findAnywhere looks for jid in the given set, or in retry, schedule and dead, of each shard;
// it returns the set, the job and the index of its shard.
func findAnywhere(ctx context.Context, c *cli, jid, set string) (exq.Set, exq.JobRecord, int, error) {
	sets, err := setsToSearch(set)
	if err != nil {
		return "", exq.JobRecord{}, 0, err
	}
	for _, s := range sets {
		var rec exq.JobRecord
		shard := 0
		if c.sharded != nil {
			rec, shard, err = c.sharded.Find(ctx, s, jid)
		} else {
			rec, err = c.api.Find(ctx, s, jid)
		}
		if err == nil {
			return s, rec, shard, nil
		}
		if !errors.Is(err, exq.ErrJobNotFound) {
			return "", exq.JobRecord{}, 0, err
		}
	}
	return "", exq.JobRecord{}, 0, notFound(jid, sets)
}

// where names the shard a job or node was found in: "" for a single namespace, else
// " (namespace NS)" for the sentence, and it adds "namespace" to v for JSON.
func (c *cli) where(shard int, v map[string]any) string {
	if c.sharded == nil {
		return ""
	}
	v["namespace"] = c.nss[shard]
	return fmt.Sprintf(" (namespace %s)", c.nss[shard])
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
		if err := open.oneNamespace("retry --all"); err != nil {
			return err
		}
		name := *set
		if name == "" {
			name = "dead"
		}
		s, err := parseSet(name)
		if err != nil {
			return err
		}
		c, err := open.open()
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
	c, err := open.open()
	if err != nil {
		return err
	}
	sets, err := setsToSearch(*set)
	if err != nil {
		return err
	}
	for _, s := range sets {
		var rec exq.JobRecord
		shard := 0
		if c.sharded != nil {
			rec, shard, err = c.sharded.RequeueJob(ctx, s, pos[0])
		} else {
			rec, err = c.api.RequeueJob(ctx, s, pos[0])
		}
		if errors.Is(err, exq.ErrJobNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		j, _ := rec.Job() // found by its jid, so it decodes
		v := map[string]any{"jid": pos[0], "from": string(s), "queue": j.Queue}
		in := c.where(shard, v)
		return c.say(v, "moved %s from %s to queue %s%s", pos[0], s, j.Queue, in)
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
		if err := open.oneNamespace("delete --queue"); err != nil {
			return err
		}
		c, err := open.open()
		if err != nil {
			return err
		}
		if err := c.api.RemoveQueue(ctx, *queue); err != nil {
			return err
		}
		return c.say(map[string]any{"queue": *queue}, "deleted queue %s", *queue)
	case *all:
		if err := open.oneNamespace("delete --all"); err != nil {
			return err
		}
		if *set == "" {
			return usagef("--all needs --set dead|retry|schedule")
		}
		s, err := parseSet(*set)
		if err != nil {
			return err
		}
		c, err := open.open()
		if err != nil {
			return err
		}
		if err := c.api.Clear(ctx, s); err != nil {
			return err
		}
		return c.say(map[string]any{"cleared": string(s)}, "deleted every job of %s", s)
	}
	c, err := open.open()
	if err != nil {
		return err
	}
	s, rec, shard, err := findAnywhere(ctx, c, pos[0], *set)
	if err != nil {
		return err
	}
	if _, err := c.shards()[shard].Remove(ctx, s, []string{rec.Raw}, exq.RemoveOptions{}); err != nil {
		return err
	}
	v := map[string]any{"jid": pos[0], "from": string(s)}
	in := c.where(shard, v)
	return c.say(v, "deleted %s from %s%s", pos[0], s, in)
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
	c, err := open.open()
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
	ps, err := c.view().Processes(ctx)
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
	var busy []exq.BusyJob
	for _, api := range c.shards() {
		b, err := api.BusyJobs(ctx)
		if err != nil {
			return err
		}
		busy = append(busy, b...)
	}
	sort.SliceStable(busy, func(i, j int) bool { return busy[i].RunAt.Before(busy[j].RunAt) })
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
		c, err := open.open()
		if err != nil {
			return err
		}
		// With several shards, the node is signalled in every shard where it is live.
		var live []*exq.API
		for _, api := range c.shards() {
			ps, err := api.Processes(ctx)
			if err != nil {
				return err
			}
			for _, p := range ps {
				if p.Identity == pos[0] {
					live = append(live, api)
					break
				}
			}
		}
		if len(live) == 0 {
			return fmt.Errorf("no live node %q (see exq processes)", pos[0])
		}
		for _, api := range live {
			if err := api.SendSignal(ctx, pos[0], sig); err != nil {
				return err
			}
		}
		return c.say(map[string]any{"node": pos[0], "signal": sig}, "sent %s to %s; it acts on it at its next ping (within 5 s)", sig, pos[0])
	}
}

func cancelCmd(ctx context.Context, args []string, open opener) error {
	pos, err := parseArgs(flag.NewFlagSet("cancel", flag.ContinueOnError), args, 1, 1, "exq cancel JID")
	if err != nil {
		return err
	}
	c, err := open.open()
	if err != nil {
		return err
	}
	for i, api := range c.shards() {
		node, err := api.CancelJob(ctx, pos[0])
		if errors.Is(err, exq.ErrJobNotFound) && i < len(c.nss)-1 {
			continue // look in the next shard
		}
		if err != nil {
			return err
		}
		v := map[string]any{"jid": pos[0], "node": node}
		in := c.where(i, v)
		return c.say(v, "asked %s to cancel %s%s", node, pos[0], in)
	}
	return nil // not reached: the last shard returns
}
