package main

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// withPassword is url with user "default" and a password: the test server has none, and
// accepts any password for its nopass default user, so the URL works and masking shows.
func withPassword(t *testing.T, url string) string {
	t.Helper()
	require.True(t, strings.HasPrefix(url, "redis://"), url)
	return "redis://default:s3cret@" + strings.TrimPrefix(url, "redis://")
}

func masked(url string) string { return strings.Replace(url, ":s3cret@", ":xxxxx@", 1) }

// 3. An unreachable Redis is one line on stderr (no go-redis pool noise) and exit 1.
func TestUnreachableRedisIsOneLineAndExitsOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close()) // nothing listens there now
	url := "redis://default:s3cret@127.0.0.1:" + strconv.Itoa(port) + "/0"
	for _, args := range [][]string{
		{"stats"},
		{"dead", "--json"},
		{"enqueue", "default", "W", "[]"},
		{"job", "some-jid"},
		{"delete", "--queue", "default", "--force"},
		{"cron", "list"},
	} {
		r := runBin(t, exqBin, url, args...)
		assert.Equal(t, 1, r.code, "%v", args)
		assert.Empty(t, r.out, "%v", args)
		assert.Equal(t, 1, strings.Count(r.errOut, "\n"), "%v: one line: %q", args, r.errOut)
		assert.Regexp(t, `^exq [a-z ]+: Redis unavailable at redis://default:xxxxx@127\.0\.0\.1:`+strconv.Itoa(port)+`/0: .*connection refused\n$`, r.errOut, "%v", args)
		assert.NotContains(t, r.errOut, "s3cret", "%v", args)
	}
}

// 5. A namespace with no exq/Exq/Sidekiq key at all is said on stderr, with the URL (password
// masked), where the URL came from, and the namespace; a namespace with data is not.
func TestEmptyNamespaceIsWarnedAboutWithURLAndNamespace(t *testing.T) {
	c := newCLIEnv(t)
	url := withPassword(t, c.url)
	empty := c.ns + "-typo"
	for _, tc := range []struct {
		name string
		env  string
		args []string
		from string
	}{
		{"from the environment", url, []string{"stats", "--namespace", empty}, "($EXQ_REDIS_URL)"},
		{"from the flag", "", []string{"stats", "--redis-url", url, "--namespace", empty}, "(--redis-url)"},
		{"flag over environment", c.url, []string{"dead", "--redis-url", url, "--namespace", empty}, "(--redis-url)"},
	} {
		r := runBin(t, exqBin, tc.env, tc.args...)
		require.Equal(t, 0, r.code, "%s: %s", tc.name, r.errOut)
		assert.Equal(t, "exq: warning: namespace \""+empty+"\" at "+masked(url)+" "+tc.from+
			" holds no exq, Exq or Sidekiq keys: no queue, job, process, counter or periodic job; check --namespace and --redis-url\n",
			r.errOut, tc.name)
		assert.NotContains(t, r.errOut, "s3cret", tc.name)
	}
	// A namespace with anything in it (here one dead job) is not warned about.
	c.zadd("dead", "d", 1)
	code, out, errOut := c.run("stats")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
	assert.Regexp(t, `(?m)^0 +0 +0 +0 +0 +0 +0 +1$`, out)
	// Looking wrote nothing into the empty namespace.
	assert.Empty(t, c.rdb.Keys(t.Context(), empty+":*").Val())
}

// defaultBin is the command built with its default Redis URL pointed at the private test
// server (with a password), so the default case is tested without anything on :6379.
var defaultBin struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// buildDefaultBin builds (once) the command with its default Redis URL set to url, the
// private test server's with a password.
func buildDefaultBin(t *testing.T, url string) string {
	t.Helper()
	defaultBin.once.Do(func() {
		defaultBin.path = filepath.Join(filepath.Dir(exqBin), "exq-default")
		defaultBin.out, defaultBin.err = exec.Command("go", "build", "-o", defaultBin.path,
			"-ldflags", "-X main.defaultRedisURL="+url, ".").CombinedOutput()
	})
	require.NoError(t, defaultBin.err, "%s", defaultBin.out)
	return defaultBin.path
}

// 5. Without --redis-url and $EXQ_REDIS_URL, the warning names the default URL it used.
func TestDefaultRedisURLIsNamedWhenTheNamespaceIsEmpty(t *testing.T) {
	url := withPassword(t, testutil.RedisURL(t))
	bin := buildDefaultBin(t, url)
	_, ns := testutil.Redis(t)
	r := runBin(t, bin, "", "queues", "--namespace", ns)
	require.Equal(t, 0, r.code, r.errOut)
	assert.Equal(t, "QUEUE  SIZE  STATE  LIMIT  RATE  STARTED\n", r.out)
	assert.Equal(t, "exq: warning: namespace \""+ns+"\" at "+masked(url)+" (the default: no --redis-url, no $EXQ_REDIS_URL)"+
		" holds no exq, Exq or Sidekiq keys: no queue, job, process, counter or periodic job; check --namespace and --redis-url\n", r.errOut)
}

// The built-in default is exq's.
func TestDefaultRedisURLIsExqs(t *testing.T) {
	assert.Equal(t, exq.DefaultRedisURL, defaultRedisURL)
}
