package interop_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// traceKeys are the job fields that carry a trace: W3C Trace Context's two (as
// opentelemetry-ruby's Sidekiq instrumentation and exqotel write them) and exqotel's note of
// the first run's span, which later runs link to.
var traceKeys = []string{"traceparent", "tracestate", "exq_first_run"}

// traceRun is what the tracing middleware of the test (standing in for exqotel.Middleware,
// which lives in a module of its own that this one cannot import) saw in one run.
type traceRun struct {
	retryCount int
	fields     map[string]string // traceKeys present in the job when the run started
}

// traceRecorder is a Middleware doing with the trace fields what exqotel.Middleware does: it
// reads traceparent (the consumer span's parent), and a run that finds no exq_first_run writes
// one, a traceparent of the same trace with a span id of the run's own, which exq stores with
// the retry.
type traceRecorder struct {
	mu   sync.Mutex
	runs []traceRun
}

func (r *traceRecorder) middleware(next exq.Handler) exq.Handler {
	return func(ctx context.Context, job *exq.Job) error {
		seen := traceRun{retryCount: job.RetryCount, fields: map[string]string{}}
		for _, k := range traceKeys {
			if v, ok := job.Meta(k); ok {
				seen.fields[k] = v
			}
		}
		if _, ok := seen.fields["exq_first_run"]; !ok {
			if parts := strings.Split(seen.fields["traceparent"], "-"); len(parts) == 4 {
				if err := job.SetMeta("exq_first_run", "00-"+parts[1]+"-"+randomHex(8)+"-01"); err != nil {
					return err
				}
			}
		}
		r.mu.Lock()
		r.runs = append(r.runs, seen)
		r.mu.Unlock()
		return next(ctx, job)
	}
}

