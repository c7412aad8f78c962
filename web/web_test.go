package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// TestMain fails the package if a test leaves a goroutine behind (the handler starts none;
// the live nodes some tests start must be stopped) and stops the private redis-server.
func TestMain(m *testing.M) { testutil.MainLeak(m) }

// quiet discards logs (the test client's MaxRetries warning, expected 404s).
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixture is one test's Redis namespace, its API and a dashboard on it.
type fixture struct {
	t   *testing.T
	rdb *redis.Client // the test's own reads and writes (on a cluster: the master of ns's slot)
	// client is what the API, nodes and clients under test get: rdb, or with
	// EXQ_TEST_CLUSTER=1 a client of a private 3-master Redis Cluster (ns then has a hash tag).
	client redis.UniversalClient
	ns     string
	keys   wire.Keys
	api    *exq.API
	h      http.Handler
	prefix string
	token  string // the CSRF cookie a first GET got
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	return newFixtureOn(t, o, false)
}

// newBigFixture is newFixture on a redis-server of the test's own (but on a Cluster), for
// records of megabytes (testutil.PrivateRedis).
func newBigFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	return newFixtureOn(t, o, true)
}

func newFixtureOn(t *testing.T, o Options, private bool) *fixture {
	t.Helper()
	var (
		rdb    *redis.Client
		client redis.UniversalClient
		ns     string
	)
	switch {
	case testutil.OnCluster():
		rdb, client, ns = testutil.ClusterRedis(t)
	case private:
		rdb, _, ns = testutil.PrivateRedis(t)
		client = rdb
	default:
		rdb, ns = testutil.Redis(t)
		client = rdb
	}
	api, err := exq.NewAPI(context.Background(), exq.ClientOptions{Redis: client, Namespace: ns, Logger: quiet})
	require.NoError(t, err)
	if o.Logger == nil {
		o.Logger = quiet
	}
	if o.AllowedHosts == nil {
		o.AllowedHosts = []string{"example.com"} // httptest.NewRequest's Host
	}
	f := &fixture{t: t, rdb: rdb, client: client, ns: ns, keys: wire.NewKeys(ns), api: api, h: New(api, o), prefix: strings.TrimRight(o.Prefix, "/")}
	return f
}

// do sends a request to the handler and returns the response with its body read.
func (f *fixture) do(req *http.Request) (*http.Response, string) {
	f.t.Helper()
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// get fetches a path under the prefix and remembers the CSRF cookie.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodGet, f.prefix+path, nil)
	if f.token != "" {
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: f.token})
	}
	res, body := f.do(req)
	for _, c := range res.Cookies() {
		if c.Name == csrfCookie {
			f.token = c.Value
		}
	}
	return res.StatusCode, body
}

// page fetches a path and requires 200.
func (f *fixture) page(path string) string {
	f.t.Helper()
	code, body := f.get(path)
	require.Equal(f.t, http.StatusOK, code, "GET %s: %s", path, body)
	return body
}

// post sends a form with the CSRF token (after a GET to get one) and returns the status and
// the redirect's target.
func (f *fixture) post(path string, form url.Values) (int, string) {
	f.t.Helper()
	if f.token == "" {
		f.get("/")
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set(csrfField, f.token)
	return f.rawPost(path, form, f.token, nil)
}

func (f *fixture) rawPost(path string, form url.Values, cookie string, hdr http.Header) (int, string) {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, f.prefix+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header[k] = v
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: csrfCookie, Value: cookie})
	}
	res, _ := f.do(req)
	return res.StatusCode, res.Header.Get("Location")
}

func (f *fixture) zadd(key string, at time.Time, raw string) {
	f.t.Helper()
	require.NoError(f.t, f.rdb.ZAdd(context.Background(), key, redis.Z{Score: float64(at.UnixMicro()) / 1e6, Member: raw}).Err())
}

func (f *fixture) push(q, raw string) {
	f.t.Helper()
	ctx := context.Background()
	require.NoError(f.t, f.rdb.SAdd(ctx, f.keys.Queues(), q).Err())
	require.NoError(f.t, f.rdb.LPush(ctx, f.keys.Queue(q), raw).Err())
}

