// Command costtable turns the output of the feature-cost benchmarks (BenchmarkFeatureCost in
// the exq package, BenchmarkFeatureCostOutbox in exqpg) into the table of docs/benchmarks.md,
// "What each feature costs": per row the client's and the Redis server's CPU per job and their
// ratios to the plain job of the same benchmark run. With -max it is also CI's check of those
// ratios (.ci/run): it fails when a row's best ratio over the repetitions (-count) is above
// its ceiling, so that a change that doubles what a feature costs fails while the noise of a
// shared 2-core machine, which slows some repetitions, does not.
//
//	go test -run '^$' -bench BenchmarkFeatureCost -benchtime 20000x -count 3 . | go run ./bench/costtable
//	... | go run ./bench/costtable -max 'bind=1.6,unique=7.5,batch=2.8:3.3' -quiet
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// sample is one repetition of one row.
type sample struct{ client, redis float64 }

// table is the rows of one benchmark (its sub-benchmarks) in the order first seen, each with
// its repetitions in order.
type table struct {
	name string
	rows []string
	reps map[string][]sample
}

// line matches a result line: BenchmarkFeatureCost/plain-2  20000  13645 ns/op  8.9 client-µs/job  5.6 redis-µs/job
// (a row's name may hold a dash: keyed-fair-2 is the row keyed-fair)
var line = regexp.MustCompile(`^(Benchmark\w+)/([\w-]+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parse reads benchmark output; lines that are not results of a row with both metrics are
// skipped.
func parse(r io.Reader) ([]*table, error) {
	var tables []*table
	byName := map[string]*table{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		var s sample
		var have int
		for i := 1; i < len(f); i++ {
			v, err := strconv.ParseFloat(f[i-1], 64)
			if err != nil {
				continue
			}
			switch f[i] {
			case "client-µs/job":
				s.client, have = v, have|1
			case "redis-µs/job":
				s.redis, have = v, have|2
			}
		}
		if have != 3 {
			continue
		}
		t := byName[m[1]]
		if t == nil {
			t = &table{name: m[1], reps: map[string][]sample{}}
			byName[m[1]] = t
			tables = append(tables, t)
		}
		if _, ok := t.reps[m[2]]; !ok {
			t.rows = append(t.rows, m[2])
		}
		t.reps[m[2]] = append(t.reps[m[2]], s)
	}
	return tables, sc.Err()
}

// ratios are a row's ratios to plain, one per repetition (repetition k of the row to
// repetition k of plain, both from the same run).
func ratios(t *table, row string) (client, redis []float64) {
	base := t.reps["plain"]
	for k, s := range t.reps[row] {
		if k < len(base) && base[k].client > 0 && base[k].redis > 0 {
			client = append(client, s.client/base[k].client)
			redis = append(redis, s.redis/base[k].redis)
		}
	}
	return client, redis
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ceiling is a row's ceilings: of its Redis ratio and of its client ratio.
type ceiling struct{ redis, client float64 }

// parseMax reads row=ceiling (both ratios) or row=redis:client pairs, comma-separated.
func parseMax(spec string) (map[string]ceiling, error) {
	out := map[string]ceiling{}
	if spec == "" {
		return out, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		r, c, both := strings.Cut(v, ":")
		if !both {
			c = r
		}
		fr, err1 := strconv.ParseFloat(r, 64)
		fc, err2 := strconv.ParseFloat(c, 64)
		if !ok || k == "" || err1 != nil || err2 != nil || fr <= 0 || fc <= 0 {
			return nil, fmt.Errorf("costtable: -max: %q is not row=ceiling or row=redis:client", kv)
		}
		out[k] = ceiling{redis: fr, client: fc}
	}
	return out, nil
}

func main() {
	maxSpec := flag.String("max", "", "ceilings of the ratios to plain, row=ceiling (Redis and client) or row=redis:client, comma-separated: fail when a row's best ratio over the repetitions is above its ceiling")
	quiet := flag.Bool("quiet", false, "print only the check's verdict")
	flag.Parse()
	ceilings, err := parseMax(*maxSpec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tables, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "costtable:", err)
		os.Exit(2)
	}
	if len(tables) == 0 {
		fmt.Fprintln(os.Stderr, "costtable: no benchmark results with client-µs/job and redis-µs/job on stdin")
		os.Exit(2)
	}
	if !*quiet {
		fmt.Println("| job | client µs/job | Redis µs/job | client ratio to plain | Redis ratio to plain | benchmark |")
		fmt.Println("|---|---|---|---|---|---|")
	}
	var failures []string
	seen := map[string]bool{}
	for _, t := range tables {
		if _, ok := t.reps["plain"]; !ok {
			fmt.Fprintf(os.Stderr, "costtable: %s has no plain row to compare with\n", t.name)
			os.Exit(2)
		}
		for _, row := range t.rows {
			var c, r []float64
			for _, s := range t.reps[row] {
				c, r = append(c, s.client), append(r, s.redis)
			}
			cr, rr := ratios(t, row)
			if !*quiet {
				fmt.Printf("| %s | %.1f | %.1f | %.2f× | %.2f× | %s (%d reps) |\n", row, median(c), median(r), median(cr), median(rr), t.name, len(c))
			}
			limit, ok := ceilings[row]
			if !ok || row == "plain" {
				continue
			}
			seen[row] = true
			if len(rr) == 0 {
				failures = append(failures, fmt.Sprintf("%s: no repetition to compare with plain", row))
				continue
			}
			if best := slices.Min(rr); best > limit.redis {
				failures = append(failures, fmt.Sprintf("%s: Redis µs/job %.2f× plain at best (reps %s), above %.2f×", row, best, list(rr), limit.redis))
			}
			if best := slices.Min(cr); best > limit.client {
				failures = append(failures, fmt.Sprintf("%s: client µs/job %.2f× plain at best (reps %s), above %.2f×", row, best, list(cr), limit.client))
			}
		}
	}
	for row := range ceilings {
		if !seen[row] {
			failures = append(failures, fmt.Sprintf("%s: has a ceiling but no result", row))
		}
	}
	sort.Strings(failures)
	for _, f := range failures {
		fmt.Fprintln(os.Stderr, "costtable: FAIL", f)
	}
	if len(failures) > 0 {
		os.Exit(1)
	}
	if len(ceilings) > 0 {
		fmt.Fprintf(os.Stderr, "costtable: every ratio within its ceiling (%d rows)\n", len(ceilings))
	}
}

func list(v []float64) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = strconv.FormatFloat(f, 'f', 2, 64)
	}
	return strings.Join(s, " ")
}
