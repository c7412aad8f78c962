package security_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// The secrets of TestPasswordNeverInLogsOrErrors: the server's password, and a wrong one a
// user might type (which must not be echoed either).
const (
	password      = "s3cret-pw-XYZ"
	wrongPassword = "wr0ng-pw-QRS"
)

// logBuffer collects log output safely from many goroutines. It is an io.Writer for slog and
// a go-redis logger.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Printf makes logBuffer a go-redis logger.
func (l *logBuffer) Printf(_ context.Context, format string, v ...any) {
	_, _ = fmt.Fprintf(l, format+"\n", v...)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines decodes the buffer as slog JSON lines.
func (l *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "not a JSON log line: %s", line)
		out = append(out, m)
	}
	return out
}

// has reports whether some log line's message contains msg.
func (l *logBuffer) has(t *testing.T, msg string) bool {
	for _, m := range l.lines(t) {
		if s, _ := m["msg"].(string); strings.Contains(s, msg) {
			return true
		}
	}
	return false
}

// jsonLogger logs everything from Debug up, as JSON, into buf (and to stderr with EXQ_TEST_LOG).
func jsonLogger(buf *logBuffer) *slog.Logger {
	var w io.Writer = buf
	if os.Getenv("EXQ_TEST_LOG") != "" {
		w = io.MultiWriter(buf, os.Stderr)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// runs records the jobs that ran, by jid, with the number of attempts.
type runs struct {
	mu   sync.Mutex
	done map[string]int // successful runs
	seen map[string]int // all runs
}

func newRuns() *runs { return &runs{done: map[string]int{}, seen: map[string]int{}} }

// worker returns a worker that records its runs and fails those for which fail(job, attempt)
// returns an error (attempt is 1 for the first run of a jid).
func (r *runs) worker(fail func(job *exq.Job, attempt int) error) exq.Worker {
	return exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
		r.mu.Lock()
		r.seen[job.JID]++
		attempt := r.seen[job.JID]
		r.mu.Unlock()
		if fail != nil {
			if err := fail(job, attempt); err != nil {
				return err
			}
		}
		r.mu.Lock()
		r.done[job.JID]++
		r.mu.Unlock()
		return nil
	})
}

func (r *runs) succeeded(jid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[jid] > 0
}

func (r *runs) attempts(jid string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[jid]
}

// fast shortens exq's timers so that retries, scheduling and heartbeats happen within a test.
func fast(o exq.Options) exq.Options {
	o.PollTimeout = 50 * time.Millisecond
	o.SchedulerPollTimeout = 50 * time.Millisecond
	o.HeartbeatInterval = 300 * time.Millisecond
	o.ShutdownTimeout = 2 * time.Second
	if o.RedisTimeout == 0 {
		o.RedisTimeout = 2 * time.Second
	}
	o.Backoff = func(int, *exq.Job) time.Duration { return 20 * time.Millisecond }
	return o
}

// startNode starts a node that the test stops when it ends (Stop is safe to call twice).
func startNode(t *testing.T, o exq.Options) *exq.Exq {
	t.Helper()
	// Not a bounded ctx: the end of Start's ctx stops the node.
	e, err := exq.Start(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = stopNode(e) })
	return e
}

func stopNode(e *exq.Exq) error {
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	return e.Stop(ctx)
}

func bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), testutil.WaitTimeout)
}

// errorLog keeps every error a test got from exq, to check them all for secrets at the end.
type errorLog struct {
	t    *testing.T
	errs []string
}

// got records err (which may be nil) under what.
func (l *errorLog) got(what string, err error) error {
	if err != nil {
		l.errs = append(l.errs, what+": "+err.Error())
		l.t.Logf("%s: %v", what, err)
	}
	return err
}

// mustFail records err and checks that it is an error matching target.
func (l *errorLog) mustFail(what string, err, target error) {
	l.t.Helper()
	l.got(what, err)
	if assert.Error(l.t, err, what) {
		assert.ErrorIs(l.t, err, target, what)
	}
}

