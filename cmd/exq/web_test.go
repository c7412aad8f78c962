package main

import (
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// startWeb runs `exq web` on a free port and returns the base URL it says it serves on.
func startWeb(t *testing.T, c *cliEnv, args ...string) (base string, cmd *exec.Cmd, stderr *lockedBuffer) {
	t.Helper()
	if !slices.Contains(args, "--namespace") {
		args = append(args, "--namespace", c.ns)
	}
	cmd = exec.Command(exqBin, append([]string{"web", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = []string{"EXQ_REDIS_URL=" + c.url}
	stderr = &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	serving := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+\S*)/`)
	testutil.WaitFor(t, "exq web says where it serves", func() bool { return serving.MatchString(stderr.String()) })
	return serving.FindStringSubmatch(stderr.String())[1], cmd, stderr
}

func TestWebServesTheDashboardUntilInterrupted(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 3)
	base, cmd, stderr := startWeb(t, c)
	assert.Contains(t, stderr.String(), `serving namespace "`+c.ns+`"`)

	res, err := http.Get(base + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, string(body), "Dashboard")
	assert.Regexp(t, `>3</`, string(body), "the 3 enqueued jobs are counted")

	// A change without the CSRF token is refused, and the queue stays.
	res, err = http.PostForm(base+"/queues/mail/delete", url.Values{})
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.EqualValues(t, 3, c.rdb.LLen(t.Context(), c.ns+":queue:mail").Val())

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "a signal is a normal end: exit 0\n%s", stderr.String())
}

func TestWebReadOnlyShowsNoButtons(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 1)
	base, _, _ := startWeb(t, c, "--read-only")
	res, err := http.Get(base + "/queues")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Contains(t, string(body), "mail")
	assert.NotContains(t, strings.ToLower(string(body)), `method="post"`)
}

func TestWebBadFlagsExitTwoAndServeNothing(t *testing.T) {
	c := newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"web", "--addr", "nonsense", "--namespace", c.ns}, "--addr"},
		{[]string{"web", "--addr", "127.0.0.1:0", "--prefix", "no-slash", "--namespace", c.ns}, "--prefix"},
	} {
		r := runBin(t, exqBin, c.url, tc.args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", tc.args, r.errOut)
		assert.Contains(t, r.errOut, tc.want, "%v", tc.args)
		assert.NotContains(t, r.errOut, "serving", "%v", tc.args)
	}
}

func TestWebServesShardsWithAListOfNamespaces(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 2)
	other := c.ns + "-b"
	base, _, stderr := startWeb(t, c, "--namespace", c.ns+","+other)
	assert.Contains(t, stderr.String(), "(sharded)")
	for path, want := range map[string]string{"/": "<h1>Shards</h1>", "/shards/0/queues": "mail", "/shards/1/": "Dashboard"} {
		res, err := http.Get(base + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, path)
		assert.Contains(t, string(body), want, path)
	}
}
