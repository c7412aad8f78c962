// Command bench measures exq against asynq, gocraft/work, go-workers2, River (on Postgres, in
// a database of its own: -pg) and a raw go-redis baseline on one Redis, side by side: single
// and concurrent enqueue, batch enqueue, draining a pre-filled queue, pickup latency of idle
// workers, latency under a steady load (-modes loaded), pickup of jobs pushed without a wake-up
// (-modes foreign), and a soak of exq's memory. See ../docs/benchmarks.md. Besides the raw go-redis baseline (one job
// per round trip), raw-batched is the bare ceiling of exq's own job model (lib_rawbatched.go).
//
//	go run . -redis 127.0.0.1:6421 [-n 20000] [-reps 3] [-out results.md] [-modes ...] [-libs ...]
//	go run . -redis 127.0.0.1:6421 -smoke   # every mode and library, tiny N, a few seconds
//	go run . -redis 127.0.0.1:6421 -modes process -libs exq,raw-batched -min-ratio 0.8   # CI's ratio check
//
// Each library uses a Redis DB of its own (-db and the four after it), flushed before every
// run: point it at a private redis-server.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

type config struct {
	addr          string
	n             int
	reps          int
	out           string
	modes         map[string]bool
	libs          map[string]bool
	dbBase        int
	tuned         bool
	smoke         bool
	soakN         int
	callers       []int
	batches       []int
	concs         []int
	latJobs       int
	every         time.Duration
	idle          time.Duration
	latencyWait   time.Duration
	timeout       time.Duration
	cpuprofile    string
	profConc      int
	profN         int
	loadedRate    float64       // loaded mode: jobs/s to offer; 0 = half of exq's measured maximum
	loadedFor     time.Duration // loaded mode: how long to enqueue
	loadedConc    int           // loaded mode: worker concurrency (and of the probe drain)
	loadedProbe   int           // loaded mode: jobs in the drain that measures exq's maximum
	foreignJobs   int           // foreign mode: jobs per pusher
	foreignGapMin time.Duration // foreign mode: shortest gap between pushes
	foreignGapMax time.Duration // foreign mode: longest gap
	foreignIdle   time.Duration // foreign mode: idle-cost window (0: not measured)
	pg            string        // postgres:// URL of a database to create River's own database from; "" = no River
	requirePG     bool          // fail when River cannot run (CI)
	minRatio      float64       // process mode: fail when exq's best rate is below this × raw-batched's best
	args          []string      // the command line, for the report
}

var allModes = []string{"enqueue", "batch", "process", "latency", "loaded", "foreign", "soak"}

