package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// getWithin fetches path, failing (not hanging) when the handler takes longer than limit.
func (f *fixture) getWithin(path string, limit time.Duration) (int, string) {
	f.t.Helper()
	type res struct {
		code int
		body string
	}
	done := make(chan res, 1)
	go func() {
		code, body := f.get(path)
		done <- res{code, body}
	}()
	select {
	case r := <-done:
		return r.code, r.body
	case <-time.After(limit):
		f.t.Fatalf("GET %s did not answer within %s", path, limit)
		return 0, ""
	}
}

// Counters near the int64 limit (written by anything) draw a graph: the graph's top was
// computed by multiplying by ten until it passed the counter, which overflowed to 0 and never
// ended, so the dashboard and stats.json spun for ever.
func TestCountersNearTheInt64LimitStillDrawTheGraphs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	now := time.Now()
	const huge = math.MaxInt64
	require.NoError(t, f.rdb.MSet(context.Background(), f.keys.Stat("processed"), huge,
		f.keys.StatDay("processed", now), huge, f.keys.StatDay("failed", now.AddDate(0, 0, -1)), huge,
		f.keys.StatSecond("processed", now.Add(-3*time.Second)), huge, f.keys.StatSecond("failed", now.Add(-4*time.Second)), huge).Err())
	code, body := f.getWithin("/stats.json", 20*time.Second)
	require.Equal(t, http.StatusOK, code, body)
	var stats struct {
		Live chartJSON `json:"live"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &stats), body)
	for _, s := range stats.Live.Series {
		for _, d := range s.Dots {
			assert.True(t, d.Y >= 0 && d.Y <= chartH, "a dot inside the graph: %v", d)
		}
	}
	for _, tk := range stats.Live.YTicks {
		assert.True(t, tk.Pos >= 0 && tk.Pos <= chartH, "a tick inside the graph: %v", tk)
	}
	code, body = f.getWithin("/", 20*time.Second)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "<svg")
}

// storeWorkflow enqueues a workflow of n jobs ("j000" first, every other job waiting for it)
// and then rewrites each waiting job's stored parents with parents(i): the graph is read
// from Redis, and anything may have written it.
func (f *fixture) storeWorkflow(n int, parents func(i int) []string) string {
	f.t.Helper()
	ctx := context.Background()
	c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: f.client, Namespace: f.ns, Logger: quiet})
	require.NoError(f.t, err)
	defer c.Close()
	jobs := []exq.WorkflowJob{{Name: "j000", Queue: "q", Class: "W"}}
	for i := 1; i < n; i++ {
		jobs = append(jobs, exq.WorkflowJob{Name: fmt.Sprintf("j%03d", i), Queue: "q", Class: "W", DependsOn: []string{"j000"}})
	}
	w, err := c.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "big"}, jobs)
	require.NoError(f.t, err)
	fields := []any{}
	for i := 1; i < n; i++ {
		fields = append(fields, fmt.Sprintf("p:j%03d", i), strings.Join(parents(i), "\n"))
	}
	require.NoError(f.t, f.rdb.HSet(ctx, f.keys.WorkflowGraph(w.ID), fields...).Err())
	return w.ID
}

// 4. A workflow's page is bounded whatever its stored graph holds: a parent named 3 000 times
// is drawn and listed once (a 1.9 MB graph made a 54 MB page), a graph of 44 850 distinct
// dependencies draws maxEdgesDrawn of them, and each says so on the page.
func TestWorkflowPageIsBoundedWhateverTheGraphHolds(t *testing.T) {
	t.Parallel()
	f := newBigFixture(t, Options{})
	repeated := f.storeWorkflow(300, func(int) []string {
		p := make([]string, 3000)
		for k := range p {
			p[k] = "j000"
		}
		return p
	})
	dense := f.storeWorkflow(300, func(i int) []string {
		p := make([]string, i)
		for k := range p {
			p[k] = fmt.Sprintf("j%03d", k)
		}
		return p
	})
	// What a page of 300 jobs may take: the drawing's boxes and maxEdgesDrawn lines, and the
	// table's rows with maxParentsListed names each.
	const bound = 300*(400+maxParentsListed*8) + maxEdgesDrawn*80 + 64<<10

	body := f.page("/workflows/" + repeated)
	t.Logf("repeated: %d bytes", len(body))
	assert.Less(t, len(body), bound)
	assert.Equal(t, 299, strings.Count(body, "<line "), "one line per distinct dependency")
	assert.True(t, strings.Contains(body, "names a parent more than once (896,701 repeats)"), "the page says it listed each parent once")

	body = f.page("/workflows/" + dense)
	t.Logf("dense: %d bytes", len(body))
	assert.Less(t, len(body), bound)
	assert.Equal(t, maxEdgesDrawn, strings.Count(body, "<line "))
	assert.True(t, strings.Contains(body, "The drawing shows 2,000 of the 44,850 dependencies."), "the page says it drew some")
	assert.True(t, strings.Contains(body, "and 249 more"), "the last job lists maxParentsListed of its 299 parents")
}

// 5. Every page is bounded whatever Redis holds: a job of 100 000 fields and a 10 000-line
// backtrace shows maxFieldsShown fields and maxTraceShown lines, saying so; and a page that
// would still pass maxPageBytes (a search finding 20 000 copies of one jid) stops at it with
// a page that says why, instead of tens of megabytes.
func TestEveryPageIsBoundedWhateverTheRecords(t *testing.T) {
	t.Parallel()
	f := newBigFixture(t, Options{})
	var doc strings.Builder
	doc.WriteString(`{"class":"W","args":[],"queue":"default","jid":"wide","error_message":"` + strings.Repeat("m", 1<<20) + `"`)
	for i := range 100_000 {
		fmt.Fprintf(&doc, `,"f%06d":%d`, i, i)
	}
	lines := make([]string, 10_000)
	for i := range lines {
		lines[i] = strings.Repeat("x", 1000)
	}
	trace, err := json.Marshal(lines)
	require.NoError(t, err)
	doc.WriteString(`,"error_backtrace":` + string(trace) + `}`)
	f.zadd(f.keys.Dead(), time.Now(), doc.String())
	body := f.page("/dead/wide")
	assert.Less(t, len(body), 2<<20, "a %d-byte job", doc.Len())
	assert.True(t, strings.Contains(body, "99,805 more field(s) are not shown"), "says how many fields it left out")
	assert.True(t, strings.Contains(body, "9,500 more line(s)"), "says how many lines it left out")

	members := make([]any, 0, 20_000)
	for i := range 20_000 {
		members = append(members, redis.Z{Score: float64(i), Member: fmt.Sprintf(`{"class":"%s","args":[%d],"queue":"q","jid":"dup"}`, strings.Repeat("C", 200), i)})
	}
	for len(members) > 0 {
		k := min(len(members), 1000)
		zs := make([]redis.Z, k)
		for i := range zs {
			zs[i] = members[i].(redis.Z)
		}
		require.NoError(t, f.rdb.ZAdd(context.Background(), f.keys.Retry(), zs...).Err())
		members = members[k:]
	}
	code, body := f.get("/search?jid=dup")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.LessOrEqual(t, len(body), maxPageBytes)
	assert.True(t, strings.Contains(body, "This page would be larger than 4 MiB"), "the page says why: %.200s", body)
}

// farShown matches a time outside years 0000–9999 written as a date or an age.
var farShown = regexp.MustCompile(`[0-9]{5,}-[0-9]{2}-[0-9]{2}[T ]|[^0-9]-[0-9]+-[0-9]{2}-[0-9]{2}[T ]|106751|2562047`)

// 3. Times no calendar writer expects (a stored 1e12 seconds is year 33658, 1e300 overflows
// int64 seconds) are shown on every page that reads them, and stats.json stays JSON.
func TestPagesShowTimesPastYear9999(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: f.client, Namespace: f.ns, Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	bid, _, err := c.NewBatch(ctx, exq.BatchOptions{Description: "far"}, []exq.JobSpec{{Queue: "q", Class: "W"}})
	require.NoError(t, err)
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Batch(bid), "created_at", "1e12", "complete_at", "1e300").Err())
	w, err := c.EnqueueWorkflow(ctx, exq.WorkflowOptions{}, []exq.WorkflowJob{{Name: "a", Queue: "q", Class: "W"}})
	require.NoError(t, err)
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Workflow(w.ID), "created_at", "1e12", "finished_at", "-1e12").Err())
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Outbox(), "backlog", "1", "failed", "0", "oldest_at", "1e13", "updated_at", "1e12").Err())
	far := `{"class":"W","args":[],"queue":"q","jid":"far","created_at":1e12,"enqueued_at":1e300,"failed_at":1e12,"retried_at":1e17}`
	require.NoError(t, f.rdb.ZAdd(ctx, f.keys.Dead(), redis.Z{Score: 1e12, Member: far}).Err())
	require.NoError(t, f.rdb.ZAdd(ctx, f.keys.Retry(), redis.Z{Score: 1e15, Member: far}).Err())
	f.push("q", far)
	// A key blocked until such a time (docs/keys.md).
	require.NoError(t, f.rdb.ZAdd(ctx, f.keys.KeyBlocked("q"), redis.Z{Score: 1e12, Member: "far"}).Err())
	require.NoError(t, f.rdb.RPush(ctx, f.keys.KeyJobs("q", "far"), far).Err())
	id := "far:1:abc"
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Node(id), "info", `{"hostname":"h","started_at":1e12,"pid":1,"concurrency":5,"queues":["q"]}`,
		"busy", "1", "beat", "1e300", "quiet", "false").Err())
	payload, _ := json.Marshal(far)
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Workers(id), "t1", fmt.Sprintf(`{"queue":"q","payload":%s,"run_at":1e12}`, payload)).Err())
	require.NoError(t, f.rdb.SAdd(ctx, f.keys.Processes(), id).Err())
	// Year 10000 in UTC, 9999 in its own offset.
	require.NoError(t, f.rdb.HSet(ctx, f.keys.CronJob("far"), "name", "far", "cron", "* * * * *", "klass", "K", "queue", "q",
		"args", `[]`, "status", "enabled", "last_enqueue_time", "9999-12-31T23:59:59-23:59").Err())
	require.NoError(t, f.rdb.SAdd(ctx, f.keys.CronJobs(), "cron_job:far").Err())
	require.NoError(t, f.rdb.LPush(ctx, f.keys.CronJob("far")+":jid_history", `{"jid":"h-far","enqueued":"9999-12-31T23:59:59-23:59"}`).Err())
	for _, path := range []string{"/", "/batches", "/batches/" + bid, "/workflows", "/workflows/" + w.ID, "/dead", "/dead/far", "/retries",
		"/retries/far", "/queues/q", "/queues/q/jobs/far", "/queues/q/keys", "/search?jid=far", "/busy", "/periodic", "/periodic/far"} {
		code, body := f.get(path)
		assert.Equal(t, http.StatusOK, code, "GET %s: %.300s", path, body)
		// Such a time is "out of range", as JSON writes null for it: never a clamped year
		// (292277026596), a year of five digits or below zero, nor "106751 days ago".
		assert.NotRegexp(t, farShown, body, "GET %s shows an out-of-range time as a date", path)
		if path != "/" { // the dashboard shows no such time (the outbox's says "unreadable")
			assert.Contains(t, body, "out of range", "GET %s", path)
		}
	}
	code, body := f.get("/stats.json")
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, json.Valid([]byte(body)), body)
}

// A graph's top is a multiple of 4 at least the largest value (up to the largest int64 multiple
// of 4) and at most twice it, whatever that value: 5 to 10 runs in a second or a day (a quickstart's) made the top the int64 limit,
// and the axis read 9223372036854.775M.
func TestTheGraphsTopIsAMultipleOf4AtMostTwiceTheLargestValue(t *testing.T) {
	t.Parallel()
	check := func(v int64) {
		top := niceCeil(v)
		if top < min(v, math.MaxInt64-math.MaxInt64%4) || top%4 != 0 || (v >= 4 && v <= math.MaxInt64/2 && top > 2*v) || (v < 4 && top != 4) {
			t.Errorf("niceCeil(%d) = %d, want a multiple of 4, at least %d and at most max(4, twice it)", v, top, v)
		}
	}
	for v := int64(0); v <= 100_000; v++ {
		check(v)
	}
	for p := int64(100_000); p <= math.MaxInt64/10; p *= 10 {
		for _, v := range []int64{p - 1, p, p + 1, 2*p + 1, 4*p + 1, 5*p + 1, 8*p + 1} {
			check(v)
		}
	}
	check(math.MaxInt64)
	check(math.MaxInt64 / 2)
	c := historyChart([]time.Time{time.Now()}, []int64{5}, []int64{0})
	assert.Equal(t, "8", c.YTicks[len(c.YTicks)-1].Label, "the top tick of a day of 5 runs")
}
