package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

const rfc3339Re = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`

// addCron creates a periodic job through the CLI.
func (c *cliEnv) addCron(args ...string) {
	c.t.Helper()
	code, _, errOut := c.run(append([]string{"cron", "add"}, args...)...)
	require.Equal(c.t, 0, code, "exq cron add %v: %s", args, errOut)
}

func TestCronAddThenListAsTableAndJSON(t *testing.T) {
	c := newCLIEnv(t)
	code, out, errOut := c.run("cron", "add", "nightly", "0 3 * * *", "reports", "Reports.Nightly", `[1,"full"]`,
		"--timezone", "Europe/Paris", "--description", "the nightly report")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `^added periodic job nightly \(0 3 \* \* \* Europe/Paris, next at `+rfc3339Re+`\)\n$`, out)

	var added exq.PeriodicState
	c.json(&added, "cron", "add", "paused", "*/30 * * * * *", "mail", "Mail.Digest", "--disabled")
	assert.Equal(t, "paused", added.Name)
	assert.False(t, added.Enabled)
	assert.True(t, added.Next.IsZero(), "a disabled schedule has no next tick")

	for _, args := range [][]string{{"cron"}, {"cron", "list"}} {
		code, out, errOut = c.run(args...)
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `(?m)^NAME +SPEC +QUEUE +CLASS +STATUS +LAST +NEXT$`, out, "%v: no PROBLEM column without a problem", args)
		assert.Regexp(t, `(?m)^nightly +0 3 \* \* \* Europe/Paris +reports +Reports\.Nightly +enabled +- +`+rfc3339Re+`$`, out, "%v", args)
		assert.Regexp(t, `(?m)^paused +\*/30 \* \* \* \* \* +mail +Mail\.Digest +disabled +- +-$`, out, "%v", args)
		assert.Less(t, strings.Index(out, "nightly"), strings.Index(out, "paused"), "%v: sorted by name", args)
	}

	var states []exq.PeriodicState
	c.json(&states, "cron", "list")
	require.Len(t, states, 2)
	night := states[0]
	assert.Equal(t, "nightly", night.Name)
	assert.Equal(t, "0 3 * * * Europe/Paris", night.Spec)
	assert.Equal(t, "reports", night.Queue)
	assert.Equal(t, "Reports.Nightly", night.Class)
	assert.JSONEq(t, `[1,"full"]`, string(night.Args))
	assert.Equal(t, "the nightly report", night.Description)
	assert.True(t, night.Enabled)
	assert.True(t, night.LastEnqueued.IsZero())
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	next := night.Next.In(paris)
	assert.Equal(t, []int{3, 0, 0}, []int{next.Hour(), next.Minute(), next.Second()}, "next tick at 03:00 in Paris: %v", night.Next)
	assert.WithinDuration(t, time.Now().Add(12*time.Hour), night.Next, 13*time.Hour)
	assert.True(t, night.Next.Location() == time.UTC || night.Next.Location().String() == "UTC", "JSON times in UTC: %v", night.Next.Location())
	assert.Empty(t, night.Problem)
	assert.Equal(t, "paused", states[1].Name)
	assert.JSONEq(t, `[]`, string(states[1].Args), "ARGS defaults to []")
	assert.False(t, states[1].Enabled)
}

func TestCronListShowsProblemColumnOnlyWhenAScheduleHasOne(t *testing.T) {
	c := newCLIEnv(t)
	c.addCron("fine", "@hourly", "default", "W")
	code, out, _ := c.run("cron")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "PROBLEM")

	// A schedule sidekiq-cron wrote with a spec only fugit reads.
	rdb, ctx := c.rdb, context.Background()
	require.NoError(t, rdb.SAdd(ctx, c.ns+":cron_jobs", "cron_job:ruby").Err())
	require.NoError(t, rdb.HSet(ctx, c.ns+":cron_job:ruby", "name", "ruby", "klass", "Ruby.Job", "cron", "every 3 hours",
		"status", "enabled", "message", `{"queue":"default","class":"Ruby.Job","args":[]}`).Err())

	code, out, errOut := c.run("cron", "list")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^NAME +SPEC +QUEUE +CLASS +STATUS +LAST +NEXT +PROBLEM$`, out)
	assert.Regexp(t, `(?m)^fine +@hourly +default +W +enabled +- +`+rfc3339Re+` *$`, out)
	assert.Regexp(t, `(?m)^ruby +every 3 hours +default +Ruby\.Job +enabled +- +- +\S.*$`, out)
	var states []exq.PeriodicState
	c.json(&states, "cron", "list")
	require.Len(t, states, 2)
	assert.Empty(t, states[0].Problem)
	assert.NotEmpty(t, states[1].Problem)
}

