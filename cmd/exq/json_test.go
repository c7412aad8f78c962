package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// failedJob is a dead or retry job as Sidekiq writes one, with every time field and a
// compressed backtrace.
func failedJob(jid string) string {
	return fmt.Sprintf(`{"class":"Billing.Charge","args":[42,{"plan":"pro"}],"queue":"billing","jid":"%s","retry":3,"retry_count":3,`+
		`"created_at":1700000000.25,"enqueued_at":1700000100.5,"failed_at":1700000200.75,"retried_at":1700000300.0,`+
		`"error_class":"Stripe::CardError","error_message":"card declined","backtrace":true,"error_backtrace":"%s"}`,
		jid, wire.CompressBacktrace([]string{"app/billing.rb:12:in `charge'", "app/worker.rb:3:in `perform'"}))
}

var (
	snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	timeKey  = regexp.MustCompile(`(^|_)at$|^beat$|^next$|^last_enqueued$`)
)

// checkSchema walks a JSON document: every key snake_case, every time RFC 3339 in UTC, no
// duration in anything but milliseconds.
func checkSchema(t *testing.T, what string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			assert.Regexp(t, snakeKey, k, "%s: key %q", what, k)
			assert.False(t, strings.HasSuffix(k, "_ns") || strings.HasSuffix(k, "_us") || k == "rtt", "%s: %q is not in ms", what, k)
			if timeKey.MatchString(k) && k != "rtt_ms" {
				s, ok := val.(string)
				if assert.True(t, ok, "%s: %q is a string time: %v", what, k, val) {
					_, err := time.Parse(time.RFC3339, s)
					assert.NoError(t, err, "%s: %q", what, k)
					assert.True(t, strings.HasSuffix(s, "Z"), "%s: %q in UTC: %s", what, k, s)
				}
			}
			if k == "args" || k == "raw" {
				continue // the job's own data
			}
			checkSchema(t, what+"."+k, val)
		}
	case []any:
		for i, e := range x {
			checkSchema(t, fmt.Sprintf("%s[%d]", what, i), e)
		}
	}
}

// 9. Every --json output follows one snake_case schema: times RFC 3339, durations in ms, jobs
// with their error and timestamps.
func TestEveryJSONOutputIsOneSnakeCaseSchema(t *testing.T) {
	c := newCLIEnv(t)
	ctx := context.Background()
	require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":dead", redis.Z{Score: 1700000400, Member: failedJob("dead-1")}).Err())
	require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":retry", redis.Z{Score: 4102444800, Member: failedJob("retry-1")}).Err())
	block := make(chan struct{})
	defer close(block)
	c.start(map[string]exq.Worker{"Long": exq.WorkerFunc(func(ctx context.Context, _ *exq.Job) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	})}, exq.Queue{Name: "default"})
	var enq map[string]any
	c.json(&enq, "enqueue", "default", "Long", `[1,"x"]`, "--jid", "running-1")
	c.json(&enq, "enqueue", "later", "W", `[]`, "--in", "1h", "--jid", "later-1")
	c.json(&enq, "cron", "add", "nightly", "@daily", "reports", "Reports.Nightly")
	testutil.WaitFor(t, "the job runs", func() bool {
		var busy []busyJSON
		c.json(&busy, "busy")
		return len(busy) == 1
	})
	c.json(&enq, "cron", "enqueue", "nightly")

	for _, args := range [][]string{
		{"stats"}, {"queues"}, {"jobs", "reports"}, {"retries"}, {"scheduled"}, {"dead"}, {"processes"}, {"busy"},
		{"job", "dead-1"}, {"job", "running-1"}, {"job", "later-1"}, {"cron"}, {"cron", "history", "nightly"},
		{"enqueue", "default", "W", "[]", "--in", "1h"}, {"queues", "pause", "other"}, {"retry", "retry-1"},
		{"delete", "later-1"}, {"delete", "--all", "--set", "retry", "--force"},
	} {
		var v any
		c.json(&v, args...)
		checkSchema(t, strings.Join(args, " "), v)
	}

	var dead []map[string]any
	c.json(&dead, "dead")
	require.Len(t, dead, 1)
	d := dead[0]
	for k, want := range map[string]any{
		"jid": "dead-1", "class": "Billing.Charge", "queue": "billing", "retry_count": 3.0, "max_retries": 3.0,
		"error_class": "Stripe::CardError", "error_message": "card declined",
		"created_at": "2023-11-14T22:13:20.25Z", "enqueued_at": "2023-11-14T22:15:00.5Z",
		"failed_at": "2023-11-14T22:16:40.75Z", "retried_at": "2023-11-14T22:18:20Z", "at": "2023-11-14T22:20:00Z",
	} {
		assert.Equal(t, want, d[k], k)
	}
	assert.Equal(t, []any{42.0, map[string]any{"plan": "pro"}}, d["args"])
	assert.Equal(t, failedJob("dead-1"), d["raw"])

	var ps []map[string]any
	c.json(&ps, "processes")
	require.Len(t, ps, 1)
	for _, k := range []string{"identity", "runtime", "hostname", "pid", "queues", "concurrency", "busy", "quiet", "started_at", "beat", "rtt_ms", "rss_kb"} {
		assert.Contains(t, ps[0], k)
	}
	assert.Equal(t, "exq", ps[0]["runtime"])
	assert.IsType(t, 0.0, ps[0]["rtt_ms"])

	var one struct {
		Places []map[string]any `json:"places"`
		Job    map[string]any   `json:"job"`
	}
	c.json(&one, "job", "dead-1")
	assert.Equal(t, []map[string]any{{"state": "dead", "queue": "billing", "at": "2023-11-14T22:20:00Z"}}, one.Places)
	assert.Equal(t, []any{"app/billing.rb:12:in `charge'", "app/worker.rb:3:in `perform'"}, one.Job["error_backtrace"])
}

// A list --json is a plain array (no "20 of N" line), so scripts can parse it.
func TestJSONListsStayParseableWhenTruncated(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 25)
	code, out, errOut := c.run("jobs", "mail", "--json")
	require.Equal(t, 0, code, errOut)
	var jobs []any
	require.NoError(t, json.Unmarshal([]byte(out), &jobs))
	assert.Len(t, jobs, 20)
}
