package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exqgo/exq"
	"github.com/redis/go-redis/v9"
)

// The foreign mode measures how soon an idle exq node (default PollTimeout, three queues)
// starts a job pushed by exq's own client, by a plain LPUSH + SADD queues as Sidekiq's client
// writes it, and by Sidekiq's real client (Ruby, ../interop/ruby/push_paced.rb; skipped without
// ruby and the Sidekiq gems), one job at a time at random gaps. Each pickup is the worker's
// start minus the job's enqueued_at (the pusher's clock: same machine). It runs twice: with
// exq's defaults (the blocking idle wait on), and with DisableBlockingIdleWait (polling alone:
// what a node did before), and measures each node's idle cost first: Redis commands per second
// (INFO commandstats, in-script commands counted) and connections (INFO clients) while idle.

// foreignRun is one node variant's results.
type foreignRun struct {
	name     string
	cmdsSec  float64
	conns    int64 // connected clients with the node idle, minus before it started
	blocked  int   // of those, connections blocked in BLMOVE (CLIENT LIST cmd=blmove)
	cpuPct   float64
	pushers  []string
	waits    map[string][]time.Duration // pusher → sorted pickups
	skipped  map[string]string          // pusher → why it did not run
	firstErr error
}

type foreignReport struct {
	jobs       int
	gapMin     time.Duration
	gapMax     time.Duration
	idleWindow time.Duration
	runs       []*foreignRun
}

func (b *bench) runForeign(ctx context.Context) *foreignReport {
	fr := &foreignReport{jobs: b.cfg.foreignJobs, gapMin: b.cfg.foreignGapMin, gapMax: b.cfg.foreignGapMax, idleWindow: b.cfg.foreignIdle}
	for _, v := range []struct {
		name    string
		disable bool
	}{{"exq (defaults: blocking idle wait)", false}, {"exq, DisableBlockingIdleWait (polling alone, as before)", true}} {
		if ctx.Err() != nil {
			break
		}
		r := b.foreignVariant(ctx, v.name, v.disable)
		fr.runs = append(fr.runs, r)
		if r.firstErr != nil {
			b.fail(b.exqTarget(), "foreign", r.firstErr)
		}
	}
	return fr
}

