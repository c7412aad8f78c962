package main

import (
	"fmt"
	"math"
	"os/exec"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"
)

// row is one target's values in one throughput section, one per repetition.
type row struct {
	t                 *target
	vals              []float64
	clientUS, redisUS []float64
	err               error
}

type section struct {
	key, title, unit string
	cpu              bool
	rows             []*row
}

func (s *section) row(t *target) *row {
	r := &row{t: t}
	s.rows = append(s.rows, r)
	return r
}

// latRow is one target's latency runs.
type latRow struct {
	t    *target
	runs []latencyResult
	err  error
}

// pctMedian is the median over the runs of percentile p, with its min and max.
func (l *latRow) pctMedian(p float64) (med, lo, hi float64) {
	var v []float64
	for _, r := range l.runs {
		v = append(v, float64(r.pct(p)))
	}
	return median(v), minOf(v), maxOf(v)
}

type report struct {
	cfg      config
	started  time.Time
	elapsed  time.Duration
	machine  machine
	sections []*section
	latency  []*latRow
	soak     *soakResult
	soakErr  error
	loaded   *loadedReport
	foreign  *foreignReport

	load       string  // load average when the run started
	foreignCPU float64 // CPU seconds other processes used during the run
}

// loadedReport is the latency-under-load mode: the rate offered and each target's runs.
type loadedReport struct {
	conc   int
	dur    time.Duration
	rate   float64 // offered, jobs/s
	max    float64 // exq's maximum process rate it was derived from; 0 if given by flag
	source string  // where rate (or max) came from
	rows   []*latRow
	err    error
}

// Targets of the latency-under-load mode (issue 17).
const (
	loadedP50Target = time.Millisecond
	loadedP99Target = 5 * time.Millisecond
)

func (r *report) section(key, title, unit string) *section {
	s := &section{key: key, title: title, unit: unit}
	r.sections = append(r.sections, s)
	return s
}

func (r *report) find(key string) *section {
	for _, s := range r.sections {
		if s.key == key {
			return s
		}
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return slices.Min(v)
}

func maxOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return slices.Max(v)
}

