package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// ns is the namespace of every interop test. Against Sidekiq 6 it is "exq", Exq's default,
// given to Sidekiq as its namespace option (REDIS_NAMESPACE, with redis-namespace). Sidekiq 7
// and 8 refuse a namespace, so against them it is "" and exq runs with NoNamespace. rubyReady
// sets it from the Sidekiq it finds.
var ns = "exq"

// sidekiqVersion is the version of the Sidekiq the Ruby side loads ("6.4.1", "7.3.10"), and
// sidekiqMajor its major version; set by rubyReady.
var (
	sidekiqVersion string
	sidekiqMajor   int
)

// RubyLibEnv names a colon list of folders put in front of RUBYLIB for every Ruby process, so
// the suite can run against a Sidekiq other than the installed gem, from its source
// (docs/interop.md): EXQ_INTEROP_RUBYLIB=/tmp/sk7/lib:/tmp/redis-client/lib:/tmp/cp/lib.
const RubyLibEnv = "EXQ_INTEROP_RUBYLIB"

// nsKey is the key name of k in the interop namespace: "exq:retry", or "retry" without one.
func nsKey(k string) string {
	if ns == "" {
		return k
	}
	return ns + ":" + k
}

// rubyEnv is the environment of every Ruby process without the test's settings: the process'
// own, with RubyLibEnv's folders in front of RUBYLIB.
func rubyEnv() []string {
	env := os.Environ()
	if extra := os.Getenv(RubyLibEnv); extra != "" {
		lib := extra
		if cur := os.Getenv("RUBYLIB"); cur != "" {
			lib += ":" + cur
		}
		env = append(env, "RUBYLIB="+lib)
	}
	return env
}

// interopDB is the Redis database the interop tests use on the server of EXQ_TEST_REDIS_URL, so
// that the fixed namespace "exq" never meets the keys of any other test (or program) there.
const interopDB = 5

// waitTimeout bounds every wait. It is generous on purpose: the tests wait for a condition,
// never for an amount of time, so a slow machine makes them slower, not red.
const waitTimeout = 60 * time.Second

// peer is one interop test's world: a client on the interop database, the URL both sides use,
// and the folder of this package's Ruby scripts (interop/ruby: the Sidekiq server, its Web UI,
// and the client-side helpers).
type peer struct {
	t   *testing.T
	rdb *redis.Client
	url string // REDIS_URL of both sides
	dir string // interop/ruby
}

// newPeer gives the test a clean "exq" namespace on the interop database, and skips it (fails it
// under CI=true) when Redis, ruby or the Sidekiq gems are missing; testutil counts the skips and
// TestMain reports them. Every key of the namespace is
// deleted again when the test ends, after the processes it started are stopped.
func newPeer(t *testing.T) *peer {
	t.Helper()
	base := testutil.RedisURL(t)
	if err := rubyReady(); err != nil {
		testutil.SkipMissing(t, fmt.Sprintf("interop tests need ruby with Sidekiq (apt-get install ruby-sidekiq ruby-redis-namespace ruby-sidekiq-cron, or %s): %v", RubyLibEnv, err))
	}
	dir, err := filepath.Abs("ruby") // go test runs in the package folder
	require.NoError(t, err)

	rdb, u := interopClient(t, base)
	if ns == "" && !strings.HasSuffix(u, "/"+strconv.Itoa(interopDB)) {
		_ = rdb.Close()
		t.Fatalf("Sidekiq %s uses no namespace, so the interop tests need database %d of the test Redis to themselves", sidekiqVersion, interopDB)
	}
	p := &peer{t: t, rdb: rdb, url: u, dir: dir}
	p.clean()
	t.Cleanup(func() {
		p.clean()
		_ = rdb.Close()
	})
	return p
}