func (b *bench) foreignVariant(ctx context.Context, name string, disable bool) *foreignRun {
	r := &foreignRun{name: name, waits: map[string][]time.Duration{}, skipped: map[string]string{}}
	t := b.exqTarget()
	if err := b.reset(ctx, t); err != nil {
		r.firstErr = err
		return r
	}
	admin := b.admin(t.DB)
	conns0 := connectedClients(ctx, admin)
	url := fmt.Sprintf("redis://%s/%d", b.cfg.addr, t.DB)
	var mu sync.Mutex
	got := map[string]time.Duration{}
	node, err := exq.Start(ctx, exq.Options{RedisURL: url, Namespace: exqNS, Logger: discardLogger, DisableBlockingIdleWait: disable,
		Queues: []exq.Queue{{Name: queueName, Concurrency: 10}, {Name: "a", Concurrency: 10}, {Name: "b", Concurrency: 10}},
		Workers: map[string]exq.Worker{jobClass: exq.WorkerFunc(func(_ context.Context, j *exq.Job) error {
			d := time.Since(j.EnqueuedAt)
			mu.Lock()
			if _, ok := got[j.JID]; !ok {
				got[j.JID] = d
			}
			mu.Unlock()
			return nil
		})}})
	if err != nil {
		r.firstErr = fmt.Errorf("start: %w", err)
		return r
	}
	defer func() { _ = node.Stop(context.Background()) }()

	// Idle cost, once the poll back-off reached its cap (6.3 s with the default PollTimeout).
	if b.cfg.foreignIdle > 0 {
		if !sleepCtx(ctx, 6500*time.Millisecond) {
			return r
		}
		_ = admin.ConfigResetStat(ctx).Err()
		cpu0 := selfCPU()
		if !sleepCtx(ctx, b.cfg.foreignIdle) {
			return r
		}
		r.cpuPct = 100 * (selfCPU() - cpu0).Seconds() / b.cfg.foreignIdle.Seconds()
		r.cmdsSec = float64(commandCalls(ctx, admin)) / b.cfg.foreignIdle.Seconds()
		r.conns = connectedClients(ctx, admin) - conns0
		if list, err := admin.ClientList(ctx).Result(); err == nil {
			r.blocked = strings.Count(list, " cmd=blmove ")
		}
	}

	for _, p := range []struct {
		name string
		push func(ctx context.Context, gap func() time.Duration) ([]string, error)
	}{
		{"exq's client (wake-up published)", func(ctx context.Context, gap func() time.Duration) ([]string, error) {
			return pushEach(ctx, b.cfg.foreignJobs, gap, func(i int) (string, error) {
				return node.Enqueue(ctx, queueName, jobClass, []any{i, 0})
			})
		}},
		{"plain LPUSH + SADD queues (as Sidekiq's client writes)", func(ctx context.Context, gap func() time.Duration) ([]string, error) {
			return pushEach(ctx, b.cfg.foreignJobs, gap, func(i int) (string, error) {
				jid := fmt.Sprintf("plain%024d", i)
				raw := fmt.Sprintf(`{"class":%q,"args":[%d,0],"queue":%q,"jid":%q,"retry":true,"enqueued_at":%.6f}`,
					jobClass, i, queueName, jid, float64(time.Now().UnixMicro())/1e6)
				_, err := admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.SAdd(ctx, exqNS+":queues", queueName)
					p.LPush(ctx, exqNS+":queue:"+queueName, raw)
					return nil
				})
				return jid, err
			})
		}},
		{"Sidekiq 6.4's client (Ruby)", func(ctx context.Context, _ func() time.Duration) ([]string, error) {
			return b.sidekiqPush(ctx, url)
		}},
	} {
		if ctx.Err() != nil {
			break
		}
		r.pushers = append(r.pushers, p.name)
		mu.Lock()
		clear(got)
		mu.Unlock()
		gap := func() time.Duration {
			return b.cfg.foreignGapMin + time.Duration(rand.Int64N(int64(b.cfg.foreignGapMax-b.cfg.foreignGapMin)+1))
		}
		jids, err := p.push(ctx, gap)
		if err != nil {
			if skip, ok := err.(skipError); ok {
				r.skipped[p.name] = string(skip)
				logf("foreign: %s: %s: SKIPPED: %s", name, p.name, skip)
				continue
			}
			r.firstErr = fmt.Errorf("%s: %w", p.name, err)
			return r
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			mu.Lock()
			n := 0
			for _, jid := range jids {
				if _, ok := got[jid]; ok {
					n++
				}
			}
			mu.Unlock()
			if n == len(jids) {
				break
			}
			if time.Now().After(deadline) {
				r.firstErr = fmt.Errorf("%s: %d of %d jobs did not start within 15 s of the last push", p.name, len(jids)-n, len(jids))
				return r
			}
			time.Sleep(5 * time.Millisecond)
		}
		mu.Lock()
		ws := make([]time.Duration, 0, len(jids))
		for _, jid := range jids {
			ws = append(ws, got[jid])
		}
		mu.Unlock()
		slices.Sort(ws)
		r.waits[p.name] = ws
		logf("foreign: %-55s %-55s p50 %s  p99 %s  max %s", name, p.name, fmtDur(pctOf(ws, 0.5)), fmtDur(pctOf(ws, 0.99)), fmtDur(ws[len(ws)-1]))
	}
	return r
}

// skipError says why a pusher cannot run here.
type skipError string

func (s skipError) Error() string { return string(s) }

// pushEach pushes n jobs, sleeping gap() before each, and returns their jids.
func pushEach(ctx context.Context, n int, gap func() time.Duration, push func(i int) (string, error)) ([]string, error) {
	var jids []string
	for i := range n {
		if !sleepCtx(ctx, gap()) {
			return nil, ctx.Err()
		}
		jid, err := push(i)
		if err != nil {
			return nil, err
		}
		jids = append(jids, jid)
	}
	return jids, nil
}

