package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 1. Global flags work before or after the command, and between its arguments.
func TestGlobalFlagsWorkInAnyPosition(t *testing.T) {
	c := newCLIEnv(t)
	c.zadd("dead", "d", 3)
	before := len(c.keys())
	for _, args := range [][]string{
		{"dead", "--json"},
		{"--json", "dead"},
		{"dead", "--json", "--limit", "2"},
		{"--redis-url", c.url, "dead", "--json"},
		{"dead", "--limit", "2", "--json", "--timeout", "30s"},
	} {
		r := runBin(t, exqBin, c.url, append(args, "--namespace", c.ns)...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.errOut)
		assert.Empty(t, r.errOut, "%v", args)
		var jobs []map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.out), &jobs), "%v: %s", args, r.out)
		assert.NotEmpty(t, jobs, "%v", args)
		assert.Equal(t, "d2", jobs[0]["jid"], "%v: most recent first", args)
	}
	// -n before the command, --json between the arguments of enqueue.
	r := runBin(t, exqBin, c.url, "-n", c.ns, "enqueue", "mail", "--json", "W", "[1]")
	require.Equal(t, 0, r.code, r.errOut)
	assert.Contains(t, r.out, `"queue": "mail"`)
	assert.Equal(t, before+2, len(c.keys()), "the enqueue wrote its queue and the queues set; nothing else did")
}

// 2. exq CMD --help and exq help CMD print the description and flags on stdout, exit 0.
func TestHelpForACommandShowsItsDescriptionAndFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"stats", "--help"}, []string{"Processed and failed counters", "--watch", "--interval", "Global Flags:", "--redis-url"}},
		{[]string{"help", "stats"}, []string{"Processed and failed counters", "--watch"}},
		{[]string{"delete", "--help"}, []string{"ask for confirmation on a terminal", "--force", "--queue", "--set"}},
		{[]string{"cron", "add", "-h"}, []string{"Create a periodic job", "--timezone"}},
		{[]string{"--help"}, []string{"Exit status", "Look:", "Act:", "stats", "job", "busy", "cancel", "completion"}},
		{[]string{"completion", "bash"}, []string{"bash completion"}},
		{[]string{"completion", "zsh"}, []string{"compdef"}},
		{[]string{"completion", "fish"}, []string{"complete -c exq"}},
	} {
		r := runBin(t, exqBin, "", tc.args...)
		assert.Equal(t, 0, r.code, "%v: %s", tc.args, r.errOut)
		assert.Empty(t, r.errOut, "%v", tc.args)
		for _, w := range tc.want {
			assert.Contains(t, r.out, w, "%v", tc.args)
		}
	}
	r := runBin(t, exqBin, "", "frobnicate")
	assert.Equal(t, 2, r.code)
	assert.Equal(t, "exq: unknown command \"frobnicate\" for \"exq\" (see exq --help)\n", r.errOut)
}

