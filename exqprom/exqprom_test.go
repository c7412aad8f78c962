package exqprom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// TestMain fails the package if a test leaves a goroutine behind, and stops the private
// redis-server the tests started, as the root package's does.
func TestMain(m *testing.M) { testutil.MainLeak(m) }

func quietLogger() *slog.Logger {
	if os.Getenv("EXQ_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// server serves c on its own registry, as promhttp serves the default one.
func server(t *testing.T, c *Collector) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	t.Cleanup(srv.Close)
	return srv
}

// scraped is one parsed scrape.
type scraped map[string]*dto.MetricFamily

// scrape GETs /metrics and parses the exposition; it returns the families and how long the
// GET took (request to the last byte of the body).
func scrape(t *testing.T, srv *httptest.Server) (scraped, time.Duration) {
	t.Helper()
	began := time.Now()
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	took := time.Since(began)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	return fams, took
}

// values maps each series of family name, by its labels ("queue=a,class=Ok" with the labels
// sorted by name), to its value: the counter's, the gauge's, or the histogram's count.
func (s scraped) values(name string) map[string]float64 {
	out := map[string]float64{}
	f := s[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		var parts []string
		for _, l := range m.GetLabel() {
			parts = append(parts, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(parts)
		var v float64
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			v = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			v = m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			v = float64(m.GetHistogram().GetSampleCount())
		default:
			panic(fmt.Sprintf("unexpected type %v of %s", f.GetType(), name))
		}
		out[strings.Join(parts, ",")] = v
	}
	return out
}

// value is the value of a family's only series (-1 when it is missing).
func (s scraped) value(t *testing.T, name string) float64 {
	t.Helper()
	vs := s.values(name)
	if len(vs) == 0 {
		return -1
	}
	require.Len(t, vs, 1, name)
	return vs[""]
}

// TestMetricsOfAKnownWorkload runs a known workload on two queues through a real node whose
// Listener is the collector's, and checks every metric of a scrape against the truth and
// against what Redis holds.
func TestMetricsOfAKnownWorkload(t *testing.T) {
	ctx := context.Background()
	rdb, ns := testutil.Redis(t)
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	c := New(api, Options{CacheFor: NoCache})

	const outcomesWanted = 20 + 5 + 5 + 3 + 2 // Ok; Flaky's retries and successes; Doomed; Stuck
	var finished atomic.Int64
	allDone := make(chan struct{})
	count := func(ev exq.Event) {
		switch ev.Kind {
		case exq.JobSucceeded, exq.JobRetried, exq.JobDied, exq.JobSnoozed, exq.JobHandedBack, exq.JobNotStored:
			if finished.Add(1) == outcomesWanted {
				close(allDone)
			}
		}
	}
	fail := errors.New("boom")
	e, err := exq.Start(ctx, exq.Options{
		Redis: rdb, Namespace: ns, Logger: quietLogger(),
		Queues:               []exq.Queue{{Name: "a", Concurrency: 5}, {Name: "b", Concurrency: 5}},
		SchedulerPollTimeout: 20 * time.Millisecond,
		Backoff: func(_ int, job *exq.Job) time.Duration {
			if job.Class == "Stuck" {
				return time.Hour // stays in the retry set
			}
			return 10 * time.Millisecond
		},
		Workers: map[string]exq.Worker{
			"Ok": exq.WorkerFunc(func(context.Context, *exq.Job) error { time.Sleep(2 * time.Millisecond); return nil }),
			"Flaky": exq.WorkerFunc(func(_ context.Context, job *exq.Job) error {
				if job.RetryCount == 0 {
					return fail
				}
				return nil
			}),
			"Doomed": exq.WorkerFunc(func(context.Context, *exq.Job) error { return fail }),
			"Stuck":  exq.WorkerFunc(func(context.Context, *exq.Job) error { return fail }),
		},
		// The collector first: when the counting listener hears the last outcome, the
		// collector has counted it.
		Listeners: []exq.Listener{c.Listener(), count},
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Stop(ctx)) }()

	enqueue := func(n int, queue, class string, opts ...exq.EnqueueOption) {
		for i := range n {
			_, err := e.Enqueue(ctx, queue, class, []any{i}, opts...)
			require.NoError(t, err)
		}
	}
	enqueue(12, "a", "Ok")
	enqueue(8, "b", "Ok")
	enqueue(5, "a", "Flaky")
	enqueue(3, "b", "Doomed", exq.MaxRetries(0))
	enqueue(2, "b", "Stuck")
	enqueue(4, "c", "Waiting") // nobody works on c
	_, err = e.EnqueueIn(ctx, "a", "Later", time.Hour, []any{})
	require.NoError(t, err)

	select {
	case <-allDone:
	case <-time.After(30 * time.Second):
		t.Fatalf("only %d of %d outcomes after 30 s", finished.Load(), outcomesWanted)
	}
	// The all-time counters are flushed to Redis once a second.
	require.Eventually(t, func() bool {
		s, err := api.Stats(ctx)
		return err == nil && s.Processed == 25 && s.Failed == 10
	}, 10*time.Second, 20*time.Millisecond)

	s, _ := scrape(t, server(t, c))

	assert.Equal(t, map[string]float64{
		"class=Ok,queue=a": 12, "class=Ok,queue=b": 8, "class=Flaky,queue=a": 5, "class=Doomed,queue=b": 3,
		"class=Stuck,queue=b": 2, "class=Waiting,queue=c": 4, "class=Later,queue=a": 1,
	}, s.values("exq_jobs_enqueued_total"))

	processed := map[string]float64{}
	for _, k := range []string{"class=Ok,queue=a", "class=Ok,queue=b", "class=Flaky,queue=a", "class=Doomed,queue=b",
		"class=Stuck,queue=b", "class=Waiting,queue=c", "class=Later,queue=a"} {
		for _, o := range outcomes {
			cls, q, _ := strings.Cut(k, ",")
			processed[cls+",outcome="+o+","+q] = 0
		}
	}
	processed["class=Ok,outcome=succeeded,queue=a"] = 12
	processed["class=Ok,outcome=succeeded,queue=b"] = 8
	processed["class=Flaky,outcome=retried,queue=a"] = 5
	processed["class=Flaky,outcome=succeeded,queue=a"] = 5
	processed["class=Doomed,outcome=died,queue=b"] = 3
	processed["class=Stuck,outcome=retried,queue=b"] = 2
	assert.Equal(t, processed, s.values("exq_jobs_processed_total"))

	assert.Equal(t, map[string]float64{
		"class=Ok,queue=a": 12, "class=Ok,queue=b": 8, "class=Flaky,queue=a": 10, "class=Doomed,queue=b": 3,
		"class=Stuck,queue=b": 2, "class=Waiting,queue=c": 0, "class=Later,queue=a": 0,
	}, s.values("exq_job_duration_seconds"), "histogram counts")
	assert.Equal(t, map[string]float64{"queue=a": 0, "queue=b": 0, "queue=c": 0}, s.values("exq_jobs_in_flight"))
	assert.Equal(t, map[string]float64{"queue=a": 0, "queue=b": 0, "queue=c": 0}, s.values("exq_jobs_rescued_total"))
	assert.Equal(t, 0.0, s.value(t, "exq_redis_lost_total"))

	// What Redis holds, read directly.
	llen := func(q string) float64 { return float64(rdb.LLen(ctx, ns+":queue:"+q).Val()) }
	zcard := func(set string) float64 { return float64(rdb.ZCard(ctx, ns+":"+set).Val()) }
	assert.Equal(t, map[string]float64{"queue=a": llen("a"), "queue=b": llen("b"), "queue=c": llen("c")}, s.values("exq_queue_size"))
	assert.Equal(t, map[string]float64{"queue=a": 0, "queue=b": 0, "queue=c": 4}, s.values("exq_queue_size"))
	assert.Equal(t, zcard("retry"), s.value(t, "exq_retry_set_size"))
	assert.Equal(t, 2.0, s.value(t, "exq_retry_set_size"))
	assert.Equal(t, zcard("schedule"), s.value(t, "exq_scheduled_set_size"))
	assert.Equal(t, 1.0, s.value(t, "exq_scheduled_set_size"))
	assert.Equal(t, zcard("dead"), s.value(t, "exq_dead_set_size"))
	assert.Equal(t, 3.0, s.value(t, "exq_dead_set_size"))
	assert.Equal(t, 1.0, s.value(t, "exq_nodes"))
	assert.Equal(t, 25.0, s.value(t, "exq_processed_total"))
	assert.Equal(t, 10.0, s.value(t, "exq_failed_total"))
	assert.Equal(t, 0.0, s.value(t, "exq_scrape_errors_total"))
	assert.InDelta(t, float64(time.Now().Unix()), s.value(t, "exq_scrape_last_success_timestamp_seconds"), 5)

	lat := s.values("exq_queue_latency_seconds")
	assert.Equal(t, 0.0, lat["queue=a"])
	assert.Equal(t, 0.0, lat["queue=b"])
	assert.Greater(t, lat["queue=c"], 0.0)
	assert.Less(t, lat["queue=c"], 60.0)

	// Every family has its HELP and TYPE and follows the naming conventions.
	problems, err := promtest.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestScrapeWith100000DeadJobs: the dead set's size is one ZCARD, so a scrape of a namespace
// with 100 000 dead jobs stays fast.
func TestScrapeWith100000DeadJobs(t *testing.T) {
	ctx := context.Background()
	rdb, ns := testutil.Redis(t)
	const n, batch = 100_000, 5_000
	now := float64(time.Now().Unix())
	for start := 0; start < n; start += batch {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < start+batch; i++ {
				doc := fmt.Sprintf(`{"class":"Gone","queue":"default","args":[%d],"jid":"dead-%d","retry":0,"error_message":"boom"}`, i, i)
				p.ZAdd(ctx, ns+":dead", redis.Z{Score: now - float64(i), Member: doc})
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.EqualValues(t, n, rdb.ZCard(ctx, ns+":dead").Val())
	rdb.SAdd(ctx, ns+":queues", "default", "mail")
	rdb.LPush(ctx, ns+":queue:mail", `{"class":"Mail","queue":"mail","args":[],"jid":"m1","enqueued_at":1}`)

	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	srv := server(t, New(api, Options{CacheFor: NoCache}))
	s, _ := scrape(t, srv) // warm up: connections, first series
	require.EqualValues(t, n, s.value(t, "exq_dead_set_size"))

	var took []time.Duration
	for range 5 {
		s, d := scrape(t, srv)
		require.EqualValues(t, n, s.value(t, "exq_dead_set_size"))
		took = append(took, d)
	}
	slices.Sort(took)
	median := took[len(took)/2]
	t.Logf("scrape with %d dead jobs (no cache): median %s of %v", n, median, took)
	assert.Less(t, median, 50*time.Millisecond)
	assert.Equal(t, map[string]float64{"queue=default": 0, "queue=mail": 1}, s.values("exq_queue_size"))
}

// countingAPI returns an API on a client of its own whose commands c counts, in the namespace
// of a test Redis.
func countingAPI(t *testing.T, counter *testutil.Counter, mutate ...func(*redis.Options)) (api *exq.API, rdb *redis.Client, ns string, client *redis.Client) {
	t.Helper()
	rdb, ns = testutil.Redis(t)
	o, err := redis.ParseURL(testutil.RedisURL(t))
	require.NoError(t, err)
	for _, m := range mutate {
		m(o)
	}
	client = redis.NewClient(o)
	client.AddHook(counter)
	t.Cleanup(func() { _ = client.Close() })
	api, err = exq.NewAPI(context.Background(), exq.ClientOptions{Redis: client, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	return api, rdb, ns, client
}

// TestScrapesWithinCacheForReadRedisOnce: two scrapes (and ten at once) within CacheFor read
// Redis once; once CacheFor has passed, the next scrape reads it again; with NoCache every
// scrape does.
func TestScrapesWithinCacheForReadRedisOnce(t *testing.T) {
	counter := testutil.NewCounter()
	api, rdb, ns, _ := countingAPI(t, counter)
	rdb.ZAdd(context.Background(), ns+":dead", redis.Z{Score: 1, Member: "x"})

	srv := server(t, New(api, Options{CacheFor: time.Minute}))
	before := counter.RoundTrips()
	s1, _ := scrape(t, srv)
	afterFirst := counter.RoundTrips()
	s2, _ := scrape(t, srv)
	assert.Greater(t, afterFirst, before, "the first scrape reads Redis")
	assert.Equal(t, afterFirst, counter.RoundTrips(), "the second scrape within CacheFor reads nothing")
	assert.Equal(t, 1, counter.Count("mget"), "Stats read once")
	assert.Equal(t, 3, counter.Count("zcard"), "each set's size read once")
	assert.Equal(t, 1.0, s1.value(t, "exq_dead_set_size"))
	assert.Equal(t, 1.0, s2.value(t, "exq_dead_set_size"))

	// Ten scrapers at once on a fresh collector share one read.
	srv = server(t, New(api, Options{CacheFor: time.Minute}))
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _ := scrape(t, srv)
			assert.Equal(t, 1.0, s.value(t, "exq_dead_set_size"))
		}()
	}
	wg.Wait()
	assert.Equal(t, 2, counter.Count("mget"), "ten concurrent scrapes read Redis once")

	// Past CacheFor, the next scrape reads again. (A second: two scrapes in a row stay within
	// it on a loaded machine too, which 50 ms did not.)
	srv = server(t, New(api, Options{CacheFor: time.Second}))
	scrape(t, srv)
	scrape(t, srv)
	assert.Equal(t, 3, counter.Count("mget"))
	time.Sleep(1200 * time.Millisecond)
	scrape(t, srv)
	assert.Equal(t, 4, counter.Count("mget"))

	// NoCache: every scrape.
	srv = server(t, New(api, Options{CacheFor: NoCache}))
	scrape(t, srv)
	scrape(t, srv)
	assert.Equal(t, 6, counter.Count("mget"))
}

// TestAFailedReadServesTheLastValues: when Redis does not answer within ScrapeTimeout (a
// frozen connection, on a client without context deadlines), the scrape returns on time with
// the last values and counts one error; a read still stuck is not started again; when Redis
// fails outright, the same.
func TestAFailedReadServesTheLastValues(t *testing.T) {
	ctx := context.Background()
	rdb, ns := testutil.Redis(t)
	o, err := redis.ParseURL(testutil.RedisURL(t))
	require.NoError(t, err)
	proxy := testutil.NewProxy(t, o.Addr)
	o.Addr = proxy.Addr()
	o.ReadTimeout = 5 * time.Second // longer than the scrape timeout; and no ContextTimeoutEnabled
	client := redis.NewClient(o)
	counter := testutil.NewCounter()
	client.AddHook(counter)
	defer func() { _ = client.Close() }()
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: client, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	rdb.ZAdd(ctx, ns+":dead", redis.Z{Score: 1, Member: "x"}, redis.Z{Score: 2, Member: "y"})
	rdb.SAdd(ctx, ns+":queues", "default")

	var logged logBuffer
	c := New(api, Options{CacheFor: NoCache, ScrapeTimeout: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	srv := server(t, c)
	s, _ := scrape(t, srv)
	require.Equal(t, 2.0, s.value(t, "exq_dead_set_size"))
	require.Equal(t, 0.0, s.value(t, "exq_scrape_errors_total"))
	lastSuccess := s.value(t, "exq_scrape_last_success_timestamp_seconds")

	proxy.Freeze()
	s, took := scrape(t, srv)
	assert.GreaterOrEqual(t, took, 150*time.Millisecond)
	assert.Less(t, took, time.Second, "bounded by ScrapeTimeout, not by the client's 5 s")
	assert.Equal(t, 2.0, s.value(t, "exq_dead_set_size"), "the last value")
	assert.Equal(t, map[string]float64{"queue=default": 0}, s.values("exq_queue_size"))
	assert.Equal(t, 1.0, s.value(t, "exq_scrape_errors_total"))
	assert.Equal(t, lastSuccess, s.value(t, "exq_scrape_last_success_timestamp_seconds"))
	assert.Contains(t, logged.String(), "scrape timeout")

	// The read is still stuck: the next scrape does not start another and returns at once.
	trips := counter.RoundTrips()
	s, took = scrape(t, srv)
	assert.Less(t, took, 150*time.Millisecond)
	assert.Equal(t, trips, counter.RoundTrips())
	assert.Equal(t, 2.0, s.value(t, "exq_dead_set_size"))
	assert.Equal(t, 1.0, s.value(t, "exq_scrape_errors_total"), "one read, one error")

	proxy.Thaw()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.flight == nil
	}, 10*time.Second, 10*time.Millisecond)
	rdb.ZAdd(ctx, ns+":dead", redis.Z{Score: 3, Member: "z"})
	s, _ = scrape(t, srv)
	assert.Equal(t, 3.0, s.value(t, "exq_dead_set_size"))
	assert.Equal(t, 1.0, s.value(t, "exq_scrape_errors_total"))
	assert.Greater(t, s.value(t, "exq_scrape_last_success_timestamp_seconds"), lastSuccess)

	// Redis fails outright (here: the client is closed).
	require.NoError(t, client.Close())
	s, _ = scrape(t, srv)
	assert.Equal(t, 3.0, s.value(t, "exq_dead_set_size"))
	assert.Equal(t, 0.0, s.value(t, "exq_nodes"), "no node, before and kept")
	assert.Equal(t, 2.0, s.value(t, "exq_scrape_errors_total"))
	assert.Contains(t, logged.String(), "client is closed")
}

// logBuffer is a goroutine-safe log buffer.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestListenerEvents checks the event metrics one by one, without Redis: a poison job's death
// (no class, never started) leaves the in-flight gauge and the histogram alone, a rescue adds
// its count, a lost Redis counts; without an API no Redis metric is exported.
func TestListenerEvents(t *testing.T) {
	c := New(nil, Options{})
	l := c.Listener()
	l(exq.Event{Kind: exq.JobStarted, Queue: "q", Class: "C"})
	l(exq.Event{Kind: exq.JobStarted, Queue: "q", Class: "C"})
	l(exq.Event{Kind: exq.JobSnoozed, Queue: "q", Class: "C", Duration: 30 * time.Millisecond})
	l(exq.Event{Kind: exq.JobDied, Queue: "q", Err: errors.New("not JSON")})
	l(exq.Event{Kind: exq.JobsRescued, Queue: "q", Count: 7, From: "gone"})
	l(exq.Event{Kind: exq.RedisLost, Err: errors.New("down")})
	l(exq.Event{Kind: exq.RedisBack})
	l(exq.Event{Kind: exq.NodeStarted})
	l(exq.Event{Kind: exq.JobEnqueued, Queue: "bad\xffname", Class: "C"}) // not UTF-8: made valid

	s, _ := scrape(t, server(t, c))
	assert.Equal(t, map[string]float64{"queue=q": 1, "queue=bad\uFFFDname": 0}, s.values("exq_jobs_in_flight"))
	assert.Equal(t, map[string]float64{"class=C,queue=q": 1, "class=,queue=q": 0, "class=C,queue=bad\uFFFDname": 0},
		s.values("exq_job_duration_seconds"))
	p := s.values("exq_jobs_processed_total")
	assert.Equal(t, 1.0, p["class=C,outcome=snoozed,queue=q"])
	assert.Equal(t, 1.0, p["class=,outcome=died,queue=q"])
	assert.Equal(t, 7.0, s.values("exq_jobs_rescued_total")["queue=q"])
	assert.Equal(t, 1.0, s.value(t, "exq_redis_lost_total"))
	assert.Equal(t, 1.0, s.values("exq_jobs_enqueued_total")["class=C,queue=bad\uFFFDname"])
	for name := range s {
		assert.NotContains(t, []string{"exq_queue_size", "exq_dead_set_size", "exq_scrape_errors_total"}, name)
	}
	h := s["exq_job_duration_seconds"].GetMetric()
	for _, m := range h {
		if m.GetHistogram().GetSampleCount() == 1 {
			assert.InDelta(t, 0.03, m.GetHistogram().GetSampleSum(), 1e-9)
			assert.Len(t, m.GetHistogram().GetBucket(), len(DefaultBuckets)+1, "and +Inf")
		}
	}
}

// TestListenerAllocatesNothing: once a queue and class have been seen, their events allocate
// nothing.
func TestListenerAllocatesNothing(t *testing.T) {
	l := New(nil, Options{}).Listener()
	enq := exq.Event{Kind: exq.JobEnqueued, Queue: "default", Class: "MyApp.Job"}
	start := exq.Event{Kind: exq.JobStarted, Queue: "default", Class: "MyApp.Job"}
	done := exq.Event{Kind: exq.JobSucceeded, Queue: "default", Class: "MyApp.Job", Duration: 12 * time.Millisecond}
	l(enq)
	allocs := testing.AllocsPerRun(1000, func() {
		l(enq)
		l(start)
		l(done)
	})
	assert.Zero(t, allocs)
}

// BenchmarkListener is one job's events: enqueued, started, succeeded.
func BenchmarkListener(b *testing.B) {
	l := New(nil, Options{}).Listener()
	classes := []string{"A", "B", "C", "D"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			cl := classes[i%len(classes)]
			i++
			l(exq.Event{Kind: exq.JobEnqueued, Queue: "default", Class: cl})
			l(exq.Event{Kind: exq.JobStarted, Queue: "default", Class: cl})
			l(exq.Event{Kind: exq.JobSucceeded, Queue: "default", Class: cl, Duration: time.Millisecond})
		}
	})
}