// clean deletes every key of the interop namespace: without a namespace (Sidekiq 7 and 8),
// the whole interop database, which only these tests use.
func (p *peer) clean() {
	if ns != "" {
		testutil.DeleteNamespace(p.rdb, ns)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.rdb.FlushDB(ctx).Err(); err != nil {
		p.t.Errorf("empty the interop database: %v", err)
	}
}

// needSidekiq skips the test unless the Ruby side runs Sidekiq major or later (a feature Sidekiq
// 6 has not: the Metrics tab).
func (p *peer) needSidekiq(major int) {
	p.t.Helper()
	if sidekiqMajor < major {
		p.t.Skipf("needs Sidekiq %d or later; the Ruby side runs Sidekiq %s", major, sidekiqVersion)
	}
}

var cronCheck struct {
	once sync.Once
	err  error
}

// needCron skips the test (fails it under CI=true) when sidekiq-cron cannot be loaded with the
// Sidekiq the Ruby side runs (Debian's sidekiq-cron 1.8 needs Sidekiq 6's redis-rb).
func (p *peer) needCron() {
	p.t.Helper()
	cronCheck.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "ruby", "-e", `require "sidekiq"; require "sidekiq-cron"; require "sidekiq/cron/web"; require "fugit"`)
		cmd.Env = rubyEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			cronCheck.err = fmt.Errorf("loading sidekiq-cron with Sidekiq %s failed (%v): %s", sidekiqVersion, err, firstLine(out))
		}
	})
	if cronCheck.err != nil {
		testutil.SkipMissing(p.t, fmt.Sprintf("the cron interop tests need sidekiq-cron (apt-get install ruby-sidekiq-cron): %v", cronCheck.err))
	}
}

// firstLine is the first line of a command's output (what a Ruby exception says).
func firstLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[0])
}

// interopClient connects to database interopDB of the test Redis and returns the client and
// the URL that names it. A server with fewer databases keeps the URL's own database.
func interopClient(t *testing.T, base string) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(base)
	require.NoError(t, err, "parse %s", testutil.RedisURLEnv)
	u, err := url.Parse(base)
	require.NoError(t, err)
	if u.Scheme == "redis" || u.Scheme == "rediss" {
		o := *opts
		o.DB = interopDB
		c := redis.NewClient(&o)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			u.Path = "/" + strconv.Itoa(interopDB)
			return c, u.String()
		}
		_ = c.Close()
		t.Logf("database %d of the test Redis is not usable (%v); using the URL's own database", interopDB, err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Fatalf("ping the test Redis: %v", err)
	}
	return c, base
}

var rubyCheck struct {
	once sync.Once
	err  error
}

// rubyReady checks once that ruby, rackup and the gems the Ruby scripts load are installed, and
// which Sidekiq they load: 6 (with redis-namespace, in the namespace "exq"), 7 or 8 (no
// namespace). sidekiq-cron is checked by the cron tests (needCron).
func rubyReady() error {
	rubyCheck.once.Do(func() {
		for _, bin := range []string{"ruby", "rackup"} {
			if _, err := exec.LookPath(bin); err != nil {
				rubyCheck.err = fmt.Errorf("%s is not installed: %v", bin, err)
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "ruby", "-e", `
			require "sidekiq"; require "sidekiq/api"; require "sidekiq/web"
			require "rack/session/cookie"; require "webrick"
			major = Sidekiq::VERSION.split(".").first.to_i
			abort "Sidekiq #{Sidekiq::VERSION} is loaded; these tests are for Sidekiq 6, 7 and 8" unless (6..8).cover?(major)
			require "redis-namespace" if major == 6
			puts Sidekiq::VERSION
		`)
		cmd.Env = rubyEnv()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			rubyCheck.err = fmt.Errorf("loading the Sidekiq gems failed (%v): %s", err, bytes.TrimSpace(stderr.Bytes()))
			return
		}
		sidekiqVersion = strings.TrimSpace(string(out))
		sidekiqMajor, _ = strconv.Atoi(strings.SplitN(sidekiqVersion, ".", 2)[0])
		if sidekiqMajor >= 7 {
			ns = ""
		}
	})
	return rubyCheck.err
}

// env is the environment of every Ruby process: the interop Redis, the namespace, and extra
// settings (later entries win).
func (p *peer) env(extra ...string) []string {
	env := append(rubyEnv(), "REDIS_URL="+p.url, "REDIS_NAMESPACE="+ns)
	return append(env, extra...)
}