// 4. Bad input exits 2 with one line naming the flag or argument, and writes nothing.
func TestBadInputExitsTwoNamingTheFlagAndWritesNothing(t *testing.T) {
	c := newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "default", "--limit", "-1"}, "exq jobs: --limit must be 1 or more, got -1"},
		{[]string{"jobs", "default", "--limit", "0"}, "--limit must be 1 or more"},
		{[]string{"dead", "--offset", "-5"}, "exq dead: --offset must not be negative, got -5"},
		{[]string{"retries", "--limit", "many"}, `invalid argument "many" for "--limit"`},
		{[]string{"enqueue", "default", "W", "[]", "--max-retries", "-3"}, "exq enqueue: --max-retries must be 0 or more, got -3"},
		{[]string{"enqueue", "default", "W", "[]", "--in", "-5m"}, "exq enqueue: --in must be positive, got -5m0s"},
		{[]string{"enqueue", "default", "W", "[]", "--in", "0s"}, "--in must be positive"},
		{[]string{"enqueue", "default", "W", "[]", "--in", "soon"}, `invalid argument "soon" for "--in"`},
		{[]string{"enqueue", "default", `[1]`, "W"}, `exq enqueue: CLASS "[1]" looks like JSON args: the order is QUEUE CLASS [ARGS]`},
		{[]string{"completion", "tcsh"}, `exq completion: no script for shell "tcsh"; supported shells: bash, zsh, fish, powershell`},
		{[]string{"completion"}, "exq completion: give a shell: bash, zsh, fish, powershell"},
		{[]string{"cron", "add", "nightly", "0 3 * * *", "App.Report", `[{"kind":"nightly"}]`}, `exq cron add: CLASS "[{\"kind\":\"nightly\"}]" looks like JSON args: the order is NAME SPEC QUEUE CLASS [ARGS]`},
		{[]string{"cron", "add", "0 3 * * *", "nightly", "reports", "App.Report"}, `exq cron add: NAME "0 3 * * *" looks like a cron SPEC: the order is NAME SPEC QUEUE CLASS [ARGS]`},
		{[]string{"cron", "add", "nightly", "reports", "@daily", "App.Report"}, `exq cron add: QUEUE "@daily" looks like a cron SPEC`},
		{[]string{"enqueue", "default", "W", "[]", "--at", "tomorrow"}, `--at "tomorrow": want an RFC 3339 time`},
		{[]string{"enqueue", "default", "W", "[]", "--in", "1m", "--at", "2090-01-01T00:00:00Z"}, "give --in or --at, not both"},
		{[]string{"enqueue", "default", "W", `[1,`}, "ARGS is not valid JSON: [1,"},
		{[]string{"enqueue", "default", "W", `{"a":1}`}, "ARGS must be a JSON array"},
		{[]string{"enqueue", "default", "", `[]`}, "class is empty"},
		{[]string{"enqueue", "a::b", "W", `[]`}, "exq enqueue: "},
		{[]string{"enqueue", "default"}, "exq enqueue: want enqueue QUEUE CLASS [ARGS], got 1 argument(s)"},
		{[]string{"jobs"}, "exq jobs: want jobs QUEUE, got 0 argument(s)"},
		{[]string{"retry"}, "give either a JID or --all"},
		{[]string{"retry", "--all", "--set", "bogus"}, `exq retry: --set "bogus": want dead, retry or schedule`},
		{[]string{"delete", "x", "--set", "bogus"}, `--set "bogus"`},
		{[]string{"delete", "--all"}, "--all needs --set"},
		{[]string{"delete", "--all", "--set", "dead"}, "exq delete: delete --all --set dead deletes every job of dead; stdin is not a terminal, so exq cannot ask: pass --force to confirm"},
		{[]string{"delete", "--queue", "default"}, "exq delete: delete --queue default deletes the queue and its jobs; stdin"},
		{[]string{"quiet"}, "exq quiet: want quiet NODE"},
		{[]string{"stats", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"stats", "--watch", "--interval", "0s"}, "--interval must be positive"},
		{[]string{"stats", "--frobnicate"}, "exq stats: unknown flag: --frobnicate"},
		{[]string{"queues", "pause", "a::b"}, "exq queues pause: "},
	} {
		code, out, errOut := c.run(tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "%v: one line: %q", tc.args, errOut)
		assert.True(t, strings.HasSuffix(errOut, "--help)\n"), "%v: points at the help: %q", tc.args, errOut)
	}
	assert.Empty(t, c.keys(), "nothing written")
}

// Shell completion offers the queues, nodes and periodic jobs that Redis holds.
func TestCompletionOffersNamesFromRedis(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 1)
	c.push("reports", 1)
	c.foreignNode("rb-1", "Sidekiq", "legacy", "j1") // a subscribed queue with no job is no queue yet
	code, _, errOut := c.run("cron", "add", "nightly", "@daily", "reports", "R")
	require.Equal(t, 0, code, errOut)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "jobs", ""}, []string{"mail", "reports"}},
		{[]string{"__complete", "queues", "pause", ""}, []string{"mail", "reports"}},
		{[]string{"__complete", "delete", "--queue", ""}, []string{"mail", "reports"}},
		{[]string{"__complete", "delete", "--set", ""}, []string{"dead", "retry", "schedule"}},
		{[]string{"__complete", "quiet", ""}, []string{"rb-1"}},
		{[]string{"__complete", "cron", "disable", ""}, []string{"nightly"}},
	} {
		r := runBin(t, exqBin, c.url, append([]string{"--namespace", c.ns}, tc.args...)...)
		require.Equal(t, 0, r.code, "%v: %s", tc.args, r.errOut)
		assert.Equal(t, strings.Join(tc.want, "\n")+"\n:4\n", r.out, "%v", tc.args)
	}
}
