package testutil

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// Main is the TestMain of a package whose tests may use the real test Redis: it runs the tests,
// stops the private redis-server they may have started (see RedisURL), says loudly how many
// tests were skipped because something they need is missing, and exits.
//
//	func TestMain(m *testing.M) { testutil.Main(m) }
func Main(m *testing.M) {
	raiseParallel()
	code := m.Run()
	os.Exit(finish(code, os.Stderr))
}

// MainLeak is Main that also fails the package when a test leaves a goroutine behind, as
// goleak.VerifyTestMain does (the check runs only after a passing run, and before the private
// redis-server is stopped, which starts no goroutine of its own).
func MainLeak(m *testing.M, opts ...goleak.Option) {
	raiseParallel()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(finish(code, os.Stderr))
}

// Parallel is how many tests marked with t.Parallel run at once unless -parallel says
// otherwise. Go's default is GOMAXPROCS (2 on a 2-core machine), but these tests spend most of
// their time waiting for Redis, timers and child processes, not computing: with 2 at a time the
// parallel tests would take longer than running them all one after another leaves room for.
const Parallel = 8

// parallel is the default of -test.parallel that Main and MainLeak set: Parallel unless the
// package's TestMain chose another with SetParallel.
var parallel = Parallel

// SetParallel makes n the default of -test.parallel for this package's Main or MainLeak (call
// it in TestMain, before them), for a package many of whose parallel tests wait for seconds:
// each holds a slot while it waits, and with Parallel slots the short tests queue behind them
// while the machine idles. A -parallel given on the command line still wins.
func SetParallel(n int) {
	if n > 0 {
		parallel = n
	}
}

// raiseParallel makes parallel the default of -test.parallel; a -parallel given on the command
// line wins.
func raiseParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", fmt.Sprint(parallel))
	}
}

// afterTests holds what AfterTests registered.
var afterTests struct {
	mu  sync.Mutex
	fns []func()
}

// AfterTests registers f to run once the package's tests are done, before Main or MainLeak
// exits (which a TestMain cannot defer): e.g. removing a binary that TestMain built.
func AfterTests(f func()) {
	afterTests.mu.Lock()
	defer afterTests.mu.Unlock()
	afterTests.fns = append(afterTests.fns, f)
}

// finish stops the private server and reports the skips; it returns the exit code.
func finish(code int, w io.Writer) int {
	afterTests.mu.Lock()
	for _, f := range afterTests.fns {
		f()
	}
	afterTests.mu.Unlock()
	if err := stopPrivate(); err != nil {
		fmt.Fprintf(w, "testutil: stopping the private redis-server: %v\n", err)
	}
	stopPrivateCluster()
	if Skipped() > 0 {
		reportSkips(w)
		if code == 0 && !testing.Verbose() {
			// `go test ./...` throws away the output of a passing package that ran without -v,
			// which would hide the banner exactly where it matters: write it to the go
			// command's own stderr as well. (A later run that go serves from its test cache
			// prints only "(cached)"; -count=1 runs the tests again.)
			if goStderr := goCommandStderr(); goStderr != nil {
				reportSkips(goStderr)
				_ = goStderr.Close()
			}
		}
	}
	return code
}

// goCommandStderr returns the standard error of the go command that runs this test binary,
// or nil when the parent is something else (a shell running the binary directly, whose stderr
// is ours) or it cannot be reached. go test keeps a passing package's output to itself, so
// this is where the banner must go to be seen, a terminal, a pipe or a file
// (go test ./interop > out 2> err) alike.
func goCommandStderr() *os.File {
	ppid := os.Getppid()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil || filepath.Base(exe) != "go" {
		return nil
	}
	return stderrOf(ppid)
}

// stderrOf returns process pid's standard error, or nil. Best: the very file description it
// writes to (stderrShared, Linux pidfd_getfd), whose offset it shares, so that what the
// process writes later goes after the banner. Else /proc/<pid>/fd/2 opened anew: for a
// regular file with O_APPEND (the banner lands at the end; a later write of the process, at
// its own offset, could overwrite part of it, which is better than no banner at all).
func stderrOf(pid int) *os.File {
	if f := stderrShared(pid); f != nil {
		return f
	}
	path := fmt.Sprintf("/proc/%d/fd/2", pid)
	info, err := os.Stat(path)
	if err != nil {
		return nil
	}
	flags := os.O_WRONLY
	if info.Mode().IsRegular() {
		flags |= os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil
	}
	return f
}

// skips counts the tests skipped because something they need is missing, by reason.
var skips struct {
	mu     sync.Mutex
	reason map[string]int
}

// SkipMissing skips a test that needs something this machine lacks (a Redis, ruby, a
// redis-server built with TLS), and counts it under reason so that Main reports it loudly at the
// end. Under CI=true nothing may be missing: the test fails with the reason instead.
func SkipMissing(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: a missing dependency fails the run)", reason)
	}
	skips.mu.Lock()
	if skips.reason == nil {
		skips.reason = map[string]int{}
	}
	skips.reason[reason]++
	skips.mu.Unlock()
	t.Skipf("%s (skipped: CI is not \"true\")", reason)
}

// Skipped returns how many tests SkipMissing skipped so far, over every reason.
func Skipped() int {
	skips.mu.Lock()
	defer skips.mu.Unlock()
	n := 0
	for _, c := range skips.reason {
		n += c
	}
	return n
}

// reportSkips writes a banner naming how many tests were skipped and why, in one write so that
// banners of packages tested in parallel do not interleave.
func reportSkips(w io.Writer) {
	skips.mu.Lock()
	defer skips.mu.Unlock()
	total := 0
	reasons := make([]string, 0, len(skips.reason))
	for r, n := range skips.reason {
		total += n
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	bar := strings.Repeat("!", 78)
	where, _ := os.Getwd() // go test runs a package's binary in the package's folder
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n!!! %d TEST(S) WERE SKIPPED, NOT RUN, in %s: this is not a full pass.\n", bar, total, where)
	for _, r := range reasons {
		fmt.Fprintf(&b, "!!!   %d skipped: %s\n", skips.reason[r], r)
	}
	fmt.Fprintf(&b, "!!! Install what each line names (CI=true makes a missing dependency fail the run).\n%s\n\n", bar)
	_, _ = io.WriteString(w, b.String())
}