// ruby runs a Ruby script to its end and returns its standard output; it fails the test if the
// script fails.
func (p *peer) ruby(stdin string, env []string, script string, args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ruby", append([]string{script}, args...)...)
	cmd.Env = p.env(env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("ruby %s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(script), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// proc is a long-running Ruby process (a Sidekiq server, the Web UI) started by a test. It is
// stopped by its pid when the test ends, if the test did not stop it before.
type proc struct {
	t        *testing.T
	name     string
	cmd      *exec.Cmd
	sig      os.Signal // the clean stop: TERM for Sidekiq, INT for WEBrick
	logPath  string
	done     chan struct{}
	cancel   context.CancelFunc
	stopOnce sync.Once
}

// start starts argv in dir with the Ruby environment plus env. Its output goes to a log file
// that is printed if the test fails.
func (p *peer) start(name string, sig os.Signal, dir string, env []string, argv ...string) *proc {
	t := p.t
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	defer logf.Close() // the child has its own descriptor
	// The context is only a backstop for a test that dies without its cleanups: stop ends the
	// process long before.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = p.env(env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(sig) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s (%s): %v", name, strings.Join(argv, " "), err)
	}
	pr := &proc{t: t, name: name, cmd: cmd, sig: sig, logPath: logPath, done: make(chan struct{}), cancel: cancel}
	go func() {
		_ = cmd.Wait()
		close(pr.done)
	}()
	t.Cleanup(pr.stop)
	return pr
}

// exited reports whether the process has ended.
func (pr *proc) exited() bool {
	select {
	case <-pr.done:
		return true
	default:
		return false
	}
}

// stop sends the clean stop signal to the pid and waits for the process to end, killing it if
// it has not ended after 30 s.
func (pr *proc) stop() {
	pr.stopOnce.Do(func() {
		if !pr.exited() {
			_ = pr.cmd.Process.Signal(pr.sig)
			select {
			case <-pr.done:
			case <-time.After(30 * time.Second):
				pr.t.Errorf("%s (pid %d) did not end within 30 s of %v; killing it", pr.name, pr.cmd.Process.Pid, pr.sig)
				_ = pr.cmd.Process.Kill()
				<-pr.done
			}
		}
		pr.cancel()
		if pr.t.Failed() {
			pr.t.Logf("log of %s (pid %d):\n%s", pr.name, pr.cmd.Process.Pid, tail(pr.logPath, 60))
		}
	})
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startSidekiq starts a Sidekiq server with ruby/sidekiq_server.rb (which execs sidekiq, so
// the pid is Sidekiq's own). env sets QUEUE, CONCURRENCY, RECORD_FILE, POLL_INTERVAL, EXTRA_CLASSES.
func (p *peer) startSidekiq(env ...string) *proc {
	p.t.Helper()
	return p.start("sidekiq", syscall.SIGTERM, p.dir, env, "ruby", filepath.Join(p.dir, "sidekiq_server.rb"))
}

// startExq starts an exq node on the interop database and namespace, stopped when the test ends.
func (p *peer) startExq(o exq.Options) *exq.Exq {
	p.t.Helper()
	o.RedisURL = p.url
	o.Namespace, o.NoNamespace = ns, ns == ""
	if o.Logger == nil {
		o.Logger = testLogger()
	}
	e, err := exq.Start(context.Background(), o)
	require.NoError(p.t, err)
	p.t.Cleanup(func() { stopExq(p.t, e) })
	return e
}

func stopExq(t *testing.T, e *exq.Exq) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, e.Stop(ctx))
}

// testLogger discards exq's logs unless EXQ_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("EXQ_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// waitFor polls cond until it holds, failing the test after waitTimeout with what cond last
// reported.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", waitTimeout, what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keyState summarises where jobs are: the lengths of the queue, schedule, retry and dead keys
// and the number of backup lists.
func (p *peer) keyState(queue string) string {
	ctx := context.Background()
	backups, _ := p.rdb.Keys(ctx, nsKey("queue:backup::*")).Result()
	return fmt.Sprintf("queue %s: %d, schedule: %d, retry: %d, dead: %d, backup lists: %v",
		queue, p.rdb.LLen(ctx, nsKey("queue:")+queue).Val(), p.rdb.ZCard(ctx, nsKey("schedule")).Val(),
		p.rdb.ZCard(ctx, nsKey("retry")).Val(), p.rdb.ZCard(ctx, nsKey("dead")).Val(), backups)
}

// drained reports whether queue, schedule and retry are empty and no backup list holds a job.
func (p *peer) drained(queue string) bool {
	ctx := context.Background()
	if p.rdb.LLen(ctx, nsKey("queue:")+queue).Val() != 0 || p.rdb.ZCard(ctx, nsKey("schedule")).Val() != 0 ||
		p.rdb.ZCard(ctx, nsKey("retry")).Val() != 0 {
		return false
	}
	backups, err := p.rdb.Keys(ctx, nsKey("queue:backup::*")).Result()
	if err != nil {
		return false
	}
	for _, b := range backups {
		if p.rdb.LLen(ctx, b).Val() != 0 {
			return false
		}
	}
	return true
}

// zmembers returns the members of a sorted set with their scores.
func (p *peer) zmembers(key string) []redis.Z {
	p.t.Helper()
	z, err := p.rdb.ZRangeWithScores(context.Background(), key, 0, -1).Result()
	require.NoError(p.t, err)
	return z
}

// runLog is a worker that records every run, by jid.
type runLog struct {
	mu   sync.Mutex
	runs map[string][]jobRun
	fail func(job *exq.Job) error // nil: every run succeeds
}

type jobRun struct {
	job *exq.Job
	at  time.Time
}

func newRunLog(fail func(job *exq.Job) error) *runLog {
	return &runLog{runs: map[string][]jobRun{}, fail: fail}
}

func (l *runLog) Perform(_ context.Context, job *exq.Job) error {
	now := time.Now()
	l.mu.Lock()
	l.runs[job.JID] = append(l.runs[job.JID], jobRun{job: job, at: now})
	l.mu.Unlock()
	if l.fail != nil {
		return l.fail(job)
	}
	return nil
}

// of returns the runs of jid.
func (l *runLog) of(jid string) []jobRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]jobRun(nil), l.runs[jid]...)
}