// TestPasswordNeverInLogsOrErrors runs a node on a password-protected Redis through normal
// work (success, failure, retry, dead), wrong and missing passwords, an unreachable port, a
// password change and a kill of the server mid-run, and Stop, and checks that the password
// appears in no error and no log line (exq's, at Debug level, and go-redis's own).
func TestPasswordNeverInLogsOrErrors(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--requirepass", password}})
	goodURL := "redis://:" + password + "@" + srv.Addr() + "/0"
	logs := &logBuffer{}
	errs := &errorLog{t: t}
	r := newRuns()
	release := make(chan struct{})
	o := fast(exq.Options{
		RedisURL:     goodURL,
		RedisTimeout: time.Second,
		Queues:       []exq.Queue{{Name: "default", Concurrency: 4}},
		Logger:       jsonLogger(logs),
		Workers: map[string]exq.Worker{
			"Sec.Ok": r.worker(nil),
			"Sec.FailOnce": r.worker(func(_ *exq.Job, attempt int) error {
				if attempt == 1 {
					return errors.New("first attempt fails on purpose")
				}
				return nil
			}),
			"Sec.Fail": r.worker(func(*exq.Job, int) error { return errors.New("always fails") }),
			"Sec.Held": r.worker(func(*exq.Job, int) error { <-release; return nil }),
		},
	})
	ctx, cancel := bounded()
	defer cancel()

	// Normal work: success, a failure retried by the scheduler, a job that dies.
	e := startNode(t, o)
	ok, err := e.Enqueue(ctx, "default", "Sec.Ok", []any{1})
	require.NoError(t, errs.got("enqueue", err))
	retried, err := e.Enqueue(ctx, "default", "Sec.FailOnce", []any{2})
	require.NoError(t, errs.got("enqueue", err))
	dead, err := e.EnqueueIn(ctx, "default", "Sec.Fail", 10*time.Millisecond, []any{3}, exq.MaxRetries(0))
	require.NoError(t, errs.got("enqueue in", err))
	testutil.WaitFor(t, "the jobs ran", func() bool {
		return r.succeeded(ok) && r.succeeded(retried) && r.attempts(dead) == 1
	})
	testutil.WaitFor(t, "the failed job is in the dead set", func() bool {
		n, err := e.API().Size(ctx, exq.DeadSet)
		return errs.got("dead size", err) == nil && n == 1
	})
	client, err := exq.NewClient(ctx, o.ClientOptions())
	require.NoError(t, errs.got("NewClient", err))
	viaClient, err := client.Enqueue(ctx, "default", "Sec.Ok", nil)
	require.NoError(t, errs.got("client enqueue", err))
	require.NoError(t, client.Close())
	api, err := exq.NewAPI(ctx, o.ClientOptions())
	require.NoError(t, errs.got("NewAPI", err))
	_, err = api.Queues(ctx)
	require.NoError(t, errs.got("api queues", err))
	require.NoError(t, api.Close())
	testutil.WaitFor(t, "the client's job ran", func() bool { return r.succeeded(viaClient) })

	// Wrong, missing and unreachable credentials, in every constructor.
	badURLs := map[string]string{
		"wrong password":   "redis://:" + wrongPassword + "@" + srv.Addr() + "/0",
		"wrong user":       "redis://nobody:" + password + "@" + srv.Addr() + "/0",
		"no password":      "redis://" + srv.Addr() + "/0",
		"unreachable port": "redis://:" + password + "@127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)) + "/0",
	}
	for what, u := range badURLs {
		bad := o
		bad.RedisURL = u
		bad.RedisTimeout = 500 * time.Millisecond
		_, err := exq.Start(ctx, bad)
		errs.mustFail("Start with "+what, err, exq.ErrRedisUnavailable)
		_, err = exq.NewAPI(ctx, bad.ClientOptions())
		errs.mustFail("NewAPI with "+what, err, exq.ErrRedisUnavailable)
		_, err = exq.NewClient(ctx, bad.ClientOptions())
		errs.mustFail("NewClient with "+what, err, exq.ErrRedisUnavailable)
		if err != nil {
			assert.Contains(t, err.Error(), "127.0.0.1:", "the error names the address")
		}
	}
	// Options that go-redis refuses after parsing the URL.
	for what, u := range map[string]string{
		"unknown option": goodURL + "?bogus=1",
		"bad database":   "redis://:" + password + "@" + srv.Addr() + "/notadb",
	} {
		bad := o
		bad.RedisURL = u
		_, err := exq.Start(ctx, bad)
		errs.mustFail("Start with "+what, err, exq.ErrInvalidOptions)
		_, err = exq.NewAPI(ctx, bad.ClientOptions())
		errs.mustFail("NewAPI with "+what, err, exq.ErrInvalidOptions)
		_, err = exq.NewClient(ctx, bad.ClientOptions())
		errs.mustFail("NewClient with "+what, err, exq.ErrInvalidOptions)
	}

	// The password changes under the running node: its reconnections fail with WRONGPASS.
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: password, PoolSize: 1})
	defer admin.Close()
	require.NoError(t, admin.ConfigSet(ctx, "requirepass", wrongPassword).Err())
	require.NoError(t, admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Err())
	require.NoError(t, admin.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err())
	_, err = e.Enqueue(ctx, "default", "Sec.Ok", nil)
	errs.got("enqueue during a password change", err)
	testutil.WaitFor(t, "the node logs a failed fetch", func() bool {
		return logs.has(t, "fetching jobs failed")
	})
	require.NoError(t, admin.ConfigSet(ctx, "requirepass", password).Err())
	testutil.WaitFor(t, "the node works again", func() bool { return logs.has(t, "fetching jobs works again") })

	// The server is killed mid-run, with a job running: its ack, the fetches, stats and
	// heartbeats fail and are logged; then it comes back (empty: no AOF).
	held, err := e.Enqueue(ctx, "default", "Sec.Held", nil)
	require.NoError(t, errs.got("enqueue", err))
	testutil.WaitFor(t, "the held job runs", func() bool { return r.attempts(held) == 1 })
	srv.Kill()
	close(release)
	_, err = e.Enqueue(ctx, "default", "Sec.Ok", nil)
	assert.Error(t, errs.got("enqueue while Redis is down", err))
	_, err = e.API().Stats(ctx)
	assert.Error(t, errs.got("api stats while Redis is down", err))
	for _, msg := range []string{"fetching jobs failed", "acknowledging finished jobs failed", "exq: heartbeat:"} {
		testutil.WaitFor(t, "a log line: "+msg, func() bool { return logs.has(t, msg) })
	}
	srv.Start()
	testutil.WaitFor(t, "the held job's ack is written after the restart", func() bool {
		return r.succeeded(held) && logs.has(t, "acknowledging jobs works again")
	})
	after, err := e.Enqueue(ctx, "default", "Sec.Ok", nil)
	require.NoError(t, errs.got("enqueue after the restart", err))
	testutil.WaitFor(t, "a job runs after the restart", func() bool { return r.succeeded(after) })

	// Killed again, and the node stops while Redis is down: Stop logs what it cannot write.
	srv.Kill()
	errs.got("stop with Redis down", stopNode(e))
	assert.True(t, logs.has(t, "stopped"), "Stop logged its end")

	// Every error and every log line, exq's and go-redis's, is free of both secrets.
	all := strings.Join(errs.errs, "\n")
	require.NotEmpty(t, errs.errs)
	for _, secret := range []string{password, wrongPassword} {
		assert.NotContains(t, all, secret, "an error carries a password")
		assert.NotContains(t, logs.String(), secret, "exq's log carries a password")
		assert.NotContains(t, redisLog.String(), secret, "go-redis's log carries a password")
	}
	assert.Contains(t, all, "redis://:xxxxx@127.0.0.1:", "errors name the address with the password masked")
	levels := map[string]int{}
	for _, m := range logs.lines(t) {
		l, _ := m["level"].(string)
		levels[l]++
	}
	t.Logf("checked %d errors and %d log lines (%v), %d bytes of go-redis log", len(errs.errs), len(logs.lines(t)), levels, len(redisLog.String()))
	assert.NotZero(t, levels["DEBUG"], "the log ran at Debug level")
	assert.NotZero(t, levels["WARN"], "the failures were logged")
}

