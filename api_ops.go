package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// Process is a live node (exq, Exq or Sidekiq) as it registered itself.
type Process struct {
	Identity string
	// Tag names the application (Sidekiq's tag; exq's Options.Tag) and Labels are the
	// process' labels (exq nodes carry "exq-go"); both empty when the node wrote none.
	Tag         string
	Labels      []string
	Hostname    string
	PID         int
	StartedAt   time.Time
	Queues      []string
	Concurrency int
	Busy        int
	Quiet       bool
	Beat        time.Time
	RTT         time.Duration
	RSSKB       int64
	// Version is the version the node wrote: Sidekiq 7 and 8 theirs ("7.3.10"), exq nodes
	// "exq-go" and the module version; empty for Exq and Sidekiq 6.
	Version string
	// Runtime is what runs the node, as its info field tells: "exq" (this library), "Exq"
	// (Elixir; it writes its pid as a string) or "Sidekiq" (no busy and quiet in its info).
	// Only exq nodes act on a CANCEL signal.
	Runtime string
}

// Processes lists the live nodes, after pruning those whose hash expired.
func (a *API) Processes(ctx context.Context) ([]Process, error) {
	ids, hashes, err := a.jq.NodeInfos(ctx)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var out []Process
	for i, id := range ids {
		h := hashes[i]
		if h["info"] == "" {
			continue
		}
		var info wire.NodeInfo
		_ = json.Unmarshal([]byte(h["info"]), &info) // best effort: other runtimes' info varies
		p := Process{Identity: id, Tag: info.Tag, Labels: info.Labels, Hostname: info.Hostname, PID: info.PID, StartedAt: wire.ParseTime(info.StartedAt),
			Queues: info.Queues, Concurrency: info.TotalConcurrency(), Quiet: h["quiet"] == "true", Runtime: wire.Runtime(h["info"]),
			Version: info.Version}
		if c, err := strconv.Atoi(h["concurrency"]); err == nil {
			p.Concurrency = c // Sidekiq 8.1.2 and later (and exq) keep it here; their info may lack it
		}
		p.Busy, _ = strconv.Atoi(h["busy"])
		if p.Busy < 0 {
			p.Busy = 0 // not a count: no node runs fewer than no jobs
		}
		beat, _ := strconv.ParseFloat(h["beat"], 64)
		p.Beat = wire.ParseTime(beat)
		rtt, _ := strconv.ParseInt(h["rtt_us"], 10, 64)
		p.RTT = time.Duration(rtt) * time.Microsecond
		p.RSSKB, _ = strconv.ParseInt(h["rss"], 10, 64)
		out = append(out, p)
	}
	return out, nil
}

// BusyJob is a job running on some node.
type BusyJob struct {
	Node  string
	RunID string
	Queue string
	RunAt time.Time
	// Progress is what the job last reported with SetProgress; nil when it reported none.
	Progress *Progress
	// Iteration is the saved state of an iterable job (Iteration, or Sidekiq 7.3's
	// IterableJob); nil for any other job, or one that has saved none yet.
	Iteration *IterationProgress
	JobRecord
}

// BusyJobs lists the jobs running on every live node: exq, Exq and Sidekiq 6 nodes list them
// in "<identity>:workers", Sidekiq 7 and 8 in "<identity>:work"; both are read.
func (a *API) BusyJobs(ctx context.Context) ([]BusyJob, error) {
	ids, hashes, err := a.jq.NodeBusy(ctx)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var out []BusyJob
	for i, id := range ids {
		for runID, v := range hashes[i] {
			var w struct {
				Queue   string          `json:"queue"`
				Payload json.RawMessage `json:"payload"`
				RunAt   float64         `json:"run_at"`
				Prog    json.RawMessage `json:"progress"`
			}
			if json.Unmarshal([]byte(v), &w) != nil {
				continue
			}
			raw := string(w.Payload)
			var s string
			if json.Unmarshal(w.Payload, &s) == nil {
				raw = s // double-encoded, as Exq and Sidekiq 6, 7 and 8 write it
			}
			b := BusyJob{Node: id, RunID: runID, Queue: w.Queue, RunAt: wire.ParseTime(w.RunAt), JobRecord: record(raw, 0, w.Queue)}
			if p := wire.ParseProgress(w.Prog); p != nil {
				b.Progress = &Progress{Fraction: p.Fraction, Message: p.Message}
			}
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunAt.Before(out[j].RunAt) })
	return out, a.addIterations(ctx, out)
}

