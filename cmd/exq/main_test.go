package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// exqBin is the command, built once by TestMain: the tests run it as an operator would.
var exqBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "exq-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testutil.AfterTests(func() { _ = os.RemoveAll(dir) })
	exqBin = filepath.Join(dir, "exq")
	if out, err := exec.Command("go", "build", "-o", exqBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/exq: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	testutil.MainLeak(m)
}

// result is what one run of the command left: its exit code and output.
type result struct {
	code        int
	out, errOut string
}

// runBin runs the binary bin with args and EXQ_REDIS_URL=url ("" leaves it unset), stdin
// empty and not a terminal.
func runBin(t *testing.T, bin, url string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if url != "" {
		cmd.Env = append(cmd.Env, "EXQ_REDIS_URL="+url)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s %v: %v", bin, args, err)
	}
	return result{code, out.String(), errOut.String()}
}

// cliEnv runs the command against the real test Redis, in a namespace of its own.
type cliEnv struct {
	t   *testing.T
	rdb *redis.Client
	url string
	ns  string
}

func newCLIEnv(t *testing.T) *cliEnv {
	rdb, ns := testutil.Redis(t)
	return &cliEnv{t: t, rdb: rdb, url: testutil.RedisURL(t), ns: ns}
}

// newBigCLIEnv is newCLIEnv on a redis-server of the test's own, for records of megabytes
// (testutil.PrivateRedis).
func newBigCLIEnv(t *testing.T) *cliEnv {
	rdb, url, ns := testutil.PrivateRedis(t)
	return &cliEnv{t: t, rdb: rdb, url: url, ns: ns}
}

// run runs exq args with --namespace given last: global flags go anywhere.
func (c *cliEnv) run(args ...string) (code int, stdout, stderr string) {
	c.t.Helper()
	r := runBin(c.t, exqBin, c.url, append(args, "--namespace", c.ns)...)
	return r.code, r.out, r.errOut
}

func (c *cliEnv) json(v any, args ...string) {
	c.t.Helper()
	code, out, errOut := c.run(append(args, "--json")...)
	require.Equal(c.t, 0, code, "exq %v: %s", args, errOut)
	require.NoError(c.t, json.Unmarshal([]byte(out), v), out)
}

// runIn runs the command in this process, with stdin and the terminals as given: the only way
// to test what it does on a terminal.
func (c *cliEnv) runIn(stdin string, tty bool, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	e := env{getenv: func(k string) string {
		if k == "EXQ_REDIS_URL" {
			return c.url
		}
		return ""
	}, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, stdinTTY: tty, stderrTTY: tty}
	code = run(context.Background(), append(args, "--namespace", c.ns), e)
	return code, out.String(), errOut.String()
}

func (c *cliEnv) keys() []string {
	k, err := c.rdb.Keys(context.Background(), c.ns+":*").Result()
	require.NoError(c.t, err)
	return k
}

// start runs an exq node on the namespace with the given workers, stopped when the test ends.
func (c *cliEnv) start(workers map[string]exq.Worker, queues ...exq.Queue) *exq.Exq {
	c.t.Helper()
	e, err := exq.Start(context.Background(), exq.Options{RedisURL: c.url, Namespace: c.ns, Queues: queues,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Workers: workers})
	require.NoError(c.t, err)
	c.t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

// push puts n jobs of class W on queue q, straight into Redis, and names the queue.
func (c *cliEnv) push(q string, n int) {
	c.t.Helper()
	ctx := context.Background()
	vals := make([]any, 0, n)
	for i := range n {
		vals = append(vals, fmt.Sprintf(`{"class":"W","args":[%d],"queue":"%s","jid":"%s-%d","enqueued_at":1700000000.5}`, i, q, q, i))
	}
	for len(vals) > 0 {
		k := min(len(vals), 1000)
		require.NoError(c.t, c.rdb.LPush(ctx, c.ns+":queue:"+q, vals[:k]...).Err())
		vals = vals[k:]
	}
	require.NoError(c.t, c.rdb.SAdd(ctx, c.ns+":queues", q).Err())
}

// zadd puts n jobs into set s ("dead", "retry", "schedule") with jids prefix0…
func (c *cliEnv) zadd(s, prefix string, n int) {
	c.t.Helper()
	members := make([]redis.Z, 0, n)
	for i := range n {
		members = append(members, redis.Z{Score: float64(1700000000 + i),
			Member: fmt.Sprintf(`{"class":"W","args":[%d],"queue":"bulk","jid":"%s%d","error_class":"RuntimeError","error_message":"boom"}`, i, prefix, i)})
	}
	for len(members) > 0 {
		k := min(len(members), 1000)
		require.NoError(c.t, c.rdb.ZAdd(context.Background(), c.ns+":"+s, members[:k]...).Err())
		members = members[k:]
	}
}

func itoa(n int) string { return fmt.Sprint(n) }

// notice is the line a write command run by run says last on stderr: where it went.
func (c *cliEnv) notice(cmd string) string {
	return "exq " + cmd + ": sent to " + c.url + " ($EXQ_REDIS_URL), namespace \"" + c.ns + "\" (--namespace)\n"
}

// cutNotice checks that stderr ends with write command cmd's notice and returns it without.
func (c *cliEnv) cutNotice(stderr, cmd string) string {
	c.t.Helper()
	rest, ok := strings.CutSuffix(stderr, c.notice(cmd))
	require.True(c.t, ok, "stderr ends with where exq %s went: %q", cmd, stderr)
	return rest
}