// sidekiqPush runs interop/ruby/push_paced.rb against the exq target's DB and namespace.
func (b *bench) sidekiqPush(ctx context.Context, url string) ([]string, error) {
	script, err := filepath.Abs(filepath.Join("..", "interop", "ruby", "push_paced.rb"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(script); err != nil {
		return nil, skipError("no " + script)
	}
	if _, err := exec.LookPath("ruby"); err != nil {
		return nil, skipError("ruby is not installed")
	}
	cmd := exec.CommandContext(ctx, "ruby", script)
	cmd.Env = append(os.Environ(), "REDIS_URL="+url, "REDIS_NAMESPACE="+exqNS, "QUEUE="+queueName, "CLASS="+jobClass,
		"COUNT="+strconv.Itoa(b.cfg.foreignJobs),
		"GAP_MIN="+strconv.FormatFloat(b.cfg.foreignGapMin.Seconds(), 'f', 3, 64),
		"GAP_MAX="+strconv.FormatFloat(b.cfg.foreignGapMax.Seconds(), 'f', 3, 64))
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && strings.Contains(string(ee.Stderr), "cannot load such file") {
			return nil, skipError("the Sidekiq gems are not installed (apt-get install ruby-sidekiq ruby-redis-namespace)")
		}
		return nil, fmt.Errorf("push_paced.rb: %w", err)
	}
	var jids []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			jids = append(jids, s)
		}
	}
	if len(jids) != b.cfg.foreignJobs {
		return nil, fmt.Errorf("push_paced.rb printed %d jids for %d jobs", len(jids), b.cfg.foreignJobs)
	}
	return jids, nil
}

// pctOf is the nearest-rank percentile of sorted durations.
func pctOf(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	k := int(p*float64(len(s)) + 0.999999)
	return s[min(max(k-1, 0), len(s)-1)]
}

// commandCalls sums INFO commandstats' calls, leaving out INFO and CONFIG (the bench's own).
func commandCalls(ctx context.Context, c *redis.Client) int {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return -1
	}
	total := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || name == "info" || strings.HasPrefix(name, "config") || !strings.HasPrefix(rest, "calls=") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.Atoi(calls)
		total += n
	}
	return total
}

func connectedClients(ctx context.Context, c *redis.Client) int64 {
	info, err := c.Info(ctx, "clients").Result()
	if err != nil {
		return -1
	}
	n, _ := strconv.ParseInt(infoFields(info)["connected_clients"], 10, 64)
	return n
}

// markdown is the foreign mode's section.
func (fr *foreignReport) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("## Pickup of foreign pushes by an idle exq node (%d jobs per pusher, one at a time, random gaps of %s–%s; enqueued_at → worker start; lower is better)\n\n",
		fr.jobs, fr.gapMin, fr.gapMax)
	w("| consumer | pushed by | median | p99 | max |\n|---|---|---:|---:|---:|\n")
	for _, r := range fr.runs {
		for _, p := range r.pushers {
			if why, ok := r.skipped[p]; ok {
				w("| %s | %s | skipped: %s | | |\n", r.name, p, why)
				continue
			}
			ws, ok := r.waits[p]
			if !ok {
				continue
			}
			w("| %s | %s | %s | %s | %s |\n", r.name, p, fmtDur(pctOf(ws, 0.5)), fmtDur(pctOf(ws, 0.99)), fmtDur(ws[len(ws)-1]))
		}
		if r.firstErr != nil {
			w("| %s | failed: %s | | | |\n", r.name, oneLine(r.firstErr))
		}
	}
	if fr.idleWindow > 0 {
		w("\nIdle cost of each node (three queues, after 6.5 s idle, over %s): \n\n| consumer | Redis commands/s (in-script counted) | connections (of them blocked in BLMOVE) | this process's CPU |\n|---|---:|---:|---:|\n", fr.idleWindow)
		for _, r := range fr.runs {
			w("| %s | %.1f | %d (%d) | %.2f %% of a core |\n", r.name, r.cmdsSec, r.conns, r.blocked, r.cpuPct)
		}
	}
	w("\n")
	return b.String()
}