func (f *fixture) members(key string) []string {
	f.t.Helper()
	m, err := f.rdb.ZRange(context.Background(), key, 0, -1).Result()
	require.NoError(f.t, err)
	return m
}

func (f *fixture) list(key string) []string {
	f.t.Helper()
	m, err := f.rdb.LRange(context.Background(), key, 0, -1).Result()
	require.NoError(f.t, err)
	return m
}

func job(jid, queue, class, args string) string {
	return fmt.Sprintf(`{"class":%q,"args":%s,"queue":%q,"jid":%q,"enqueued_at":1796010415.5,"retry":25,"retry_count":2,"error_class":"*errors.errorString","error_message":"boom %s"}`,
		class, args, queue, jid, jid)
}

// seed puts jobs everywhere the pages look, and counters for the graphs.
func (f *fixture) seed() {
	f.t.Helper()
	ctx := context.Background()
	now := time.Now()
	f.push("mail", job("q1", "mail", "Mailer", `[1,"welcome"]`))
	f.push("mail", job("q2", "mail", "Mailer", `[2,"tips"]`))
	f.push("default", job("q3", "default", "Report", `[]`))
	f.zadd(f.keys.Retry(), now.Add(time.Minute), job("r1", "mail", "Mailer", `[3]`))
	f.zadd(f.keys.Retry(), now.Add(2*time.Minute), job("r2", "default", "Report", `["x"]`))
	f.zadd(f.keys.Retry(), now.Add(3*time.Minute), job("r3", "mail", "Other", `["needle"]`))
	f.zadd(f.keys.Schedule(), now.Add(time.Hour), job("s1", "mail", "Mailer", `[4]`))
	f.zadd(f.keys.Dead(), now.Add(-time.Hour), job("d1", "default", "Report", `[5]`))
	traced := strings.Replace(job("d2", "default", "Report", `[6]`), `"retry":25`,
		`"retry":25,"error_backtrace":"`+wire.CompressBacktrace([]string{"/app/report.go:12:in `main.Report'", "/app/x.go:3:in `<main>'"})+`"`, 1)
	f.zadd(f.keys.Dead(), now.Add(-2*time.Hour), traced)
	require.NoError(f.t, f.rdb.MSet(ctx, f.keys.Stat("processed"), 12345, f.keys.Stat("failed"), 67,
		f.keys.StatDay("processed", now), 40, f.keys.StatDay("failed", now), 3,
		f.keys.StatSecond("processed", now.Add(-3*time.Second)), 7).Err())
}

func TestEveryPageRenders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	require.NoError(t, f.api.AddPeriodic(context.Background(), exq.PeriodicJob{Name: "nightly", Spec: "0 2 * * *", Class: "Report", Args: []any{"daily"}}))
	for path, want := range map[string][]string{
		"/":                         {"12,345", "processed", "67", "<svg", "Eviction policy", `data-stat="retries">3<`, `data-stat="enqueued">3<`, `data-stat="dead">2<`},
		"/?days=7":                  {"last 7 days"},
		"/?days=90":                 {"last 90 days"},
		"/queues":                   {"mail", "default", "Pause"},
		"/queues/mail":              {"q1", "q2", "Mailer", "[1,&#34;welcome&#34;]"},
		"/queues/mail/jobs/q1":      {"Mailer", "welcome", "boom q1"},
		"/queues/mail/delete":       {"Delete queue", "2 waiting job(s)"},
		"/busy":                     {"No live processes"},
		"/retries":                  {"r1", "r2", "r3", "boom r1", "Retry Now", "Retry All…", "Kill"},
		"/retries/r2":               {"Report", "boom r2", "retry_count"},
		"/retries/all/kill":         {"Kill all: 3 job(s)"},
		"/scheduled":                {"s1", "Add to queue", "Add all to queue…"},
		"/scheduled/s1":             {"Mailer", "Add to queue"},
		"/dead":                     {"d1"},
		"/dead/d1":                  {"Report", "Retry Now"},
		"/dead/d2":                  {"Backtrace", "/app/report.go:12:in `main.Report&#39;", "in `&lt;main&gt;&#39;", "2 line(s)"},
		"/dead/all/retry":           {"Retry All: 2 job(s)"},
		"/scheduled/all/retry":      {"Add all to queue: 1 job(s)"},
		"/periodic":                 {"nightly", "0 2 * * *", "Enqueue now"},
		"/periodic/nightly":         {"nightly", "Never enqueued"},
		"/periodic/nightly/delete":  {"Delete periodic job"},
		"/search?jid=r2":            {"Retries", "/retries/r2"},
		"/search?jid=q3":            {"Queue default", "/queues/default/jobs/q3"},
		"/search?jid=nope":          {"No job has this jid"},
		"/retries?class=Mailer":     {"r1"},
		"/retries?q=needle":         {"r3"},
		"/retries?queue=default":    {"r2"},
		"/retries?sort=desc&page=1": {"r3"},
	} {
		body := f.page(path)
		for _, w := range want {
			assert.Contains(t, body, w, "GET %s", path)
		}
	}
	// Filters leave out what does not match; sorting changes the order.
	body := f.page("/retries?class=Mailer")
	assert.NotContains(t, body, ">r2<")
	assert.NotContains(t, body, ">r3<")
	asc, desc := f.page("/retries"), f.page("/retries?sort=desc")
	assert.Less(t, strings.Index(asc, ">r1<"), strings.Index(asc, ">r3<"), "soonest first by default")
	assert.Less(t, strings.Index(desc, ">r3<"), strings.Index(desc, ">r1<"), "latest first")

	for _, path := range []string{"/retries/nope", "/queues/mail/jobs/nope", "/periodic/nope", "/nowhere"} {
		code, _ := f.get(path)
		assert.Equal(t, http.StatusNotFound, code, path)
	}
}