type bench struct {
	cfg     config
	targets []*target
	mu      sync.Mutex
	admins  map[int]*redis.Client
	failed  []string // runs that failed, for the exit code
	exqFail bool
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, cfg))
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c config
	var modes, libs, callers, batches, concs string
	fs.StringVar(&c.addr, "redis", "", "host:port of a private redis-server (required); its DBs -db … -db+4 are flushed")
	fs.IntVar(&c.n, "n", 20000, "jobs per run")
	fs.IntVar(&c.reps, "reps", 3, "repetitions of every run; the tables show medians and min–max")
	fs.StringVar(&c.out, "out", "", "also write the markdown report to this file")
	fs.StringVar(&modes, "modes", "enqueue,batch,process,latency", "modes to run: "+strings.Join(allModes, ",")+" (soak also needs -soak N)")
	fs.StringVar(&libs, "libs", strings.Join(libOrder, ","), "libraries to run: "+strings.Join(libOrder, ","))
	fs.IntVar(&c.dbBase, "db", 8, "first Redis DB; library k uses DB db+k (exq, asynq, gocraft, goworkers2, raw; raw-batched shares raw's)")
	fs.BoolVar(&c.tuned, "tuned", true, "also run the tuned variant of every peer")
	fs.BoolVar(&c.smoke, "smoke", false, "every mode and library with tiny sizes (n 200, 1 rep, soak 2000, loaded 1 s); exits non-zero if exq or a raw baseline fails")
	fs.IntVar(&c.soakN, "soak", 0, "jobs for the soak mode (exq only; 0 = no soak)")
	fs.StringVar(&callers, "callers", "1,50", "enqueue mode: caller goroutines")
	fs.StringVar(&batches, "batch", "100,500", "batch mode: jobs per EnqueueAll / pipeline")
	fs.StringVar(&concs, "conc", "50,200", "process mode: worker concurrency")
	fs.IntVar(&c.latJobs, "latency-jobs", 2000, "latency mode: jobs enqueued one at a time")
	fs.DurationVar(&c.every, "latency-every", 2*time.Millisecond, "latency mode: time between enqueues")
	fs.DurationVar(&c.idle, "idle", 1500*time.Millisecond, "latency mode: how long the workers sit idle before the first job")
	fs.DurationVar(&c.latencyWait, "latency-wait", 15*time.Second, "latency mode: how long to wait for the last jobs after the last enqueue")
	fs.Float64Var(&c.loadedRate, "loaded-rate", 0, "loaded mode: jobs/s to enqueue steadily (0 = half of exq's maximum process rate, measured first)")
	fs.DurationVar(&c.loadedFor, "loaded-for", 10*time.Second, "loaded mode: how long to enqueue at that rate")
	fs.IntVar(&c.loadedConc, "loaded-conc", 50, "loaded mode: worker concurrency")
	fs.IntVar(&c.loadedProbe, "loaded-probe-n", 100000, "loaded mode: jobs in the drain that measures exq's maximum process rate (unless process mode measured it at -loaded-conc)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "process mode: give up on a drain after this long")
	fs.StringVar(&c.pg, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "River: Postgres URL of an existing database; the bench creates a database of its own there and drops it at the end (\"\" = skip River)")
	fs.BoolVar(&c.requirePG, "require-pg", false, "fail, instead of skipping River, when Postgres is not reachable")
	fs.IntVar(&c.foreignJobs, "foreign-jobs", 25, "foreign mode: jobs per pusher, pushed one at a time")
	fs.DurationVar(&c.foreignGapMin, "foreign-gap-min", 200*time.Millisecond, "foreign mode: shortest random gap between pushes")
	fs.DurationVar(&c.foreignGapMax, "foreign-gap-max", 1500*time.Millisecond, "foreign mode: longest random gap between pushes")
	fs.DurationVar(&c.foreignIdle, "foreign-idle", 8*time.Second, "foreign mode: how long to count an idle node's Redis commands and connections (0 = not at all)")
	fs.Float64Var(&c.minRatio, "min-ratio", 0, "process mode: exit 1 when exq's best rate of the reps falls below this × raw-batched's best at any concurrency (0 = no check)")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "after the runs, drain -n jobs once more through exq under the CPU profiler and write the profile here")
	fs.IntVar(&c.profConc, "profile-conc", 50, "concurrency of the profiled exq drain")
	fs.IntVar(&c.profN, "profile-n", 200000, "jobs in the profiled exq drain (enough samples for pprof)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.args = args
	if c.addr == "" {
		return c, fmt.Errorf("-redis host:port is required (start a private redis-server; see ../docs/benchmarks.md)")
	}
	set := func(name, list string, valid []string) (map[string]bool, error) {
		m := map[string]bool{}
		for _, s := range strings.Split(list, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if !slices.Contains(valid, s) {
				return nil, fmt.Errorf("-%s: unknown %q (want some of %s)", name, s, strings.Join(valid, ","))
			}
			m[s] = true
		}
		return m, nil
	}
	ints := func(name, list string) ([]int, error) {
		var out []int
		for _, s := range strings.Split(list, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("-%s: %q is not a positive number", name, s)
			}
			out = append(out, v)
		}
		return out, nil
	}
	var err error
	if c.modes, err = set("modes", modes, allModes); err != nil {
		return c, err
	}
	if c.libs, err = set("libs", libs, libOrder); err != nil {
		return c, err
	}
	if c.callers, err = ints("callers", callers); err != nil {
		return c, err
	}
	if c.batches, err = ints("batch", batches); err != nil {
		return c, err
	}
	if c.concs, err = ints("conc", concs); err != nil {
		return c, err
	}
	if c.smoke {
		c.n, c.reps, c.latJobs = 200, 1, 50
		c.idle, c.latencyWait, c.timeout = 200*time.Millisecond, 15*time.Second, time.Minute
		c.loadedFor, c.loadedProbe = time.Second, 2000
		c.foreignJobs, c.foreignGapMin, c.foreignGapMax, c.foreignIdle = 3, 10*time.Millisecond, 50*time.Millisecond, 0
		if c.soakN == 0 {
			c.soakN = 2000
		}
		for _, m := range allModes {
			c.modes[m] = true
		}
	}
	if c.soakN > 0 {
		c.modes["soak"] = true
	}
	if c.n <= 0 || c.reps <= 0 || c.latJobs <= 0 {
		return c, fmt.Errorf("-n, -reps and -latency-jobs must be positive")
	}
	if c.loadedRate < 0 || c.loadedFor <= 0 || c.loadedConc <= 0 || c.loadedProbe <= 0 {
		return c, fmt.Errorf("-loaded-rate must not be negative; -loaded-for, -loaded-conc and -loaded-probe-n must be positive")
	}
	if c.dbBase < 0 {
		return c, fmt.Errorf("-db must not be negative")
	}
	return c, nil
}

