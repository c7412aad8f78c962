package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// The help of -n and --redis-url names one default, and the one in force: the environment
// variable's value when it is set (a password masked).
func TestGlobalFlagHelpNamesOneTruthfulDefault(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	for _, tc := range []struct {
		name   string
		vars   map[string]string
		ns, rd string
	}{
		{"nothing set", map[string]string{"EXQ_REDIS_URL": ""},
			`(default "exq"; $EXQ_NAMESPACE overrides it)`, `(default "redis://127.0.0.1:6379/0"; $EXQ_REDIS_URL overrides it)`},
		{"both set", map[string]string{"EXQ_NAMESPACE": "shop", "EXQ_REDIS_URL": "redis://app:s3cret@cache:6380/2"},
			`(default "shop", from $EXQ_NAMESPACE)`, `(default "redis://app:xxxxx@cache:6380/2", from $EXQ_REDIS_URL)`},
	} {
		code, out, errOut := c.runEnv(tc.vars, "--help")
		require.Equal(t, 0, code, errOut)
		lines := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			for _, f := range []string{"--namespace", "--redis-url"} {
				if strings.Contains(l, f+" string") {
					lines[f] = l
				}
			}
		}
		assert.True(t, strings.HasSuffix(lines["--namespace"], tc.ns), "%s: %q", tc.name, lines["--namespace"])
		assert.True(t, strings.HasSuffix(lines["--redis-url"], tc.rd), "%s: %q", tc.name, lines["--redis-url"])
		for f, l := range lines {
			assert.Equal(t, 1, strings.Count(l, "default"), "%s: %s names one default: %q", tc.name, f, l)
		}
		assert.NotContains(t, out, "s3cret", tc.name)
	}
}

// Every write command says on stderr, once it succeeded, which server (password masked) and
// namespace it went to and where each came from; stdout holds only its own output, and a
// read says nothing of the kind.
func TestEveryWriteSaysOnStderrWhichServerAndNamespaceItWentTo(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	e := c.start(map[string]exq.Worker{"Slow": exq.WorkerFunc(func(ctx context.Context, _ *exq.Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	})}, exq.Queue{Name: "slow"})
	slow, err := e.Enqueue(ctx, "slow", "Slow", []any{})
	require.NoError(t, err)
	testutil.WaitFor(t, "the slow job runs", func() bool {
		_, out, _ := c.run("busy", "--json")
		return strings.Contains(out, slow)
	})
	c.zadd("retry", "r", 1)
	c.zadd("dead", "d", 1)

	url := withPassword(t, c.url)
	want := "sent to " + masked(url) + " ($EXQ_REDIS_URL), namespace \"" + c.ns + "\" ($EXQ_NAMESPACE)\n"
	vars := map[string]string{"EXQ_REDIS_URL": url, "EXQ_NAMESPACE": c.ns}
	done := map[string]bool{}
	for _, tc := range []struct {
		path string
		args []string
	}{
		{"exq enqueue", []string{"enqueue", "slow", "W", "[1]"}},
		{"exq requeue", []string{"requeue", "r0"}},
		{"exq delete", []string{"delete", "d0"}},
		{"exq queues pause", []string{"queues", "pause", "slow"}},
		{"exq queues resume", []string{"queues", "resume", "slow"}},
		{"exq keys pause", []string{"keys", "pause", "slow", "tenant-1"}},
		{"exq keys resume", []string{"keys", "resume", "slow", "tenant-1"}},
		{"exq cron add", []string{"cron", "add", "nightly", "@daily", "mail", "W"}},
		{"exq cron disable", []string{"cron", "disable", "nightly"}},
		{"exq cron enable", []string{"cron", "enable", "nightly"}},
		{"exq cron enqueue", []string{"cron", "enqueue", "nightly"}},
		{"exq cron delete", []string{"cron", "delete", "nightly"}},
		{"exq cancel", []string{"cancel", slow}},
		{"exq quiet", []string{"quiet", e.NodeID()}},
		{"exq stop", []string{"stop", e.NodeID()}},
	} {
		code, out, errOut := c.runEnv(vars, tc.args...)
		require.Equal(t, 0, code, "%v: %s", tc.args, errOut)
		assert.Equal(t, tc.path+": "+want, errOut, "%v", tc.args)
		assert.NotContains(t, out, "sent to", "%v: stdout is the command's own", tc.args)
		done[tc.path] = true
	}
	assert.ElementsMatch(t, writeCommands, keys(done), "every write command is exercised")

	// --json keeps stdout one JSON document: the notice is on stderr.
	code, out, errOut := c.runEnv(vars, "enqueue", "slow", "W", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `^\{\s*"jid": "[^"]+"`, out)
	assert.Equal(t, "exq enqueue: "+want, errOut)

	// Reads say nothing of the kind.
	for _, args := range [][]string{{"stats"}, {"queues"}, {"cron", "list"}, {"dead"}} {
		code, _, errOut := c.runEnv(vars, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		assert.Empty(t, errOut, "%v", args)
	}
	// A write that fails (nothing found) says why, not where it went.
	code, _, errOut = c.runEnv(vars, "delete", "nope")
	assert.Equal(t, 1, code)
	assert.NotContains(t, errOut, "sent to")
}

// With no --redis-url, $EXQ_REDIS_URL, --namespace or $EXQ_NAMESPACE, a write names the
// default server and namespace it went to, and says they are the defaults.
func TestAWriteWithNothingGivenNamesTheDefaultServerAndNamespace(t *testing.T) {
	url := withPassword(t, testutil.RedisURL(t))
	bin := buildDefaultBin(t, url)
	rdb, _ := testutil.Redis(t)
	q := "writes-notice-" + strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(t.Name(), ""))
	t.Cleanup(func() {
		rdb.Del(context.Background(), exq.DefaultNamespace+":queue:"+q)
		rdb.SRem(context.Background(), exq.DefaultNamespace+":queues", q)
	})
	r := runBin(t, bin, "", "enqueue", q, "W")
	require.Equal(t, 0, r.code, r.errOut)
	assert.Regexp(t, `^enqueued \S+ to `+q+"\n$", r.out)
	assert.True(t, strings.HasSuffix(r.errOut, "\nexq enqueue: sent to "+masked(url)+" (the default: no --redis-url, no $EXQ_REDIS_URL),"+
		" namespace \"exq\" (the default: no --namespace, no $EXQ_NAMESPACE)\n"), "after the warning that no node takes the queue: %q", r.errOut)
	assert.EqualValues(t, 1, rdb.LLen(context.Background(), exq.DefaultNamespace+":queue:"+q).Val())
}

// Every command is either a one-shot write (writeCommands) or known not to be one: it only
// reads, or it serves until interrupted (web, outbox relay), so that a new command is
// classified on purpose.
func TestEveryCommandIsAWriteOrARead(t *testing.T) {
	t.Parallel()
	others := []string{"exq", "exq stats", "exq queues", "exq keys", "exq jobs", "exq retries", "exq scheduled", "exq dead", "exq job",
		"exq processes", "exq busy", "exq cron", "exq cron list", "exq cron history", "exq batch", "exq batch list",
		"exq batch show", "exq workflow", "exq workflow list", "exq workflow show", "exq web", "exq outbox",
		"exq outbox status", "exq outbox relay", "exq completion", "exq metrics"}
	a := &app{env: env{getenv: func(string) string { return "" }}}
	root := a.rootCmd()
	var all []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !strings.HasPrefix(c.CommandPath(), "exq completion ") {
			all = append(all, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.ElementsMatch(t, append(others, writeCommands...), all)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