func fmtRate(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	// Group thousands for readability: 123 456.
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	case d < 10*time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func fmtNsF(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmtDur(time.Duration(v))
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// best returns the peer row with the highest median.
func best(rows []*row, pick func(*row) bool) (*row, float64) {
	var br *row
	bv := math.NaN()
	for _, r := range rows {
		if !pick(r) || len(r.vals) == 0 {
			continue
		}
		if m := median(r.vals); br == nil || m > bv {
			br, bv = r, m
		}
	}
	return br, bv
}

func libRow(rows []*row, lib string) (*row, float64) {
	return best(rows, func(r *row) bool { return r.t.Lib == lib })
}

func isPeer(r *row) bool { return r.t.Peer }

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	cfg := r.cfg
	w("# exq benchmark results\n\n")
	w("- Date: %s; whole run %s\n", r.started.UTC().Format("2006-01-02 15:04 UTC"), r.elapsed.Round(time.Second))
	w("- Machine: %s\n", r.machine.oneLine())
	w("- Libraries: %s\n", r.machine.libs)
	w("- Noise: load average %s at the start; other processes (not this one, not its redis-server) used about %.1f CPU-s during the run, %.0f %% of one core on average (a rough reading from /proc/stat that only shows heavy noise)\n",
		r.load, r.foreignCPU, 100*r.foreignCPU/r.elapsed.Seconds())
	w("- Command: `go run . %s`\n", strings.Join(cmdline(cfg), " "))
	w("- N = %d jobs per run, %d repetition%s, interleaved; each cell is the median with the spread (min–max) across repetitions.\n", cfg.n, cfg.reps, plural(cfg.reps))
	w("- Every library has a Redis DB of its own (DB %d + k), flushed before every run. Jobs carry two integers (i, and the enqueue time in ns) and the workers decode both the way each library's documentation teaches (exq: `job.Bind(&i, &at)`; the raw baselines: a fixed-shape scan of class, jid and args) and only count them. exq runs at its defaults (stats, retries, heartbeat, scheduler, busy list all on).\n", cfg.dbBase)
	if cfg.smoke {
		w("- **Smoke run**: sizes are tiny; the numbers mean nothing.\n")
	}
	w("\n")

	var knobs []string
	seen := map[string]bool{}
	for _, s := range r.sections {
		for _, rw := range s.rows {
			if rw.t.Knob != "" && !seen[rw.t.Name] {
				seen[rw.t.Name] = true
				knobs = append(knobs, fmt.Sprintf("- **%s**: %s", rw.t.Name, rw.t.Knob))
			}
		}
	}
	if len(knobs) > 0 {
		w("Tuned variants (each peer at its defaults and with the knob that is obviously its bottleneck changed):\n\n%s\n\n", strings.Join(knobs, "\n"))
	}

	for _, s := range r.sections {
		w("## %s\n\n", s.title)
		if s.cpu {
			w("| target | median | min–max | client CPU µs/job | redis CPU µs/job |\n|---|---:|---:|---:|---:|\n")
		} else {
			w("| target | median | min–max |\n|---|---:|---:|\n")
		}
		for _, rw := range s.rows {
			if rw.err != nil && len(rw.vals) == 0 {
				w("| %s | failed: %s | |%s\n", rw.t.Name, oneLine(rw.err), strings.Repeat(" |", boolInt(s.cpu)*2))
				continue
			}
			spread := fmt.Sprintf("%s – %s", fmtRate(minOf(rw.vals)), fmtRate(maxOf(rw.vals)))
			if s.cpu {
				redisUS := fmt.Sprintf("%.1f", median(rw.redisUS))
				if rw.t.reset != nil {
					redisUS = "— (Postgres)" // its store is not Redis
				}
				w("| %s | %s | %s | %.1f | %s |\n", rw.t.Name, fmtRate(median(rw.vals)), spread, median(rw.clientUS), redisUS)
			} else {
				w("| %s | %s | %s |\n", rw.t.Name, fmtRate(median(rw.vals)), spread)
			}
		}
		w("\n")
		switch {
		case s.key == "batch":
			for _, size := range cfg.batches {
				e := findRow(s.rows, fmt.Sprintf("exq EnqueueAll ×%d", size))
				raw := findRow(s.rows, fmt.Sprintf("raw pipelined LPUSH ×%d", size))
				if e != nil && raw != nil {
					w("- exq EnqueueAll ×%d / raw pipelined LPUSH ×%d: **%s**\n", size, size, ratio(median(e.vals), median(raw.vals)))
				}
			}
		default:
			_, ev := libRow(s.rows, "exq")
			if br, bv := best(s.rows, isPeer); br != nil {
				w("- exq / best peer (%s): **%s**\n", br.t.Name, ratio(ev, bv))
			}
			if _, rv := libRow(s.rows, "raw"); !math.IsNaN(rv) {
				w("- exq / raw go-redis (same mode): **%s**\n", ratio(ev, rv))
			}
			if rb, rv := libRow(s.rows, "raw-batched"); !math.IsNaN(rv) {
				w("- exq / raw-batched (the bare ceiling of exq's model, same mode): **%s**\n", ratio(ev, rv))
				if er, _ := libRow(s.rows, "exq"); er != nil && s.cpu {
					w("- client CPU per job, exq / raw-batched: %.1f / %.1f µs = %s; redis CPU per job: %.1f / %.1f µs = %s\n",
						median(er.clientUS), median(rb.clientUS), ratio(median(er.clientUS), median(rb.clientUS)),
						median(er.redisUS), median(rb.redisUS), ratio(median(er.redisUS), median(rb.redisUS)))
				}
			}
			if strings.HasPrefix(s.key, "enqueue-") && s.key != "enqueue-1" {
				if s1 := r.find("enqueue-1"); s1 != nil {
					if _, rv1 := libRow(s1.rows, "raw"); !math.IsNaN(rv1) {
						w("- exq / raw single-caller LPUSH: %s\n", ratio(ev, rv1))
					}
				}
			}
		}
		w("\n")
	}

	if len(r.latency) > 0 {
		w("## Idle pickup latency: workers idle for %s, then 1 job every %s, %d jobs (enqueue call → worker start; lower is better)\n\n", cfg.idle, cfg.every, cfg.latJobs)
		w("| target | p50 | p90 | p99 | max | p50 min–max | p99 min–max |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, l := range r.latency {
			if l.err != nil && len(l.runs) == 0 {
				w("| %s | failed: %s | | | | | |\n", l.t.Name, oneLine(l.err))
				continue
			}
			p50, p50lo, p50hi := l.pctMedian(0.5)
			p90, _, _ := l.pctMedian(0.9)
			p99, p99lo, p99hi := l.pctMedian(0.99)
			mx, _, _ := l.pctMedian(1)
			w("| %s | %s | %s | %s | %s | %s – %s | %s – %s |\n", l.t.Name, fmtNsF(p50), fmtNsF(p90), fmtNsF(p99), fmtNsF(mx),
				fmtNsF(p50lo), fmtNsF(p50hi), fmtNsF(p99lo), fmtNsF(p99hi))
		}
		w("\n")
		if e := r.latRowOf("exq"); e != nil && len(e.runs) > 0 {
			ep50, _, _ := e.pctMedian(0.5)
			var bp *latRow
			bv := math.Inf(1)
			for _, l := range r.latency {
				if l.t.Peer && len(l.runs) > 0 {
					if v, _, _ := l.pctMedian(0.5); v < bv {
						bp, bv = l, v
					}
				}
			}
			if bp != nil {
				w("- exq p50 / best peer p50 (%s): **%s** (below 1 is better)\n", bp.t.Name, ratio(ep50, bv))
			}
			if raw := r.latRowOf("raw"); raw != nil && len(raw.runs) > 0 {
				rv, _, _ := raw.pctMedian(0.5)
				w("- exq p50 / raw blocking pop p50: %s\n", ratio(ep50, rv))
			}
			if rb := r.latRowOf("raw-batched"); rb != nil && len(rb.runs) > 0 {
				rv, _, _ := rb.pctMedian(0.5)
				w("- exq p50 / raw-batched p50: %s\n", ratio(ep50, rv))
			}
		}
		w("\n")
	}

	if ld := r.loaded; ld != nil {
		w("%s", ld.markdown())
	}

	if r.foreign != nil {
		w("%s", r.foreign.markdown())
	}
	if r.soak != nil {
		w("## Soak: %d no-op jobs through exq (concurrency 50, EnqueueAll batches of 500 while processing, backlog ≤ %d)\n\n", r.soak.n, soakBacklog)
		if r.soakErr != nil {
			w("**Failed:** %s\n\n", oneLine(r.soakErr))
		} else {
			w("Throughput over the soak: %s jobs/s.\n\n", fmtRate(r.soak.rate))
		}
		w("| point | jobs done | time | VmRSS MiB | Go heap in use MiB | goroutines |\n|---|---:|---:|---:|---:|---:|\n")
		for _, s := range r.soak.samples {
			w("| %s | %d | %s | %.1f | %.1f | %d |\n", s.label, s.done, s.at.Round(time.Millisecond), float64(s.rssKB)/1024, float64(s.heapKB)/1024, s.goroutines)
		}
		w("\n")
	}

	w("## Targets of issue 8\n\n")
	w("| target | measured | verdict |\n|---|---|---|\n")
	for _, c := range r.checks() {
		w("| %s | %s | %s |\n", c.what, c.measured, c.verdict)
	}
	w("\n")
	return b.String()
}

type check struct{ what, measured, verdict string }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func (r *report) checks() []check {
	var out []check
	for _, c := range r.cfg.concs {
		s := r.find(fmt.Sprintf("process-%d", c))
		if s == nil {
			continue
		}
		_, ev := libRow(s.rows, "exq")
		br, bv := best(s.rows, isPeer)
		if br == nil || math.IsNaN(ev) {
			continue
		}
		out = append(out, check{fmt.Sprintf("process, c=%d: exq ≥ 3.5× the fastest peer", c),
			fmt.Sprintf("%s (exq %s vs %s %s jobs/s)", ratio(ev, bv), fmtRate(ev), br.t.Name, fmtRate(bv)), verdict(ev >= 3.5*bv)})
	}
	if s := r.find("enqueue-1"); s != nil {
		_, ev := libRow(s.rows, "exq")
		_, rv := libRow(s.rows, "raw")
		if !math.IsNaN(ev) && !math.IsNaN(rv) {
			out = append(out, check{"single-caller enqueue: exq ≥ 0.85× raw LPUSH",
				fmt.Sprintf("%s (exq %s vs raw %s jobs/s)", ratio(ev, rv), fmtRate(ev), fmtRate(rv)), verdict(ev >= 0.85*rv)})
		}
	}
	if s := r.find("batch"); s != nil {
		for _, size := range r.cfg.batches {
			e := findRow(s.rows, fmt.Sprintf("exq EnqueueAll ×%d", size))
			raw := findRow(s.rows, fmt.Sprintf("raw pipelined LPUSH ×%d", size))
			if e == nil || raw == nil || len(e.vals) == 0 || len(raw.vals) == 0 {
				continue
			}
			ev, rv := median(e.vals), median(raw.vals)
			out = append(out, check{fmt.Sprintf("EnqueueAll ×%d ≥ 0.5× raw pipelined LPUSH", size),
				fmt.Sprintf("%s (exq %s vs raw %s jobs/s)", ratio(ev, rv), fmtRate(ev), fmtRate(rv)), verdict(ev >= 0.5*rv)})
		}
	}
	if e := r.latRowOf("exq"); e != nil && len(e.runs) > 0 {
		p50, _, _ := e.pctMedian(0.5)
		p99, _, _ := e.pctMedian(0.99)
		out = append(out, check{"idle pickup: p50 ≤ 0.5 ms", fmtNsF(p50), verdict(p50 <= float64(500*time.Microsecond))})
		out = append(out, check{"idle pickup: p99 ≤ 2 ms", fmtNsF(p99), verdict(p99 <= float64(2*time.Millisecond))})
	}
	if ld := r.loaded; ld != nil {
		for _, l := range ld.rows {
			if l.t.Lib != "exq" || len(l.runs) == 0 {
				continue
			}
			p50, _, _ := l.pctMedian(0.5)
			p99, _, _ := l.pctMedian(0.99)
			at := fmt.Sprintf("%s jobs/s for %s", fmtRate(ld.rate), ld.dur)
			out = append(out, check{fmt.Sprintf("latency under load (issue 17), %s: p50 ≤ %s", at, fmtDur(loadedP50Target)), fmtNsF(p50), verdict(p50 <= float64(loadedP50Target))})
			out = append(out, check{fmt.Sprintf("latency under load (issue 17), %s: p99 ≤ %s", at, fmtDur(loadedP99Target)), fmtNsF(p99), verdict(p99 <= float64(loadedP99Target))})
		}
	}
	if r.soak != nil && r.soakErr == nil {
		var mid, end, start *sample
		for i := range r.soak.samples {
			s := &r.soak.samples[i]
			switch s.label {
			case "start":
				start = s
			case "50 %":
				mid = s
			case "end":
				end = s
			}
		}
		if mid != nil && end != nil && start != nil {
			growth := float64(end.rssKB-mid.rssKB) / float64(mid.rssKB)
			// Flat: the second half adds at most 10 % (or 4 MiB) to RSS, and no goroutines leak.
			ok := (growth <= 0.10 || end.rssKB-mid.rssKB <= 4096) && end.goroutines <= mid.goroutines+10
			out = append(out, check{"RSS flat over the soak (50 % → end: ≤ +10 % or ≤ +4 MiB; goroutines not growing)",
				fmt.Sprintf("RSS %.1f → %.1f → %.1f MiB (start → 50 %% → end, %+.1f %% in the second half); goroutines %d → %d → %d",
					float64(start.rssKB)/1024, float64(mid.rssKB)/1024, float64(end.rssKB)/1024, growth*100,
					start.goroutines, mid.goroutines, end.goroutines), verdict(ok)})
		}
	}
	return out
}

func (r *report) latRowOf(lib string) *latRow {
	for _, l := range r.latency {
		if l.t.Lib == lib {
			return l
		}
	}
	return nil
}

func findRow(rows []*row, name string) *row {
	for _, r := range rows {
		if r.t.Name == name {
			return r
		}
	}
	return nil
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	return strings.ReplaceAll(s, "|", "/")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cmdline is the command line as given.
func cmdline(cfg config) []string {
	out := make([]string, len(cfg.args))
	for i, a := range cfg.args {
		if a == "" || strings.ContainsAny(a, " '\"") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

// moduleVersions names the versions of the libraries compared, and the exq commit.
func moduleVersions() string {
	want := map[string]string{
		"github.com/hibiken/asynq":            "asynq",
		"github.com/gocraft/work":             "gocraft/work",
		"github.com/digitalocean/go-workers2": "go-workers2",
		"github.com/gomodule/redigo":          "redigo",
		"github.com/riverqueue/river":         "river",
		"github.com/jackc/pgx/v5":             "pgx",
		"github.com/redis/go-redis/v9":        "go-redis",
	}
	var parts []string
	if out, err := exec.Command("git", "-C", "..", "describe", "--always", "--dirty").Output(); err == nil {
		parts = append(parts, "exq "+strings.TrimSpace(string(out))+" (this checkout)")
	} else {
		parts = append(parts, "exq (this checkout)")
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if name, ok := want[d.Path]; ok {
				parts = append(parts, name+" "+d.Version)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// markdown is the latency-under-load section.
func (ld *loadedReport) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("## Latency under load: %s jobs/s offered for %s, concurrency %d (enqueue → worker start; lower is better)\n\n", fmtRate(ld.rate), ld.dur, ld.conc)
	if ld.err != nil {
		w("**Not run:** %s\n\n", oneLine(ld.err))
		return b.String()
	}
	if ld.max > 0 {
		w("The offered rate is half of exq's maximum process rate, %s jobs/s (%s). ", fmtRate(ld.max), ld.source)
	} else {
		w("The offered rate is %s. ", ld.source)
	}
	w("One producer enqueues open-loop (job k is due k/rate after the start), each call writing every job due since the previous one "+
		"(exq `EnqueueAll`; raw-batched a pipeline of LPUSHes); each job carries its enqueue time (ns, monotonic) as an arg and the worker "+
		"records enqueue → start. Both targets get the same offered load; the peers and the one-job-per-round-trip raw baseline drain "+
		"below half of exq's rate and sit this mode out. Client CPU covers enqueue and run, from the first enqueue to the last start. "+
		"Targets (issue 17): p50 ≤ %s, p99 ≤ %s.\n\n", fmtDur(loadedP50Target), fmtDur(loadedP99Target))
	w("| target | enqueued jobs/s | p50 | p90 | p99 | max | p50 min–max | p99 min–max | client CPU µs/job | p50 ≤ %s | p99 ≤ %s |\n",
		fmtDur(loadedP50Target), fmtDur(loadedP99Target))
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, l := range ld.rows {
		if l.err != nil && len(l.runs) == 0 {
			w("| %s | failed: %s | | | | | | | | | |\n", l.t.Name, oneLine(l.err))
			continue
		}
		var ach, cpu []float64
		for _, r := range l.runs {
			ach = append(ach, r.achieved)
			cpu = append(cpu, r.clientUS)
		}
		p50, p50lo, p50hi := l.pctMedian(0.5)
		p90, _, _ := l.pctMedian(0.9)
		p99, p99lo, p99hi := l.pctMedian(0.99)
		mx, _, _ := l.pctMedian(1)
		w("| %s | %s | %s | %s | %s | %s | %s – %s | %s – %s | %.1f | %s | %s |\n", l.t.Name, fmtRate(median(ach)),
			fmtNsF(p50), fmtNsF(p90), fmtNsF(p99), fmtNsF(mx), fmtNsF(p50lo), fmtNsF(p50hi), fmtNsF(p99lo), fmtNsF(p99hi), median(cpu),
			verdict(p50 <= float64(loadedP50Target)), verdict(p99 <= float64(loadedP99Target)))
	}
	w("\n")
	for _, l := range ld.rows {
		for _, r := range l.runs {
			if r.achieved < 0.95*ld.rate {
				w("- %s: the producer fell behind (a run enqueued at %s jobs/s of %s offered); its latencies do not include that lag.\n",
					l.t.Name, fmtRate(r.achieved), fmtRate(ld.rate))
				break
			}
		}
	}
	w("\n")
	return b.String()
}

// checkRatio compares, in every process section, exq's rate with raw-batched's rep by rep (the
// reps are interleaved: rep k of exq ran right before rep k of raw-batched, on the same
// machine) and keeps the best of those ratios, so that one rep slowed by another process does
// not decide. It reports false when that best ratio is below cfg.minRatio, or a rate is missing.
func (b *bench) checkRatio(rep *report) bool {
	ok, seen := true, false
	for _, s := range rep.sections {
		if !strings.HasPrefix(s.key, "process-") {
			continue
		}
		seen = true
		er, _ := libRow(s.rows, "exq")
		rr, _ := libRow(s.rows, "raw-batched")
		if er == nil || rr == nil || len(er.vals) == 0 || len(rr.vals) == 0 {
			logf("ratio check %s: FAILED: needs exq and raw-batched rates (-libs exq,raw-batched)", s.key)
			ok = false
			continue
		}
		var ratios []string
		best := 0.0
		for k := 0; k < min(len(er.vals), len(rr.vals)); k++ {
			r := er.vals[k] / rr.vals[k]
			best = max(best, r)
			ratios = append(ratios, fmt.Sprintf("%.2f", r))
		}
		verdict := "ok"
		if best < b.cfg.minRatio {
			verdict, ok = "FAILED", false
		}
		logf("ratio check %s: exq / raw-batched per rep %s; best %.2f× (minimum %.2f×): %s",
			s.key, strings.Join(ratios, ", "), best, b.cfg.minRatio, verdict)
	}
	if !seen {
		logf("ratio check: FAILED: -min-ratio needs -modes process")
		return false
	}
	return ok
}