// snapshot returns every jid's runs.
func (l *runLog) snapshot() map[string][]jobRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]jobRun, len(l.runs))
	for jid, r := range l.runs {
		out[jid] = append([]jobRun(nil), r...)
	}
	return out
}

// sidekiqRecord is one line of RECORD_FILE (ruby/sidekiq_jobs.rb): one execution on Sidekiq.
type sidekiqRecord struct {
	JID        string          `json:"jid"`
	Class      string          `json:"class"`
	Queue      string          `json:"queue"`
	Args       json.RawMessage `json:"args"`
	RetryCount *int            `json:"retry_count"`
	Result     string          `json:"result"`
	PID        int             `json:"pid"`
	At         float64         `json:"at"`
}

// readRecords parses the record file. A last line still being written is left for next time.
func readRecords(path string) ([]sidekiqRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []sidekiqRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r sidekiqRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// sameJSON reports whether a and b hold the same JSON value: objects compared by key, integers
// exactly whatever their size (12345678901234567890 must survive), other numbers as float64
// (Ruby writes 1e-7 as 1.0e-07).
func sameJSON(a, b []byte) (bool, error) {
	va, err := decodeJSON(a)
	if err != nil {
		return false, err
	}
	vb, err := decodeJSON(b)
	if err != nil {
		return false, err
	}
	return sameValue(va, vb), nil
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode %q: %w", b, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("decode %q: data after the value", b)
	}
	return v, nil
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameNumber(x, y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

func sameNumber(x, y json.Number) bool {
	if x == y {
		return true
	}
	xi, okx := new(big.Int).SetString(string(x), 10)
	yi, oky := new(big.Int).SetString(string(y), 10)
	if okx && oky {
		return xi.Cmp(yi) == 0
	}
	xf, errx := strconv.ParseFloat(string(x), 64)
	yf, erry := strconv.ParseFloat(string(y), 64)
	return errx == nil && erry == nil && xf == yf
}

// fields decodes a job document into its fields, each kept as its exact bytes.
func fields(t *testing.T, doc string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(doc), &m), doc)
	return m
}

