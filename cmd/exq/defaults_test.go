package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runEnv runs the command in this process with the given environment (EXQ_REDIS_URL is the
// test Redis unless vars says otherwise) and no --namespace added.
func (c *cliEnv) runEnv(vars map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	e := env{getenv: func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		if k == "EXQ_REDIS_URL" {
			return c.url
		}
		return ""
	}, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	code = run(context.Background(), args, e)
	return code, out.String(), errOut.String()
}

func TestEXQNamespaceStandsForNamespaceAsEXQRedisURLForRedisURL(t *testing.T) {
	c := newCLIEnv(t)
	code, out, errOut := c.runEnv(map[string]string{"EXQ_NAMESPACE": c.ns}, "enqueue", "default", "W", "[7]", "--json")
	require.Equal(t, 0, code, errOut)
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	raw, err := c.rdb.LRange(context.Background(), c.ns+":queue:default", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, raw, 1, "the job went to $EXQ_NAMESPACE")
	assert.Contains(t, raw[0], r["jid"].(string))

	// -n wins over the variable.
	code, _, errOut = c.runEnv(map[string]string{"EXQ_NAMESPACE": "elsewhere"}, "enqueue", "default", "W", "-n", c.ns)
	require.Equal(t, 0, code, errOut)
	assert.EqualValues(t, 2, c.rdb.LLen(context.Background(), c.ns+":queue:default").Val())
	assert.Empty(t, c.rdbKeys("elsewhere:*"))
}

func (c *cliEnv) rdbKeys(pattern string) []string {
	k, err := c.rdb.Keys(context.Background(), pattern).Result()
	require.NoError(c.t, err)
	return k
}

// enqueue defaults ARGS to [] as cron add does, and an --at that has passed runs the job now,
// as EnqueueAt does.
func TestEnqueueDefaultsArgsAndRunsAPastAtNow(t *testing.T) {
	c := newCLIEnv(t)
	code, out, errOut := c.run("enqueue", "default", "W", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"jid"`)
	code, out, errOut = c.run("enqueue", "default", "W", "[1]", "--at", "2001-01-01T00:00:00Z", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "--at 2001-01-01T00:00:00Z has passed: the job runs now")
	assert.NotContains(t, out, `"at"`, "enqueued, not scheduled")
	raw, err := c.rdb.LRange(context.Background(), c.ns+":queue:default", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, raw, 2)
	assert.Contains(t, raw[1], `"args":[]`)
	assert.Contains(t, raw[0], `"args":[1]`)
	assert.Zero(t, c.rdb.ZCard(context.Background(), c.ns+":schedule").Val())
}

// Without --timezone, cron add stores SPEC without a zone: each node reads it in its local
// zone, as a PeriodicJob without Timezone; the help says so (it said UTC).
func TestCronAddWithoutTimezoneMeansTheNodesLocalZoneAsTheLibrary(t *testing.T) {
	c := newCLIEnv(t)
	code, _, errOut := c.run("cron", "add", "nightly", "0 3 * * *", "reports", "App.Report")
	require.Equal(t, 0, code, errOut)
	var list []map[string]any
	c.json(&list, "cron", "list")
	require.Len(t, list, 1)
	assert.Equal(t, "0 3 * * *", list[0]["spec"], "no zone stored")
	code, out, _ := c.run("cron", "add", "--help")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "default UTC")
	assert.Contains(t, out, "each node's local zone")
}