// TestPasswordNeverInInvalidURLErrors gives Start, NewAPI and NewClient Redis URLs that do
// not parse (a password with an unescaped '#', '/', ' ' or a bad '%' escape, a bad port): the
// error must name the URL without the password.
func TestPasswordNeverInInvalidURLErrors(t *testing.T) {
	ctx, cancel := bounded()
	defer cancel()
	port := strconv.Itoa(testutil.FreePort(t)) // in case one of them parses: nothing listens
	for _, u := range []string{
		"redis://:" + password + "@127.0.0.1:notaport/0",
		"redis://user:" + password + "%zz@127.0.0.1:" + port + "/0",
		"redis://:" + password + "#x@127.0.0.1:" + port + "/0",
		"redis://:" + password + "/x@127.0.0.1:" + port + "/0",
		"redis://:" + password + " x@127.0.0.1:" + port + "/0",
		"redis://user:" + password + "@[::1/0",
	} {
		o := exq.Options{RedisURL: u, RedisTimeout: 200 * time.Millisecond}
		_, err := exq.Start(ctx, o)
		checkInvalidURL(t, "Start", u, err)
		_, err = exq.NewAPI(ctx, o.ClientOptions())
		checkInvalidURL(t, "NewAPI", u, err)
		_, err = exq.NewClient(ctx, o.ClientOptions())
		checkInvalidURL(t, "NewClient", u, err)
	}
}

func checkInvalidURL(t *testing.T, call, u string, err error) {
	t.Helper()
	if !assert.Error(t, err, "%s(%s)", call, u) {
		return
	}
	assert.ErrorIs(t, err, exq.ErrInvalidOptions, "%s(%s)", call, u)
	assert.NotContains(t, err.Error(), password, "%s(%q) leaks the password", call, u)
}
