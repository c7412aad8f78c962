package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// 11. processes shows when each node started and its memory; busy shows the running job's args
// and its progress (a terminal escape in its message shown escaped; valid JSON with --json).
func TestProcessesShowStartedAndRSSAndBusyShowsArgsAndProgress(t *testing.T) {
	c := newCLIEnv(t)
	block := make(chan struct{})
	defer close(block)
	e := c.start(map[string]exq.Worker{"Mail.Send": exq.WorkerFunc(func(ctx context.Context, _ *exq.Job) error {
		if err := exq.SetProgress(ctx, 0.5, "sent\x1b[2J 1 of 2"); err != nil {
			return err
		}
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	})}, exq.Queue{Name: "mail", Concurrency: 4})
	c.foreignNode("sidekiq-node-1", "Sidekiq", "legacy", "rb-1")
	code, _, errOut := c.run("enqueue", "mail", "Mail.Send", `[42,"welcome"]`, "--jid", "mail-1")
	require.Equal(t, 0, code, errOut)
	testutil.WaitFor(t, "the job runs and its progress is listed", func() bool {
		_, out, _ := c.run("busy")
		return strings.Contains(out, "mail-1") && strings.Contains(out, "50%")
	})

	code, out, errOut := c.run("processes")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^NODE +RUNTIME +HOST +PID +QUEUES +BUSY +STATE +STARTED +RSS +BEAT$`, out)
	assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(e.NodeID())+` +exq +\S+ +\d+ +mail +\d/4 +`+rfc3339Re+` +\d+\.\d MB +[0-9.hms]+ ago$`, out)
	assert.Regexp(t, `(?m)^sidekiq-node-1 +Sidekiq +rb-host +13122 +legacy +1/5 +`+rfc3339Re+` +- +[0-9.hms]+ ago$`, out)

	code, out, errOut = c.run("busy")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^NODE +QUEUE +JID +CLASS +ARGS +STARTED +FOR +PROGRESS$`, out)
	assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(e.NodeID())+` +mail +mail-1 +Mail\.Send +\[42,"welcome"\] +`+rfc3339Re+` +[0-9.hms]+ +50% sent\\x1b\[2J 1 of 2$`, out)
	assert.Regexp(t, `(?m)^sidekiq-node-1 +legacy +rb-1 +Ruby\.Job +\[7,"x"\] +`+rfc3339Re+` +[0-9.hms]+ +-$`, out)
	assert.NotContains(t, out, "\x1b", "no raw escape reaches the terminal")

	code, out, errOut = c.run("busy", "--json")
	require.Equal(t, 0, code, errOut)
	var busy []struct {
		Progress *struct {
			Fraction float64 `json:"fraction"`
			Message  string  `json:"message"`
		} `json:"progress"`
		Job struct {
			JID string `json:"jid"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &busy), out)
	require.Len(t, busy, 2)
	for _, b := range busy {
		if b.Job.JID == "mail-1" {
			require.NotNil(t, b.Progress)
			assert.Equal(t, 0.5, b.Progress.Fraction)
			assert.Equal(t, "sent\x1b[2J 1 of 2", b.Progress.Message)
		} else {
			assert.Nil(t, b.Progress, "a Sidekiq job reported none")
		}
	}
}

// 11. A list that shows part of what there is says "N of TOTAL".
func TestTruncatedListsSayHowManyThereAre(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 25)
	c.zadd("dead", "d", 30)
	for _, tc := range []struct {
		args []string
		rows int
		last string
	}{
		{[]string{"jobs", "mail"}, 20, "20 of 25 (rows 1-20; see --limit and --offset)"},
		{[]string{"jobs", "mail", "--offset", "20"}, 5, "5 of 25 (rows 21-25; see --limit and --offset)"},
		{[]string{"jobs", "mail", "--limit", "25"}, 25, ""},
		{[]string{"dead"}, 20, "20 of 30 (rows 1-20; see --limit and --offset)"},
		{[]string{"dead", "--limit", "5", "--offset", "10"}, 5, "5 of 30 (rows 11-15; see --limit and --offset)"},
		{[]string{"dead", "--offset", "40"}, 0, "0 of 30 (--offset 40 is past the end)"},
		{[]string{"retries"}, 0, ""},
	} {
		code, out, errOut := c.run(tc.args...)
		require.Equal(t, 0, code, "%v: %s", tc.args, errOut)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		want := 1 + tc.rows
		if tc.last != "" {
			want++
			assert.Equal(t, tc.last, lines[len(lines)-1], "%v", tc.args)
		}
		assert.Len(t, lines, want, "%v:\n%s", tc.args, out)
	}
}

// 11. exq job shows everything about one job, wherever it is.
func TestJobShowsEverythingAboutOneJobWhereverItIs(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":dead", redis.Z{Score: 1700000400, Member: failedJob("dead-1")}).Err())
	require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":retry", redis.Z{Score: 4102444800, Member: failedJob("retry-1")}).Err())
	c.push("mail", 3)
	c.foreignNode("sidekiq-node-1", "Sidekiq", "legacy", "rb-1")
	var enq map[string]any
	c.json(&enq, "enqueue", "later", "W", `["a"]`, "--at", "2100-01-01T00:00:00Z", "--jid", "later-1")

	code, out, errOut := c.run("job", "dead-1")
	require.Equal(t, 0, code, errOut)
	for _, re := range []string{
		`(?m)^STATE +dead since 2023-11-14T22:20:00Z$`,
		`(?m)^JID +dead-1$`, `(?m)^CLASS +Billing\.Charge$`, `(?m)^QUEUE +billing$`,
		`(?m)^ARGS +\[42,\{"plan":"pro"\}\]$`, `(?m)^RETRIES +3 failed runs, 3 retries allowed$`,
		`(?m)^CREATED +2023-11-14T22:13:20Z$`, `(?m)^ENQUEUED +2023-11-14T22:15:00Z$`,
		`(?m)^FAILED +2023-11-14T22:16:40Z$`, `(?m)^RETRIED +2023-11-14T22:18:20Z$`,
		`(?m)^ERROR +Stripe::CardError: card declined$`,
		"(?m)^BACKTRACE *\n  app/billing.rb:12:in `charge'\n  app/worker.rb:3:in `perform'$",
		`(?m)^RAW *\n  \{\n    "class": "Billing\.Charge",\n    "args": \[\n      42,`,
	} {
		assert.Regexp(t, re, out)
	}
	for _, tc := range []struct{ jid, state string }{
		{"retry-1", `retry due at 2100-01-01T00:00:00Z`},
		{"later-1", `scheduled for 2100-01-01T00:00:00Z`},
		{"mail-2", `waiting in queue mail`},
		{"rb-1", `running on node sidekiq-node-1 \(Sidekiq\) since ` + rfc3339Re},
	} {
		code, out, errOut := c.run("job", tc.jid)
		require.Equal(t, 0, code, "%s: %s", tc.jid, errOut)
		assert.Regexp(t, `^STATE +`+tc.state+"\n", out, tc.jid)
		assert.Regexp(t, `(?m)^JID +`+tc.jid+`$`, out, tc.jid)
	}
	code, out, errOut = c.run("job", "nope")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "exq job: job not found: no job nope waiting, scheduled, in retry, dead or running, and no result stored (a job that succeeded leaves nothing else)\n", errOut)
	assert.EqualValues(t, 1, c.rdb.ZCard(ctx, c.ns+":dead").Val(), "looking moved nothing")
}

// stats --watch prints a table per refresh (no screen control codes in a file) until
// interrupted, which ends it with exit 0.
func TestStatsWatchRefreshesUntilInterrupted(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 2)
	cmd := exec.Command(exqBin, "stats", "--watch", "--interval", "100ms", "--namespace", c.ns)
	cmd.Env = []string{"EXQ_REDIS_URL=" + c.url}
	var out, errOut lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Start())
	testutil.WaitFor(t, "three refreshes", func() bool { return strings.Count(out.String(), "PROCESSED  FAILED") >= 3 })
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait(), errOut.String())
	assert.GreaterOrEqual(t, strings.Count(out.String(), "PROCESSED  FAILED"), 3, out.String())
	assert.Contains(t, out.String(), "every 100ms, Ctrl-C to stop")
	assert.NotContains(t, out.String(), "\x1b", "no screen control codes in a file")
	assert.Regexp(t, `(?m)^0 +0 +0 +0 +2 +0 +0 +0$`, out.String())
	assert.Empty(t, errOut.String())
}

// lockedBuffer is written by the command's output copier while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