func run(ctx context.Context, cfg config) int {
	b := &bench{cfg: cfg, admins: map[int]*redis.Client{}}
	b.targets = allTargets(cfg.addr, cfg.dbBase, cfg.libs, cfg.tuned)
	if cfg.libs[pgLib] {
		env, err := b.openPG(ctx)
		switch {
		case err != nil && cfg.requirePG:
			fmt.Fprintln(os.Stderr, "bench: river:", err)
			return 2
		case err != nil:
			logf("river: SKIPPED: %v", err)
		default:
			defer env.close()
			for _, t := range riverTargets(env) {
				if t.Knob == "" || cfg.tuned {
					b.targets = append(b.targets, t)
				}
			}
		}
	}
	var enqTargets []*target // the enqueue modes skip raw-batched: its producer is raw's
	for _, t := range b.targets {
		if !t.NoEnqueue {
			enqTargets = append(enqTargets, t)
		}
	}
	for _, lib := range libOrder {
		if cfg.libs[lib] && lib != pgLib {
			if err := b.claimDB(ctx, cfg.dbBase+libIndex(lib)); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				return 2
			}
		}
	}
	rep := &report{cfg: cfg, started: time.Now(), machine: machineInfo(ctx, b)}
	logf("machine: %s", rep.machine.oneLine())
	rep.load = loadAvg()
	noise0 := b.noiseNow(ctx)

	if cfg.modes["enqueue"] {
		for _, callers := range cfg.callers {
			sec := rep.section(fmt.Sprintf("enqueue-%d", callers), fmt.Sprintf("Enqueue, %d caller%s (jobs/s, higher is better)", callers, plural(callers)), "jobs/s")
			b.repeat(ctx, sec, enqTargets, func(t *target) (float64, error) { return b.runEnqueue(ctx, t, cfg.n, callers) })
		}
	}
	if cfg.modes["batch"] {
		sec := rep.section("batch", "Batch enqueue, 1 caller (jobs/s, higher is better)", "jobs/s")
		var ts []*target
		for _, t := range b.targets {
			if t.Lib == "exq" || t.Lib == "raw" {
				ts = append(ts, t)
			}
		}
		for _, size := range cfg.batches {
			var rows []*target
			for _, t := range ts {
				label := fmt.Sprintf("exq EnqueueAll ×%d", size)
				if t.Lib == "raw" {
					label = fmt.Sprintf("raw pipelined LPUSH ×%d", size)
				}
				rows = append(rows, &target{Name: label, Lib: t.Lib, DB: t.DB, newProducer: t.newProducer, newConsumer: t.newConsumer})
			}
			b.repeat(ctx, sec, rows, func(t *target) (float64, error) { return b.runBatch(ctx, t, cfg.n, size) })
		}
	}
	if cfg.modes["process"] {
		for _, c := range cfg.concs {
			sec := rep.section(fmt.Sprintf("process-%d", c), fmt.Sprintf("Process %d pre-filled no-op jobs, concurrency %d (jobs/s, higher is better)", cfg.n, c), "jobs/s")
			sec.cpu = true
			b.repeatProcess(ctx, sec, c)
		}
	}
	if cfg.modes["latency"] {
		b.repeatLatency(ctx, rep)
	}
	if cfg.modes["loaded"] {
		b.repeatLoaded(ctx, rep)
	}
	if cfg.modes["foreign"] && cfg.libs["exq"] {
		rep.foreign = b.runForeign(ctx)
	}
	if cfg.modes["soak"] && cfg.soakN > 0 && cfg.libs["exq"] {
		t := b.exqTarget()
		logf("soak: %d jobs through exq", cfg.soakN)
		res, err := b.runSoak(ctx, t, cfg.soakN)
		rep.soak = &res
		if err != nil {
			rep.soakErr = err
			b.fail(t, "soak", err)
		}
	}
	if cfg.cpuprofile != "" && cfg.libs["exq"] {
		if err := b.profile(ctx); err != nil {
			b.fail(b.exqTarget(), "profile", err)
		}
	}
	ratioFailed := cfg.minRatio > 0 && !b.checkRatio(rep)
	rep.elapsed = time.Since(rep.started)
	rep.foreignCPU = b.foreign(ctx, noise0)
	md := rep.markdown()
	fmt.Print(md)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		logf("wrote %s", cfg.out)
	}
	for _, lib := range libOrder {
		if cfg.libs[lib] && lib != pgLib {
			_ = b.flush(context.Background(), cfg.dbBase+libIndex(lib))
		}
	}
	if ctx.Err() != nil {
		return 130
	}
	if ratioFailed {
		return 1
	}
	if len(b.failed) > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d run(s) failed:\n  %s\n", len(b.failed), strings.Join(b.failed, "\n  "))
		if b.exqFail || !cfg.smoke {
			return 1
		}
		fmt.Fprintln(os.Stderr, "bench: smoke: only peers failed; exiting 0")
	}
	return 0
}