func TestStatsJSONHasTheCountersAndTheLiveGraph(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	code, body := f.get("/stats.json")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"processed":"12,345"`)
	assert.Contains(t, body, `"retries":"3"`)
	assert.Contains(t, body, `"points":"`)
}

func TestListingsArePaged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{PageSize: 2})
	now := time.Now()
	for i := range 5 {
		f.zadd(f.keys.Dead(), now.Add(time.Duration(-i)*time.Minute), job(fmt.Sprintf("d%d", i), "q", "C", "[]"))
		f.push("q", job(fmt.Sprintf("j%d", i), "q", "C", "[]"))
	}
	p1, p3 := f.page("/dead"), f.page("/dead?page=3")
	assert.Contains(t, p1, ">d0<")
	assert.Contains(t, p1, ">d1<")
	assert.NotContains(t, p1, ">d2<")
	assert.Contains(t, p1, "Page 1 of 3")
	assert.Contains(t, p1, `href="?page=2"`)
	assert.Contains(t, p3, ">d4<")
	assert.NotContains(t, p3, "Next")
	q2 := f.page("/queues/q?page=2")
	assert.Contains(t, q2, ">j2<")
	assert.Contains(t, q2, ">j1<")
	filtered := f.page("/dead?class=C&page=2")
	assert.Contains(t, filtered, ">d2<")
	assert.Contains(t, filtered, "Next")
}

func TestSetActionsOnOneAndManyJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	r1, r2, r3 := f.members(f.keys.Retry())[0], f.members(f.keys.Retry())[1], f.members(f.keys.Retry())[2]

	code, loc := f.post("/retries/jobs", url.Values{"op": {"retry"}, "job": {r1}})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/retries?done=retried&n=1", loc)
	assert.Contains(t, f.list(f.keys.Queue("mail")), r1, "run now: in its queue, byte for byte")
	assert.NotContains(t, f.members(f.keys.Retry()), r1)
	assert.Contains(t, f.page("/retries?done=retried&n=1"), "1 job(s) moved to their queues")

	code, _ = f.post("/retries/jobs", url.Values{"op": {"kill"}, "job": {r2}})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Contains(t, f.members(f.keys.Dead()), r2, "killed: in dead")
	assert.Equal(t, []string{r3}, f.members(f.keys.Retry()))

	code, _ = f.post("/retries/jobs", url.Values{"op": {"delete"}, "job": {r3}})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Empty(t, f.members(f.keys.Retry()))

	// Bulk on the dead set: three jobs at once, run now.
	dead := f.members(f.keys.Dead())
	require.Len(t, dead, 3)
	code, loc = f.post("/dead/jobs", url.Values{"op": {"retry"}, "job": dead})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/dead?done=retried&n=3", loc)
	assert.Empty(t, f.members(f.keys.Dead()))
	assert.Len(t, f.list(f.keys.Queue("default")), 4)

	code, _ = f.post("/dead/jobs", url.Values{"op": {"kill"}, "job": dead})
	assert.Equal(t, http.StatusBadRequest, code, "dead jobs cannot be killed")

	s1 := f.members(f.keys.Schedule())
	code, _ = f.post("/scheduled/jobs", url.Values{"op": {"kill"}, "job": s1})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Empty(t, f.members(f.keys.Schedule()))
	assert.Equal(t, s1, f.members(f.keys.Dead()))
}

func TestSetAllActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	code, loc := f.post("/retries/all/kill", nil)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/retries?done=killed&n=3", loc)
	assert.Empty(t, f.members(f.keys.Retry()))
	assert.Len(t, f.members(f.keys.Dead()), 5)

	code, loc = f.post("/dead/all/retry", nil)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/dead?done=retried&n=5", loc)
	assert.Empty(t, f.members(f.keys.Dead()))

	code, _ = f.post("/scheduled/all/delete", nil)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Empty(t, f.members(f.keys.Schedule()))

	code, _ = f.post("/dead/all/kill", nil)
	assert.Equal(t, http.StatusNotFound, code)
}

func TestQueueActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	ctx := context.Background()
	code, loc := f.post("/queues/mail/pause", nil)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/queues?done=paused&n=0", loc)
	paused, _ := f.api.PausedQueues(ctx)
	assert.Equal(t, []string{"mail"}, paused)
	body := f.page("/queues")
	assert.Contains(t, body, "paused")
	assert.Contains(t, body, "Resume")

	code, _ = f.post("/queues/mail/resume", nil)
	require.Equal(t, http.StatusSeeOther, code)
	paused, _ = f.api.PausedQueues(ctx)
	assert.Empty(t, paused)

	// Delete ticked jobs of a queue.
	q1 := f.list(f.keys.Queue("mail"))[1]
	code, loc = f.post("/queues/mail/jobs", url.Values{"op": {"delete"}, "job": {q1}})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/queues/mail?done=deleted&n=1", loc)
	assert.Len(t, f.list(f.keys.Queue("mail")), 1)

	// The confirmation page changes nothing; its POST deletes the queue.
	f.page("/queues/mail/delete")
	assert.Len(t, f.list(f.keys.Queue("mail")), 1)
	code, _ = f.post("/queues/mail/delete", nil)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Empty(t, f.list(f.keys.Queue("mail")))
	qs, _ := f.api.Queues(ctx)
	assert.Equal(t, []string{"default"}, qs)
}

func TestPeriodicActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	require.NoError(t, f.api.AddPeriodic(ctx, exq.PeriodicJob{Name: "nightly", Spec: "0 2 * * *", Queue: "reports", Class: "Report"}))

	code, loc := f.post("/periodic/nightly/enqueue", nil)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/periodic/nightly?done=enqueued&n=0", loc)
	assert.Len(t, f.list(f.keys.Queue("reports")), 1)
	hist, _ := f.api.PeriodicHistory(ctx, "nightly")
	require.Len(t, hist, 1)
	assert.Contains(t, f.page("/periodic/nightly"), hist[0].JID, "the history lists the enqueue")

	code, _ = f.post("/periodic/nightly/disable", nil)
	require.Equal(t, http.StatusSeeOther, code)
	p, _ := f.api.PeriodicJob(ctx, "nightly")
	assert.False(t, p.Enabled)
	code, _ = f.post("/periodic/nightly/enable", nil)
	require.Equal(t, http.StatusSeeOther, code)
	p, _ = f.api.PeriodicJob(ctx, "nightly")
	assert.True(t, p.Enabled)

	f.token = ""
	f.get("/periodic/nightly") // a back field pointing at the page that goes away
	form := url.Values{"back": {"/periodic/nightly"}}
	code, loc = f.post("/periodic/nightly/delete", form)
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/periodic?done=pdeleted&n=0", loc)
	_, err := f.api.PeriodicJob(ctx, "nightly")
	assert.ErrorIs(t, err, exq.ErrPeriodicNotFound)
	code, _ = f.post("/periodic/nightly/enable", nil)
	assert.Equal(t, http.StatusNotFound, code)
}