func (r *traceRecorder) all() []traceRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]traceRun(nil), r.runs...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestTraceContextSurvivesSidekiqRetry follows one traced job through exq, Sidekiq and exq
// again: an EnqueueHook (as exqotel.EnqueueHook does) writes traceparent and tracestate into
// the job; its first run, on exq, fails and notes exq_first_run, which exq writes with the
// retry; moved back to its queue, the job runs on a Sidekiq 6.4 server, whose TraceFailJob
// raises, so Sidekiq's JobRetry parses the job and writes it, re-encoded, into the retry set;
// moved back again, it runs on exq. The three trace fields must come through both rewrites
// unchanged, Sidekiq's server middleware must see them, and the last run on exq must find the
// producer's traceparent (its span continues the trace) and the first run's exq_first_run (its
// link).
func TestTraceContextSurvivesSidekiqRetry(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	const queue, class = "trace", "TraceFailJob" // TraceFailJob: ruby/trace_jobs.rb

	traceID, producerSpan := randomHex(16), randomHex(8)
	want := map[string]string{
		"traceparent": "00-" + traceID + "-" + producerSpan + "-01",
		"tracestate":  "exq=interop,congo=t61rcWkgMzE",
	}
	hook := func(_ context.Context, job *exq.OutgoingJob) func(string, error) {
		job.SetMeta("traceparent", want["traceparent"])
		job.SetMeta("tracestate", want["tracestate"])
		return nil
	}
	api, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: p.url, Namespace: ns, NoNamespace: ns == "", Logger: testLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = api.Close() })

	// retried waits until the retry set holds the job with error_class errClass, and returns
	// its document and trace fields.
	retried := func(jid, errClass string, alive func()) (string, map[string]string) {
		t.Helper()
		var doc string
		waitFor(t, "job "+jid+" in "+nsKey("retry with error_class ")+errClass, func() (bool, string) {
			alive()
			z := p.rdb.ZRange(ctx, nsKey("retry"), 0, -1).Val()
			if len(z) != 1 {
				return false, p.keyState(queue)
			}
			var f struct {
				JID        string `json:"jid"`
				ErrorClass string `json:"error_class"`
			}
			if err := json.Unmarshal([]byte(z[0]), &f); err != nil || f.JID != jid || f.ErrorClass != errClass {
				return false, z[0]
			}
			doc = z[0]
			return true, ""
		})
		return doc, stringFields(t, doc, traceKeys...)
	}
	exqFails := exq.WorkerFunc(func(context.Context, *exq.Job) error { return errors.New("the first run fails on exq") })
	nothing := func() {}

	// 1. Enqueued by exq with the hook; the first run, on exq, fails.
	recA := &traceRecorder{}
	a := p.startExq(exq.Options{
		Queues:           []exq.Queue{{Name: queue, Concurrency: 1}},
		Workers:          map[string]exq.Worker{class: exqFails},
		Middleware:       []exq.Middleware{recA.middleware},
		EnqueueHooks:     []exq.EnqueueHook{hook},
		DisableScheduler: true, // the retry waits in exq:retry until the test moves it
	})
	jid, err := a.Enqueue(ctx, queue, class, []any{"traced"})
	require.NoError(t, err)
	queued := p.rdb.LRange(ctx, nsKey("queue:")+queue, 0, -1).Val()
	docA, fieldsA := retried(jid, "*errors.errorString", nothing)
	stopExq(t, a)
	runsA := recA.all()
	require.Len(t, runsA, 1)
	assert.Equal(t, want, runsA[0].fields, "the first run reads what the hook wrote")
	firstRun := fieldsA["exq_first_run"]
	require.True(t, strings.HasPrefix(firstRun, "00-"+traceID+"-"), "exq_first_run %q is a traceparent of the job's trace", firstRun)
	assert.Equal(t, map[string]string{"traceparent": want["traceparent"], "tracestate": want["tracestate"], "exq_first_run": firstRun}, fieldsA,
		"exq's retry document keeps the hook's fields and adds the run's exq_first_run")
	t.Logf("enqueued by exq: %v", queued)
	t.Logf("after the failure on exq, %s: %s", nsKey("retry"), docA)

	// 2. Moved to its queue; Sidekiq runs it, TraceFailJob raises, Sidekiq writes the retry.
	_, err = api.RequeueJob(ctx, exq.RetrySet, jid)
	require.NoError(t, err)
	traceFile := filepath.Join(t.TempDir(), "trace.jsonl")
	sk := p.start("sidekiq-trace", syscall.SIGTERM, p.dir,
		[]string{"QUEUE=" + queue, "POLL_INTERVAL=1", "TRACE_FILE=" + traceFile, "RECORD_FILE=" + filepath.Join(t.TempDir(), "performed.jsonl")},
		"ruby", filepath.Join(p.dir, "trace_jobs.rb"))
	docB, fieldsB := retried(jid, "TraceFailJob::Failure", func() {
		if sk.exited() {
			t.Fatalf("Sidekiq ended early:\n%s", tail(sk.logPath, 40))
		}
	})
	sk.stop() // before its poller could move the retry back (Sidekiq's delay is 30 s or more)
	t.Logf("after the failure on Sidekiq, %s: %s", nsKey("retry"), docB)
	assert.Equal(t, fieldsA, fieldsB, "Sidekiq's retry keeps traceparent, tracestate and exq_first_run unchanged")
	assert.NotEqual(t, docA, docB, "Sidekiq rewrote the document")
	assert.Equal(t, "2", string(fields(t, docB)["retry_count"]), "Sidekiq counted its failure (exq wrote 1)")

	seen, err := os.ReadFile(traceFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(seen)), "\n")
	require.Len(t, lines, 1, "Sidekiq ran the job once")
	assert.Equal(t, fieldsA, stringFields(t, lines[0], traceKeys...), "what Sidekiq's server middleware (where opentelemetry-ruby extracts) sees")

	// 3. Moved to its queue again; exq runs it, and its run continues the producer's trace.
	_, err = api.RequeueJob(ctx, exq.RetrySet, jid)
	require.NoError(t, err)
	recC := &traceRecorder{}
	done := make(chan struct{})
	c := p.startExq(exq.Options{
		Queues:     []exq.Queue{{Name: queue, Concurrency: 1}},
		Workers:    map[string]exq.Worker{class: exq.WorkerFunc(func(context.Context, *exq.Job) error { close(done); return nil })},
		Middleware: []exq.Middleware{recC.middleware},
	})
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("exq did not run the retry within %s: %s", waitTimeout, p.keyState(queue))
	}
	stopExq(t, c)
	runsC := recC.all()
	require.Len(t, runsC, 1)
	assert.Equal(t, fieldsA, runsC[0].fields, "exq's run after Sidekiq's retry reads the fields unchanged")
	assert.Positive(t, runsC[0].retryCount)
	// What exqotel.Middleware makes of them: a consumer span whose parent is the producer span
	// (trace id and span id of traceparent), with a link to the first run's span.
	parts := strings.Split(runsC[0].fields["traceparent"], "-")
	require.Len(t, parts, 4)
	assert.Equal(t, traceID, parts[1], "the consumer span continues the producer's trace")
	assert.Equal(t, producerSpan, parts[2], "the consumer span's parent is the producer span")
	assert.Equal(t, firstRun, runsC[0].fields["exq_first_run"], "the link goes to the first run on exq")
	assert.True(t, p.drained(queue), p.keyState(queue))
}

// stringFields returns the top-level string fields keys of a JSON document that are present.
func stringFields(t *testing.T, doc string, keys ...string) map[string]string {
	t.Helper()
	f := fields(t, doc)
	out := map[string]string{}
	for _, k := range keys {
		raw, ok := f[k]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		require.NoError(t, json.Unmarshal(raw, &s), "field %s of %s", k, doc)
		out[k] = s
	}
	return out
}