// repeat runs f for every target, reps times, interleaved (rep 1 of every target, then rep 2…)
// so that drift on a shared machine spreads over all of them.
func (b *bench) repeat(ctx context.Context, sec *section, ts []*target, f func(*target) (float64, error)) {
	rows := make([]*row, len(ts))
	for i, t := range ts {
		rows[i] = sec.row(t)
	}
	for r := 0; r < b.cfg.reps && ctx.Err() == nil; r++ {
		for i, t := range ts {
			if ctx.Err() != nil || rows[i].err != nil {
				continue
			}
			n0, t0 := b.noiseNow(ctx), time.Now()
			v, err := f(t)
			others := b.foreign(ctx, n0) / time.Since(t0).Seconds()
			if err != nil {
				rows[i].err = err
				b.fail(t, sec.key, err)
				continue
			}
			rows[i].vals = append(rows[i].vals, v)
			logf("%-12s rep %d/%d  %-28s %10.0f %s  (other processes: %.0f %% of a core)", sec.key, r+1, b.cfg.reps, t.Name, v, sec.unit, 100*others)
		}
	}
}

func (b *bench) repeatProcess(ctx context.Context, sec *section, c int) {
	rows := make([]*row, len(b.targets))
	for i, t := range b.targets {
		rows[i] = sec.row(t)
	}
	for r := 0; r < b.cfg.reps && ctx.Err() == nil; r++ {
		for i, t := range b.targets {
			if ctx.Err() != nil || rows[i].err != nil {
				continue
			}
			n0, t0 := b.noiseNow(ctx), time.Now()
			res, err := b.runProcess(ctx, t, b.cfg.n, c, nil)
			others := b.foreign(ctx, n0) / time.Since(t0).Seconds()
			if err != nil {
				rows[i].err = err
				b.fail(t, sec.key, err)
				continue
			}
			rows[i].vals = append(rows[i].vals, res.rate)
			rows[i].clientUS = append(rows[i].clientUS, res.clientUS)
			rows[i].redisUS = append(rows[i].redisUS, res.redisUS)
			logf("%-12s rep %d/%d  %-28s %10.0f jobs/s  (CPU per job: client %.1f µs, redis %.1f µs; other processes: %.0f %% of a core)",
				sec.key, r+1, b.cfg.reps, t.Name, res.rate, res.clientUS, res.redisUS, 100*others)
		}
	}
}