// liveNode starts an exq node on the fixture's namespace with a worker that blocks until the
// test ends (or its job is cancelled), and stops it when the test ends.
func (f *fixture) liveNode() (*exq.Exq, chan string) {
	f.t.Helper()
	started := make(chan string, 10)
	release := make(chan struct{})
	e, err := exq.Start(context.Background(), exq.Options{Redis: f.client, Namespace: f.ns, Queues: []exq.Queue{{Name: "work", Concurrency: 2, GlobalLimit: 2, Rate: exq.Rate{N: 50, Per: time.Second}}},
		PollTimeout: 20 * time.Millisecond, Logger: quiet,
		Workers: map[string]exq.Worker{"Block": exq.WorkerFunc(func(ctx context.Context, j *exq.Job) error {
			if err := exq.SetProgress(ctx, 0.4, "<i>step</i> 2"); err != nil {
				return err
			}
			started <- j.JID
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-release:
				return nil
			}
		})}})
	require.NoError(f.t, err)
	f.t.Cleanup(func() {
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(f.t, e.Stop(ctx))
	})
	return e, started
}

func TestBusyPageAndNodeActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	e, started := f.liveNode()
	ctx := context.Background()
	c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: f.client, Namespace: f.ns, Logger: quiet})
	require.NoError(t, err)
	jid, err := c.Enqueue(ctx, "work", "Block", []any{"<b>busy</b>"})
	require.NoError(t, err)
	require.Equal(t, jid, <-started)
	testutil.WaitFor(t, "the busy page shows the node and its job", func() bool {
		_, body := f.get("/busy")
		return strings.Contains(body, e.NodeID()) && strings.Contains(body, jid) && strings.Contains(body, "exq (Go)")
	})
	body := f.page("/busy")
	assert.Contains(t, body, "exq-go")
	queues := f.page("/queues")
	assert.Contains(t, queues, "<td>1/2</td>", "a lease of the cluster-wide limit is held")
	assert.Contains(t, queues, "50 per second")
	assert.Contains(t, body, "&lt;b&gt;busy&lt;/b&gt;")
	testutil.WaitFor(t, "the busy page shows the job's progress", func() bool {
		_, body := f.get("/busy")
		return strings.Contains(body, `<progress value="0.4" max="1">40%</progress> 40%<br><small>&lt;i&gt;step&lt;/i&gt; 2</small>`)
	})
	assert.Contains(t, f.page("/search?jid="+jid), "Running on "+e.NodeID())

	code, _ := f.post("/busy/cancel", url.Values{"jid": {jid}})
	require.Equal(t, http.StatusSeeOther, code)
	testutil.WaitFor(t, "the cancelled job is dead", func() bool {
		_, err := f.api.Find(ctx, exq.DeadSet, jid)
		return err == nil
	})

	code, loc := f.post("/busy/signal", url.Values{"node": {e.NodeID()}, "signal": {"quiet"}})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/busy?done=quieted&n=1", loc)
	testutil.WaitFor(t, "the node is quiet", func() bool {
		p, _ := f.api.Processes(ctx)
		return len(p) == 1 && p[0].Quiet
	})
	code, _ = f.post("/busy/signal", url.Values{"node": {"*"}, "signal": {"stop"}})
	require.Equal(t, http.StatusSeeOther, code)
	select {
	case <-e.Done():
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the node did not hear the stop signal")
	}
	code, _ = f.post("/busy/signal", url.Values{"node": {e.NodeID()}, "signal": {"KILL"}})
	assert.Equal(t, http.StatusBadRequest, code)
}

func TestPostsWithoutAValidTokenAreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	f.get("/")
	ctx := context.Background()
	for name, c := range map[string]struct {
		form   url.Values
		cookie string
		hdr    http.Header
	}{
		"no token, no cookie":  {url.Values{}, "", nil},
		"no token":             {url.Values{}, f.token, nil},
		"token without cookie": {url.Values{csrfField: {f.token}}, "", nil},
		"another token":        {url.Values{csrfField: {strings.Repeat("ab", 32)}}, f.token, nil},
		"cross-site fetch":     {url.Values{csrfField: {f.token}}, f.token, http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		"foreign origin":       {url.Values{csrfField: {f.token}}, f.token, http.Header{"Origin": {"https://evil.example"}}},
	} {
		code, _ := f.rawPost("/queues/mail/pause", c.form, c.cookie, c.hdr)
		assert.Equal(t, http.StatusForbidden, code, name)
	}
	paused, _ := f.api.PausedQueues(ctx)
	assert.Empty(t, paused, "no refused POST changed anything")
	code, _ := f.rawPost("/queues/mail/pause", url.Values{csrfField: {f.token}}, f.token, http.Header{"Origin": {"http://example.com"}, "Sec-Fetch-Site": {"same-origin"}})
	assert.Equal(t, http.StatusSeeOther, code, "the same origin with the token passes")
}

func TestReadOnlyHidesAndRefusesChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ReadOnly: true})
	f.seed()
	require.NoError(t, f.api.AddPeriodic(context.Background(), exq.PeriodicJob{Name: "nightly", Spec: "0 2 * * *", Class: "Report"}))
	for _, path := range []string{"/", "/queues", "/queues/mail", "/retries", "/retries/r1", "/scheduled", "/dead", "/dead/d1", "/busy", "/periodic", "/periodic/nightly", "/queues/mail/delete"} {
		body := f.page(path)
		assert.NotContains(t, body, `method="post"`, path)
		assert.NotContains(t, body, "Retry Now", path)
		assert.NotContains(t, body, "Add to queue", path)
		assert.Contains(t, body, "read-only", path)
	}
	code, _ := f.post("/queues/mail/pause", nil)
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = f.post("/retries/all/delete", nil)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Len(t, f.members(f.keys.Retry()), 3)
	paused, _ := f.api.PausedQueues(context.Background())
	assert.Empty(t, paused)
}

func TestJobContentIsEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	payload := `["<script>alert(1)</script>","\"><img src=x onerror=alert(1)>"]`
	raw := `{"class":"<script>alert(2)</script>","args":` + payload + `,"queue":"x<svg onload=alert(3)>","jid":"j\"><img src=x onerror=alert(4)>","retry":1,"error_message":"<iframe src=javascript:alert(5)>"}`
	f.zadd(f.keys.Retry(), time.Now(), raw)
	f.push("x<svg onload=alert(3)>", raw)
	jid := `j"><img src=x onerror=alert(4)>`
	pages := []string{"/retries", "/retries/" + url.PathEscape(jid), "/queues", "/queues/" + url.PathEscape("x<svg onload=alert(3)>"),
		"/search?jid=" + url.QueryEscape(jid)}
	tag := regexp.MustCompile(`(?i)<(script|img|svg onload|iframe)[\s>]`)
	for _, path := range pages {
		body := f.page(path)
		for _, m := range tag.FindAllString(body, -1) {
			if strings.HasPrefix(strings.ToLower(m), "<script") {
				// Only the page's own script tag, with a src, is allowed.
				assert.Regexp(t, `<script src="[^"]*/static/app.js\?v=[0-9a-f]+" defer></script>`, body, path)
				assert.Equal(t, 1, strings.Count(body, "<script"), "GET %s: %s", path, body)
				continue
			}
			if m == "<svg " || m == "<svg>" {
				continue
			}
			t.Errorf("GET %s: unescaped markup %q from job content", path, m)
		}
		assert.NotContains(t, body, "onerror=alert(1)>", path)
		if path != "/queues" { // the one page that shows no job
			assert.Contains(t, body, "&lt;script&gt;alert(", path)
		}
	}
	body := f.page("/retries/" + url.PathEscape(jid))
	assert.Contains(t, body, "&lt;iframe src=javascript:alert(5)&gt;")
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	res, _ := f.do(req)
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		assert.Contains(t, csp, want)
	}
	assert.NotContains(t, csp, "unsafe-inline")
	assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == csrfCookie {
			cookie = c
		}
	}
	require.NotNil(t, cookie)
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite)

	for _, asset := range []string{"/static/app.css", "/static/app.js"} {
		code, body := f.get(asset)
		assert.Equal(t, http.StatusOK, code)
		assert.NotEmpty(t, body)
	}
}

func TestPrefixWithAndWithoutStripPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Prefix: "/admin/exq/"})
	f.seed()
	mux := http.NewServeMux()
	mux.Handle("/admin/exq/", f.h)
	stripped := http.NewServeMux()
	stripped.Handle("/admin/exq/", http.StripPrefix("/admin/exq", f.h))
	for name, h := range map[string]http.Handler{"mounted": mux, "StripPrefix": stripped} {
		f.h = h
		body := f.page("/retries")
		assert.Contains(t, body, `href="/admin/exq/retries/r`, name)
		assert.Contains(t, body, `href="/admin/exq/static/app.css?v=`+assetVersion+`"`, name)
		assert.Contains(t, body, `action="/admin/exq/retries/jobs"`, name)
		assert.Contains(t, body, `name="back" value="/admin/exq/retries"`, name)

		// A queue whose name holds a slash, a space and a percent sign reaches its page.
		f.push("team/mail 100%", job("slash-1", "team/mail 100%", "C", "[]"))
		qs := f.page("/queues")
		assert.Contains(t, qs, `href="/admin/exq/queues/team%2Fmail%20100%25"`, name)
		qp := f.page("/queues/team%2Fmail%20100%25")
		assert.Contains(t, qp, "slash-1", name)
		assert.Contains(t, qp, `name="back" value="/admin/exq/queues/team%2Fmail%20100%25"`, name)
		assert.Contains(t, f.page("/queues/team%2Fmail%20100%25/jobs/slash-1"), "slash-1", name)
		// exq refuses to pause a name with a slash, which Sidekiq Web cannot route to.
		code, _ := f.post("/queues/team%2Fmail%20100%25/pause", nil)
		assert.Equal(t, http.StatusBadRequest, code, name)
		f.push("team mail 100%", job("space-1", "team mail 100%", "C", "[]"))
		code, _ = f.post("/queues/team%20mail%20100%25/pause", nil)
		require.Equal(t, http.StatusSeeOther, code, name)
		paused, _ := f.api.PausedQueues(context.Background())
		assert.Equal(t, []string{"team mail 100%"}, paused, name)
		require.NoError(t, f.api.ResumeQueue(context.Background(), "team mail 100%"))

		raw := f.members(f.keys.Retry())[0]
		code, loc := f.post("/retries/jobs", url.Values{"op": {"delete"}, "job": {raw}, "back": {"/admin/exq/retries?page=1&sort=desc"}})
		require.Equal(t, http.StatusSeeOther, code, name)
		assert.Equal(t, "/admin/exq/retries?done=deleted&n=1&page=1&sort=desc", loc, name)
		for _, evil := range []string{"//evil.example/x", "https://evil.example/admin/exq/", "/admin/exq/../../x", "/\\evil.example", "/other", "/admin/exq//evil.example", "/admin/exqx"} {
			code, loc = f.post("/retries/jobs", url.Values{"op": {"delete"}, "job": {"gone"}, "back": {evil}})
			require.Equal(t, http.StatusSeeOther, code, name)
			assert.Equal(t, "/admin/exq/retries?done=deleted&n=0", loc, "%s: back=%q", name, evil)
		}
	}
	f.h = New(f.api, Options{Prefix: "/admin/exq", AllowedHosts: []string{"example.com"}})
	req := httptest.NewRequest(http.MethodGet, "/admin/exq", nil)
	res, _ := f.do(req)
	assert.Equal(t, http.StatusFound, res.StatusCode)
	assert.Equal(t, "/admin/exq/", res.Header.Get("Location"))

	for _, bad := range []string{"admin", "//evil.example", "/a/../b", "/a b", "/a?b", `/\evil`, "/a%2Fb"} {
		assert.Panics(t, func() { New(f.api, Options{Prefix: bad}) }, bad)
	}
}

func TestPayloadFormatterIsUsedAndEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{PayloadFormatter: func(class string, args json.RawMessage) string {
		return class + " with <" + fmt.Sprint(len(args)) + " bytes>"
	}})
	f.seed()
	assert.Contains(t, f.page("/retries"), "Mailer with &lt;3 bytes&gt;")
	assert.Contains(t, f.page("/retries/r1"), "Mailer with &lt;3 bytes&gt;")
}