func TestCronDisableAndEnableFlipStatus(t *testing.T) {
	c := newCLIEnv(t)
	c.addCron("tick", "* * * * *", "default", "W")
	for _, tc := range []struct {
		cmd, out, status string
		enabled          bool
	}{
		{"disable", "disabled periodic job tick\n", "disabled", false},
		{"disable", "disabled periodic job tick\n", "disabled", false}, // again: no change, no error
		{"enable", "enabled periodic job tick\n", "enabled", true},
	} {
		code, out, errOut := c.run("cron", tc.cmd, "tick")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, tc.out, out)
		code, out, _ = c.run("cron")
		require.Equal(t, 0, code)
		assert.Regexp(t, `(?m)^tick +\* \* \* \* \* +default +W +`+tc.status+` `, out, tc.cmd)
		if tc.enabled {
			assert.Regexp(t, `(?m)^tick .* `+rfc3339Re+`$`, out, "an enabled schedule shows its next tick")
		} else {
			assert.Regexp(t, `(?m)^tick .* - +-$`, out, "a disabled schedule has no next tick")
		}
		var got map[string]any
		c.json(&got, "cron", tc.cmd, "tick")
		assert.Equal(t, map[string]any{"name": "tick", "enabled": tc.enabled}, got)
	}
}

func TestCronEnqueuePutsTheJobInItsQueueAndHistory(t *testing.T) {
	c := newCLIEnv(t)
	c.addCron("report", "0 0 1 1 *", "reports", "Reports.Yearly", `[2030,{"full":true}]`, "--disabled")
	code, out, errOut := c.run("cron", "history", "report")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "JID  ENQUEUED\n", out, "no enqueue yet")

	code, out, errOut = c.run("cron", "enqueue", "report")
	require.Equal(t, 0, code, errOut, "a disabled schedule is enqueued on demand")
	m := regexp.MustCompile(`^enqueued (\S+) from periodic job report\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	jid := m[1]
	var second map[string]string
	c.json(&second, "cron", "enqueue", "report")
	assert.Equal(t, "report", second["name"])
	assert.NotEmpty(t, second["jid"])
	assert.NotEqual(t, jid, second["jid"])

	var jobs []map[string]any
	c.json(&jobs, "jobs", "reports", "--oldest")
	require.Len(t, jobs, 2)
	assert.Equal(t, jid, jobs[0]["jid"])
	assert.Equal(t, "Reports.Yearly", jobs[0]["class"])
	assert.Equal(t, []any{2030.0, map[string]any{"full": true}}, jobs[0]["args"])
	assert.Equal(t, second["jid"], jobs[1]["jid"])

	code, out, errOut = c.run("cron", "history", "report")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^JID +ENQUEUED$`, out)
	assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(jid)+` +`+rfc3339Re+`$`, out)
	var runs []struct {
		JID      string    `json:"jid"`
		Enqueued time.Time `json:"enqueued_at"`
	}
	c.json(&runs, "cron", "history", "report")
	require.Len(t, runs, 2)
	assert.Equal(t, second["jid"], runs[0].JID, "newest first")
	assert.Equal(t, jid, runs[1].JID)
	assert.WithinDuration(t, time.Now(), runs[0].Enqueued, time.Minute)

	code, out, _ = c.run("cron")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^report +0 0 1 1 \* +reports +Reports\.Yearly +disabled +`+rfc3339Re+` +-$`, out, "LAST shows the enqueue")
}

func TestCronDeleteRemovesTheSchedule(t *testing.T) {
	c := newCLIEnv(t)
	c.addCron("gone", "@daily", "default", "W")
	c.addCron("kept", "@daily", "default", "W")
	code, out, errOut := c.run("cron", "delete", "gone")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "deleted periodic job gone\n", out)
	var states []exq.PeriodicState
	c.json(&states, "cron", "list")
	require.Len(t, states, 1)
	assert.Equal(t, "kept", states[0].Name)

	var got map[string]any
	c.json(&got, "cron", "delete", "kept")
	assert.Equal(t, map[string]any{"name": "kept", "deleted": true}, got)
	c.json(&states, "cron", "list")
	assert.Empty(t, states)
	code, out, _ = c.run("cron")
	require.Equal(t, 0, code)
	assert.Equal(t, "NAME  SPEC  QUEUE  CLASS  STATUS  LAST  NEXT\n", out)
}

func TestCronUnknownNameIsNotFound(t *testing.T) {
	c := newCLIEnv(t)
	c.addCron("known", "@daily", "default", "W")
	for _, sub := range []string{"history", "enqueue", "enable", "disable", "delete"} {
		code, out, errOut := c.run("cron", sub, "nope")
		assert.Equal(t, 1, code, sub)
		assert.Empty(t, out, sub)
		assert.Equal(t, "exq cron "+sub+": periodic job not found: \"nope\"\n", errOut, sub)
	}
	var states []exq.PeriodicState
	c.json(&states, "cron", "list")
	require.Len(t, states, 1, "the other schedule is untouched")
	assert.True(t, states[0].Enabled)
}

func TestCronAddExistingNameFailsAndKeepsTheSchedule(t *testing.T) {
	c := newCLIEnv(t)
	c.addCron("dup", "@daily", "default", "First")
	code, out, errOut := c.run("cron", "add", "dup", "@hourly", "other", "Second")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "exq cron add: periodic job exists: \"dup\"\n", errOut)
	var states []exq.PeriodicState
	c.json(&states, "cron", "list")
	require.Len(t, states, 1)
	assert.Equal(t, "First", states[0].Class)
	assert.Equal(t, "@daily", states[0].Spec)
}

func TestCronBadInputExitsTwoAndWritesNothing(t *testing.T) {
	c := newCLIEnv(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad spec", []string{"add", "x", "61 * * * *", "default", "W"}, `exq cron add: invalid periodic job "x": Spec: `},
		{"spec with too many fields", []string{"add", "x", "* * * * * * * *", "default", "W"}, `invalid periodic job "x": Spec: `},
		{"@every that divides nothing", []string{"add", "x", "@every 7m", "default", "W"}, "the interval must divide a minute, an hour or a day"},
		{"unknown time zone", []string{"add", "x", "@daily", "default", "W", "--timezone", "Mars/Olympus"}, `invalid periodic job "x": Timezone: `},
		{"empty class", []string{"add", "x", "@daily", "default", ""}, `invalid periodic job "x": Class: is empty`},
		{"name with a slash", []string{"add", "a/b", "@daily", "default", "W"}, `invalid periodic job "a/b": Name: must not contain "/"`},
		{"bad queue", []string{"add", "x", "@daily", "a::b", "W"}, `invalid periodic job "x": Queue: `},
		{"args not JSON", []string{"add", "x", "@daily", "default", "W", `[1,`}, "exq cron add: ARGS is not valid JSON: [1, (see exq cron add --help)\n"},
		{"args not a list", []string{"add", "x", "@daily", "default", "W", `{"a":1}`}, "exq cron add: ARGS must be a JSON array"},
		{"too few arguments", []string{"add", "x", "@daily", "default"}, "exq cron add: want cron add NAME SPEC QUEUE CLASS [ARGS], got 3 argument(s)"},
		{"unknown flag", []string{"add", "x", "@daily", "default", "W", "--tz", "UTC"}, "exq cron add: unknown flag: --tz"},
		{"unknown subcommand", []string{"frobnicate"}, `exq cron: want a subcommand`},
		{"list takes no name", []string{"list", "x"}, "exq cron list: want no argument, got 1 argument(s) (see exq cron list --help)\n"},
		{"enable needs a name", []string{"enable"}, "exq cron enable: want cron enable NAME, got 0 argument(s)"},
		{"history takes one name", []string{"history", "a", "b"}, "exq cron history: want cron history NAME, got 2 argument(s)"},
		{"flags of add on list", []string{"--disabled"}, "unknown flag: --disabled"},
	} {
		code, out, errOut := c.run(append([]string{"cron"}, tc.args...)...)
		assert.Equal(t, 2, code, "%s: %s", tc.name, errOut)
		assert.Empty(t, out, tc.name)
		assert.Contains(t, errOut, tc.want, tc.name)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "%s: one line: %q", tc.name, errOut)
	}
	assert.Empty(t, c.keys(), "nothing written")
}

func TestCronRefusesANamespaceList(t *testing.T) {
	s := newShardedEnv(t)
	for _, args := range [][]string{
		{"cron"},
		{"cron", "list"},
		{"cron", "add", "x", "@daily", "default", "W"},
		{"cron", "enqueue", "x"},
		{"--json", "cron", "history", "x"},
	} {
		code, out, errOut := s.run(args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Empty(t, out, "%v", args)
		assert.Contains(t, errOut, "cron works on one namespace; pass a single --namespace (run it once per shard)", "%v", args)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "%v: one line", args)
	}
	assert.Zero(t, s.keys(), "nothing written")

}