func (b *bench) repeatLatency(ctx context.Context, rep *report) {
	rows := make([]*latRow, len(b.targets))
	for i, t := range b.targets {
		rows[i] = &latRow{t: t}
		rep.latency = append(rep.latency, rows[i])
	}
	for r := 0; r < b.cfg.reps && ctx.Err() == nil; r++ {
		for i, t := range b.targets {
			if ctx.Err() != nil || rows[i].err != nil {
				continue
			}
			n0, t0 := b.noiseNow(ctx), time.Now()
			res, err := b.runLatency(ctx, t, b.cfg.latJobs)
			others := b.foreign(ctx, n0) / time.Since(t0).Seconds()
			if err != nil {
				rows[i].err = err
				b.fail(t, "latency", err)
				continue
			}
			rows[i].runs = append(rows[i].runs, res)
			logf("%-12s rep %d/%d  %-28s p50 %s  p90 %s  p99 %s  max %s  (other processes: %.0f %% of a core)", "latency", r+1, b.cfg.reps, t.Name,
				fmtDur(res.pct(0.5)), fmtDur(res.pct(0.9)), fmtDur(res.pct(0.99)), fmtDur(res.pct(1)), 100*others)
		}
	}
}

// repeatLoaded runs the latency-under-load mode: it settles the rate (-loaded-rate, else half
// of exq's maximum process rate at -loaded-conc: the median of process mode if it ran at that
// concurrency, else one drain of -loaded-probe-n jobs), then runs every target that can take
// it (exq and raw-batched: the same offered load for both) reps times, interleaved. The peers
// and the one-job-per-round-trip raw baseline drain far below half of exq's rate, so their
// backlog would only grow; they sit this mode out.
func (b *bench) repeatLoaded(ctx context.Context, rep *report) {
	ld := &loadedReport{conc: b.cfg.loadedConc, dur: b.cfg.loadedFor}
	rep.loaded = ld
	switch {
	case b.cfg.loadedRate > 0:
		ld.rate, ld.source = b.cfg.loadedRate, "-loaded-rate"
	case b.exqTarget() == nil:
		ld.err = fmt.Errorf("needs exq in -libs to measure its maximum rate, or -loaded-rate")
		return
	default:
		if s := rep.find(fmt.Sprintf("process-%d", b.cfg.loadedConc)); s != nil {
			if _, v := libRow(s.rows, "exq"); !math.IsNaN(v) {
				ld.max, ld.source = v, fmt.Sprintf("median of process mode, exq at c=%d, N=%d", b.cfg.loadedConc, b.cfg.n)
			}
		}
		if ld.max == 0 {
			res, err := b.runProcess(ctx, b.exqTarget(), b.cfg.loadedProbe, b.cfg.loadedConc, nil)
			if err != nil {
				ld.err = fmt.Errorf("measuring exq's maximum process rate: %w", err)
				b.fail(b.exqTarget(), "loaded", ld.err)
				return
			}
			ld.max, ld.source = res.rate, fmt.Sprintf("one drain of %d pre-filled jobs by exq at c=%d", b.cfg.loadedProbe, b.cfg.loadedConc)
		}
		ld.rate = ld.max / 2
		logf("loaded: exq's maximum process rate %.0f jobs/s (%s); offering %.0f jobs/s", ld.max, ld.source, ld.rate)
	}
	var ts []*target
	for _, t := range b.targets {
		if t.Lib == "exq" || t.Lib == "raw-batched" {
			ts = append(ts, t)
			ld.rows = append(ld.rows, &latRow{t: t})
		}
	}
	for r := 0; r < b.cfg.reps && ctx.Err() == nil; r++ {
		for i, t := range ts {
			row := ld.rows[i]
			if ctx.Err() != nil || row.err != nil {
				continue
			}
			n0, t0 := b.noiseNow(ctx), time.Now()
			res, err := b.runLoaded(ctx, t, ld.rate, b.cfg.loadedFor, b.cfg.loadedConc)
			others := b.foreign(ctx, n0) / time.Since(t0).Seconds()
			if err != nil {
				row.err = err
				b.fail(t, "loaded", err)
				continue
			}
			row.runs = append(row.runs, res)
			logf("%-12s rep %d/%d  %-28s offered %.0f, enqueued at %.0f jobs/s; p50 %s  p90 %s  p99 %s  max %s; client CPU %.1f µs/job  (other processes: %.0f %% of a core)",
				"loaded", r+1, b.cfg.reps, t.Name, ld.rate, res.achieved, fmtDur(res.pct(0.5)), fmtDur(res.pct(0.9)), fmtDur(res.pct(0.99)), fmtDur(res.pct(1)),
				res.clientUS, 100*others)
		}
	}
}