// jidOf returns the "jid" of a job document.
func jidOf(t *testing.T, doc string) string {
	t.Helper()
	var j struct {
		JID string `json:"jid"`
	}
	require.NoError(t, json.Unmarshal([]byte(doc), &j), doc)
	return j.JID
}

// webUI is Sidekiq's Web UI (ruby/sidekiq_web.ru under rackup/WEBrick) on a loopback port of the
// test's own, and an HTTP client with a cookie jar for its session (CSRF tokens).
type webUI struct {
	t      *testing.T
	base   string
	client *http.Client
	proc   *proc
}

// startWebUI starts Sidekiq's Web UI (ruby/sidekiq_web.ru) on a free loopback port and waits
// until it answers.
func (p *peer) startWebUI() *webUI { return p.startRack("sidekiq-web", "sidekiq_web.ru") }

// startRack runs the Rack app ru (a file in ruby/) under WEBrick on a free loopback port and
// waits until it answers /stats. If the port was taken meanwhile (WEBrick then exits), it tries
// another one.
func (p *peer) startRack(name, ru string) *webUI {
	t := p.t
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	tr := &http.Transport{DisableKeepAlives: true} // no proxy, no idle connection left behind
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{
		Jar:       jar,
		Transport: tr,
		Timeout:   30 * time.Second,
		// A form post answers with a redirect; the test looks at it rather than following it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		pr := p.start(name, os.Interrupt, p.dir, nil,
			"rackup", filepath.Join(p.dir, ru), "-s", "webrick", "-o", "127.0.0.1", "-p", strconv.Itoa(port))
		w := &webUI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port), proc: pr, client: client}
		deadline := time.Now().Add(waitTimeout)
		for !pr.exited() {
			_, err := w.stats()
			if err == nil {
				return w
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting for %s to answer /stats: %v", waitTimeout, ru, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if attempt == 3 {
			t.Fatalf("%s ended before it answered, three times; last log:\n%s", ru, tail(pr.logPath, 40))
		}
		t.Logf("%s on port %d ended before it answered (port taken?); trying another port:\n%s", ru, port, tail(pr.logPath, 10))
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// get fetches a page and returns its body; a status other than 200 is an error.
func (w *webUI) get(path string) (string, error) {
	resp, err := w.client.Get(w.base + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), nil
}

// mustGet is get that fails the test on an error.
func (w *webUI) mustGet(path string) string {
	w.t.Helper()
	body, err := w.get(path)
	require.NoError(w.t, err, body)
	return body
}

// post submits a form and returns the response status and Location header.
func (w *webUI) post(path string, form url.Values) (int, string) {
	w.t.Helper()
	resp, err := w.client.PostForm(w.base+path, form)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		w.t.Fatalf("POST %s: %s: %s", path, resp.Status, b)
	}
	return resp.StatusCode, resp.Header.Get("Location")
}

// sidekiqStats is the "sidekiq" part of the Web UI's /stats JSON (Sidekiq::Stats).
type sidekiqStats struct {
	Processed int64 `json:"processed"`
	Failed    int64 `json:"failed"`
	Busy      int64 `json:"busy"`
	Processes int64 `json:"processes"`
	Enqueued  int64 `json:"enqueued"`
	Scheduled int64 `json:"scheduled"`
	Retries   int64 `json:"retries"`
	Dead      int64 `json:"dead"`
}

func (w *webUI) stats() (sidekiqStats, error) {
	body, err := w.get("/stats")
	if err != nil {
		return sidekiqStats{}, err
	}
	var s struct {
		Sidekiq sidekiqStats `json:"sidekiq"`
	}
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return sidekiqStats{}, fmt.Errorf("decode /stats %q: %w", body, err)
	}
	return s.Sidekiq, nil
}

// waitStats waits until /stats reports want.
func (w *webUI) waitStats(what string, want sidekiqStats) {
	w.t.Helper()
	waitFor(w.t, what, func() (bool, string) {
		s, err := w.stats()
		if err != nil {
			return false, err.Error()
		}
		return s == want, fmt.Sprintf("%+v, want %+v", s, want)
	})
}