// Stats returns the all-time counters.
func (a *API) Stats(ctx context.Context) (Stats, error) {
	c, err := a.jq.Stats(ctx)
	return Stats(c), err
}

// StatsBetween returns the counters of each UTC day from from to to, inclusive (at most 5
// years of days).
func (a *API) StatsBetween(ctx context.Context, from, to time.Time) ([]DayStats, error) {
	from = time.Date(from.UTC().Year(), from.UTC().Month(), from.UTC().Day(), 0, 0, 0, 0, time.UTC)
	to = to.UTC()
	if to.Before(from) {
		return nil, fmt.Errorf("exq: api: stats between %s and %s: the range is empty", from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	if to.Sub(from) > statDayTTL {
		return nil, fmt.Errorf("exq: api: stats between: at most 5 years of days")
	}
	var days []time.Time
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	counts, err := a.jq.DayStats(ctx, days) // one MGET: a 90-day graph is one round trip
	if err != nil {
		return nil, err
	}
	out := make([]DayStats, len(days))
	for i, d := range days {
		out[i] = DayStats{Day: d, Stats: Stats(counts[i])}
	}
	return out, nil
}

// Realtime returns the per-second counters of the last two minutes, oldest first: the
// seconds from 120 s ago to 5 s ahead of the Redis server's clock (nodes of earlier versions
// named them by their own clocks, which may run a little ahead) that have a counter.
func (a *API) Realtime(ctx context.Context) ([]SecondStats, error) {
	// The keys are named by their second, so they are read by name in one MGET: a SCAN for
	// them would cost as much as the whole keyspace, at every refresh of a dashboard.
	now, err := a.now(ctx)
	if err != nil {
		return nil, fmt.Errorf("exq: realtime stats: %w", err)
	}
	now = now.UTC().Truncate(time.Second)
	var seconds []time.Time
	for at := now.Add(-realtimeWindow); !at.After(now.Add(realtimeAhead)); at = at.Add(time.Second) {
		seconds = append(seconds, at)
	}
	counts, present, err := a.jq.SecondStats(ctx, seconds)
	if err != nil {
		return nil, err
	}
	var out []SecondStats
	for i, at := range seconds {
		if present[i] {
			out = append(out, SecondStats{At: at, Stats: Stats(counts[i])})
		}
	}
	return out, nil
}

// The seconds Realtime reads: as long back as the counters live, and a little ahead.
const (
	realtimeWindow = statSecondTTL
	realtimeAhead  = 5 * time.Second
)

// Overview is what a dashboard shows at a glance (Sidekiq's summary line).
type Overview struct {
	Stats
	Busy, Processes                    int
	Enqueued, Retries, Scheduled, Dead int64
}

// Add adds p's counts to o: the overview of two namespaces (shards) together.
// Sums stop at the largest int64 (stored counters are read, never trusted: two near the limit
// must not wrap into a negative total).
func (o *Overview) Add(p Overview) {
	o.Processed = addCount(o.Processed, p.Processed)
	o.Failed = addCount(o.Failed, p.Failed)
	o.Busy = addCount(o.Busy, p.Busy)
	o.Processes = addCount(o.Processes, p.Processes)
	o.Enqueued = addCount(o.Enqueued, p.Enqueued)
	o.Retries = addCount(o.Retries, p.Retries)
	o.Scheduled = addCount(o.Scheduled, p.Scheduled)
	o.Dead = addCount(o.Dead, p.Dead)
}

// addCount is a+b, held at the largest or smallest value instead of wrapping.
func addCount[T int | int64](a, b T) T {
	s := a + b
	switch {
	case b > 0 && s < a:
		return T(maxOf(a))
	case b < 0 && s > a:
		return -T(maxOf(a)) - 1
	}
	return s
}

// maxOf is the largest value of v's type.
func maxOf[T int | int64](v T) int64 {
	if _, ok := any(v).(int); ok {
		return math.MaxInt
	}
	return math.MaxInt64
}

// Overview returns the counters, the live processes and how many jobs are busy, waiting,
// scheduled, retrying and dead.
func (a *API) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	var err error
	if o.Stats, err = a.Stats(ctx); err != nil {
		return o, err
	}
	procs, err := a.Processes(ctx)
	if err != nil {
		return o, err
	}
	o.Processes = len(procs)
	for _, p := range procs {
		o.Busy = addCount(o.Busy, p.Busy)
	}
	sizes, err := a.QueueSizes(ctx)
	if err != nil {
		return o, err
	}
	for _, n := range sizes {
		o.Enqueued = addCount(o.Enqueued, n)
	}
	for _, s := range []struct {
		set Set
		n   *int64
	}{{RetrySet, &o.Retries}, {ScheduledSet, &o.Scheduled}, {DeadSet, &o.Dead}} {
		if *s.n, err = a.Size(ctx, s.set); err != nil {
			return o, err
		}
	}
	return o, nil
}

// RedisInfo is what Sidekiq Web's dashboard shows about the Redis server (INFO).
type RedisInfo struct {
	Version    string        `json:"version"`
	Mode       string        `json:"mode"` // standalone, cluster or sentinel
	Uptime     time.Duration `json:"uptime"`
	Clients    int64         `json:"clients"`
	UsedMemory int64         `json:"used_memory"` // bytes
	PeakMemory int64         `json:"peak_memory"` // bytes
	MaxMemory  int64         `json:"max_memory"`  // bytes; 0 when unlimited
	// Eviction is maxmemory-policy: anything but noeviction may drop jobs when memory is full.
	Eviction string `json:"eviction"`
}

// RedisInfo reads the server's INFO (on a Redis Cluster, of the master that holds the
// namespace). A user whose ACL forbids INFO (-@dangerous) gets Redis' NOPERM error.
func (a *API) RedisInfo(ctx context.Context) (RedisInfo, error) {
	text, err := a.jq.ServerInfo(ctx)
	if err != nil {
		return RedisInfo{}, fmt.Errorf("exq: redis info: %w", err)
	}
	f := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			f[k] = v
		}
	}
	n := func(k string) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	return RedisInfo{Version: f["redis_version"], Mode: f["redis_mode"], Uptime: time.Duration(n("uptime_in_seconds")) * time.Second,
		Clients: n("connected_clients"), UsedMemory: n("used_memory"), PeakMemory: n("used_memory_peak"),
		MaxMemory: n("maxmemory"), Eviction: f["maxmemory_policy"]}, nil
}

// SendSignal pushes a signal to node's signal list (kept 60 s), as Sidekiq's Web UI does. The
// node acts on it at its next ping: "TSTP" (quiet), "TERM" (quiet and stop),
// `CANCEL:{"jid":"…"}` (cancel that running job).
func (a *API) SendSignal(ctx context.Context, node, signal string) error {
	if node == "" || signal == "" {
		return fmt.Errorf("exq: api: send signal: node and signal must not be empty")
	}
	return a.jq.SendSignal(ctx, node, signal)
}

// QuietNode asks node to fetch no more jobs (TSTP).
func (a *API) QuietNode(ctx context.Context, node string) error {
	return a.SendSignal(ctx, node, "TSTP")
}

// StopNode asks node to go quiet and its application to stop it (TERM).
func (a *API) StopNode(ctx context.Context, node string) error {
	return a.SendSignal(ctx, node, "TERM")
}