// profile drains -n jobs through exq once more with the CPU profiler on for the timed part.
func (b *bench) profile(ctx context.Context) error {
	f, err := os.Create(b.cfg.cpuprofile)
	if err != nil {
		return err
	}
	res, err := b.runProcess(ctx, b.exqTarget(), b.cfg.profN, b.cfg.profConc, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		logf("profile: exq drained %d jobs at concurrency %d at %.0f jobs/s under the profiler; wrote %s (go tool pprof -top %s)",
			b.cfg.profN, b.cfg.profConc, res.rate, b.cfg.cpuprofile, b.cfg.cpuprofile)
	}
	return err
}

func (b *bench) exqTarget() *target {
	for _, t := range b.targets {
		if t.Lib == "exq" {
			return t
		}
	}
	return nil
}

func (b *bench) fail(t *target, mode string, err error) {
	logf("FAILED %s %s: %v", mode, t.Name, err)
	b.failed = append(b.failed, fmt.Sprintf("%s %s: %v", mode, t.Name, err))
	if t.Lib == "exq" || t.Lib == "raw" || t.Lib == "raw-batched" {
		b.exqFail = true
	}
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// machine describes where the numbers come from.
type machine struct {
	cpus       int
	gomaxprocs int
	cpuModel   string
	goVersion  string
	redis      string
	libs       string
}

func (m machine) oneLine() string {
	return fmt.Sprintf("%d CPUs (%s), GOMAXPROCS %d, %s, Redis %s", m.cpus, m.cpuModel, m.gomaxprocs, m.goVersion, m.redis)
}

func machineInfo(ctx context.Context, b *bench) machine {
	m := machine{cpus: runtime.NumCPU(), gomaxprocs: runtime.GOMAXPROCS(0), goVersion: runtime.Version(), redis: b.redisVersion(ctx), cpuModel: "unknown"}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpuModel = strings.TrimSpace(v)
				break
			}
		}
	}
	m.libs = moduleVersions()
	return m
}
