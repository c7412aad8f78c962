package exqotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqotel"
	"github.com/exqgo/exq/internal/testutil"
)

// TestMain fails the package if a test leaves a goroutine behind (a node not stopped) and
// stops the private redis-server the tests may have started, as the core's tests do.
func TestMain(m *testing.M) {
	testutil.MainLeak(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// tracing is an SDK TracerProvider whose spans land in an in-memory exporter as they end.
func tracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// startNode starts an exq node on the test's own namespace of the real test Redis, tracing
// with tp, with fast retries; it is stopped when the test ends (or by the returned function).
func startNode(t *testing.T, tp trace.TracerProvider, queue string, workers map[string]exq.Worker, opts ...exqotel.Option) (*exq.Exq, func()) {
	t.Helper()
	rdb, ns := testutil.Redis(t)
	opts = append([]exqotel.Option{exqotel.WithTracerProvider(tp)}, opts...)
	e, err := exq.Start(context.Background(), exq.Options{
		Redis:                rdb,
		Namespace:            ns,
		Queues:               []exq.Queue{{Name: queue, Concurrency: 2}},
		Workers:              workers,
		EnqueueHooks:         []exq.EnqueueHook{exqotel.EnqueueHook(opts...)},
		Middleware:           []exq.Middleware{exqotel.Middleware(opts...)},
		Backoff:              func(int, *exq.Job) time.Duration { return 10 * time.Millisecond },
		SchedulerPollTimeout: 20 * time.Millisecond,
		PollTimeout:          20 * time.Millisecond,
		Logger:               quiet,
	})
	require.NoError(t, err)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, e.Stop(ctx))
		})
	}
	t.Cleanup(stop)
	return e, stop
}

// run is what the worker saw in one run of a job.
type run struct {
	retryCount int
	span       trace.SpanContext // the span current in the worker's context
	firstRun   string            // the job's exq_first_run field, if any
	hasFirst   bool
}

// flaky fails the first run of each job and lets the later ones succeed.
type flaky struct {
	mu   sync.Mutex
	runs []run
	done chan struct{}
}

func (f *flaky) Perform(ctx context.Context, job *exq.Job) error {
	first, ok := job.Meta(exqotel.FirstRunKey)
	f.mu.Lock()
	f.runs = append(f.runs, run{job.RetryCount, trace.SpanContextFromContext(ctx), first, ok})
	f.mu.Unlock()
	if job.RetryCount == 0 {
		return errors.New("smtp: connection refused")
	}
	close(f.done)
	return nil
}

func TestTraceAcrossEnqueueFailureAndRetry(t *testing.T) {
	tp, exp := tracing(t)
	w := &flaky{done: make(chan struct{})}
	e, stop := startNode(t, tp, "mail", map[string]exq.Worker{"MyApp.SendEmail": w})

	// The request that enqueues the job.
	ctx, parent := tp.Tracer("test").Start(context.Background(), "POST /signup", trace.WithSpanKind(trace.SpanKindServer))
	jid, err := e.Enqueue(ctx, "mail", "MyApp.SendEmail", []any{42, "welcome"})
	require.NoError(t, err)
	parent.End()

	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the job did not succeed within 30 s; runs: %+v", w.runs)
	}
	stop() // waits for the run, so its span has ended

	spans := exp.GetSpans()
	t.Logf("span tree:\n%s", spanTree(spans))
	require.Len(t, spans, 4, "the request, the publish and two runs")

	req := find(t, spans, "POST /signup", 0)
	pub := find(t, spans, "mail publish", 0)
	run1 := find(t, spans, "mail process", 0)
	run2 := find(t, spans, "mail process", 1)

	// The producer is a child of the request.
	require.Equal(t, trace.SpanKindProducer, pub.SpanKind)
	require.Equal(t, req.SpanContext.TraceID(), pub.SpanContext.TraceID())
	require.Equal(t, req.SpanContext.SpanID(), pub.Parent.SpanID())
	require.False(t, pub.Parent.IsRemote())
	checkAttrs(t, pub.Attributes, map[attribute.Key]any{
		"messaging.system": "sidekiq", "messaging.destination.name": "mail",
		"messaging.operation.type": "send", "messaging.operation.name": "publish",
		"messaging.message.id": jid, "exq.job.class": "MyApp.SendEmail",
		"messaging.sidekiq.job_class": "MyApp.SendEmail",
	})
	require.Equal(t, codes.Unset, pub.Status.Code)

	// Both runs are consumers, children of the producer (through the job), in its trace.
	for i, r := range []tracetest.SpanStub{run1, run2} {
		require.Equal(t, trace.SpanKindConsumer, r.SpanKind, "run %d", i+1)
		require.Equal(t, pub.SpanContext.TraceID(), r.SpanContext.TraceID(), "run %d", i+1)
		require.Equal(t, pub.SpanContext.SpanID(), r.Parent.SpanID(), "run %d", i+1)
		require.True(t, r.Parent.IsRemote(), "run %d: the parent came from the job", i+1)
		checkAttrs(t, r.Attributes, map[attribute.Key]any{
			"messaging.system": "sidekiq", "messaging.destination.name": "mail",
			"messaging.operation.type": "process", "messaging.operation.name": "process",
			"messaging.message.id": jid, "exq.job.class": "MyApp.SendEmail",
			"exq.job.retry_count": int64(i),
		})
	}
	// The worker ran inside the consumer span.
	require.Len(t, w.runs, 2)
	require.Equal(t, run1.SpanContext.SpanID(), w.runs[0].span.SpanID())
	require.Equal(t, run2.SpanContext.SpanID(), w.runs[1].span.SpanID())

	// The first run failed: error status, the error recorded.
	require.Equal(t, codes.Error, run1.Status.Code)
	require.Equal(t, "smtp: connection refused", run1.Status.Description)
	require.Len(t, run1.Events, 1)
	require.Equal(t, "exception", run1.Events[0].Name)
	require.Empty(t, run1.Links, "the job had no exq_first_run when the first run started")
	// The first run noted its own span in the job (so its worker sees it already)...
	first := fmt.Sprintf("00-%s-%s-01", run1.SpanContext.TraceID(), run1.SpanContext.SpanID())
	require.True(t, w.runs[0].hasFirst)
	require.Equal(t, first, w.runs[0].firstRun)

	// ...which exq wrote with the retry: the retry read it back and links to that span.
	require.True(t, w.runs[1].hasFirst)
	require.Equal(t, first, w.runs[1].firstRun)
	require.Equal(t, codes.Unset, run2.Status.Code)
	require.Len(t, run2.Links, 1)
	require.Equal(t, run1.SpanContext.TraceID(), run2.Links[0].SpanContext.TraceID())
	require.Equal(t, run1.SpanContext.SpanID(), run2.Links[0].SpanContext.SpanID())
	checkAttrs(t, run2.Links[0].Attributes, map[attribute.Key]any{"exq.link.type": "first_run"})
}

// TestPanicSnoozeAndNoContext runs the middleware alone: a panic is recorded and goes on, a
// snooze is not an error, and a job without trace context gets a root span.
func TestPanicSnoozeAndNoContext(t *testing.T) {
	tp, exp := tracing(t)
	mw := exqotel.Middleware(exqotel.WithTracerProvider(tp))

	job := &exq.Job{Class: "Boom", Queue: "default", JID: "j1"}
	h := mw(func(context.Context, *exq.Job) error { panic("kaboom") })
	require.PanicsWithValue(t, "kaboom", func() { _ = h(context.Background(), job) })

	job = &exq.Job{Class: "Later", Queue: "default", JID: "j2"}
	h = mw(func(context.Context, *exq.Job) error { return exq.Snooze(3 * time.Second) })
	require.Error(t, h(context.Background(), job))

	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	boom, later := spans[0], spans[1]
	require.Equal(t, codes.Error, boom.Status.Code)
	require.Equal(t, "panic: kaboom", boom.Status.Description)
	require.False(t, boom.Parent.IsValid(), "no trace context in the job: a root span")
	require.Equal(t, codes.Unset, later.Status.Code)
	require.Len(t, later.Events, 1)
	require.Equal(t, "exq.snoozed", later.Events[0].Name)

	// The first run noted itself for the runs after it.
	v, ok := job.Meta(exqotel.FirstRunKey)
	require.True(t, ok)
	require.Equal(t, fmt.Sprintf("00-%s-%s-01", later.SpanContext.TraceID(), later.SpanContext.SpanID()), v)
}

// TestPropagators checks the default (the global propagator, W3C Trace Context while none is
// set) and WithPropagator with baggage: the fields land in the job and the worker reads them.
func TestPropagators(t *testing.T) {
	tp, _ := tracing(t)
	type seen struct{ traceparent, baggage string }
	got := make(chan seen, 1)
	worker := exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
		tpv, _ := job.Meta("traceparent")
		got <- seen{tpv, baggage.FromContext(ctx).Member("tenant").Value()}
		return nil
	})

	t.Run("global unset falls back to trace context", func(t *testing.T) {
		require.Empty(t, otel.GetTextMapPropagator().Fields(), "no test sets the global propagator")
		e, _ := startNode(t, tp, "default", map[string]exq.Worker{"W": worker})
		ctx, span := tp.Tracer("test").Start(context.Background(), "parent")
		_, err := e.Enqueue(ctx, "default", "W", nil)
		require.NoError(t, err)
		span.End()
		s := <-got
		require.Contains(t, s.traceparent, span.SpanContext().TraceID().String())
	})
	t.Run("baggage", func(t *testing.T) {
		prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		e, _ := startNode(t, tp, "default", map[string]exq.Worker{"W": worker}, exqotel.WithPropagator(prop))
		m, err := baggage.NewMember("tenant", "acme")
		require.NoError(t, err)
		b, err := baggage.New(m)
		require.NoError(t, err)
		ctx, span := tp.Tracer("test").Start(baggage.ContextWithBaggage(context.Background(), b), "parent")
		_, err = e.Enqueue(ctx, "default", "W", nil)
		require.NoError(t, err)
		span.End()
		s := <-got
		require.Contains(t, s.traceparent, span.SpanContext().TraceID().String())
		require.Equal(t, "acme", s.baggage)
	})
}

// find returns the n-th span (by start time) named name.
func find(t *testing.T, spans tracetest.SpanStubs, name string, n int) tracetest.SpanStub {
	t.Helper()
	var named []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			named = append(named, s)
		}
	}
	sort.Slice(named, func(i, j int) bool { return named[i].StartTime.Before(named[j].StartTime) })
	require.Greater(t, len(named), n, "spans named %q", name)
	return named[n]
}

func checkAttrs(t *testing.T, attrs []attribute.KeyValue, want map[attribute.Key]any) {
	t.Helper()
	have := map[attribute.Key]any{}
	for _, kv := range attrs {
		have[kv.Key] = kv.Value.AsInterface()
	}
	for k, v := range want {
		require.Equal(t, v, have[k], "attribute %s", k)
	}
}

// spanTree renders spans as a tree by parent, children in start order, with kinds, ids,
// status and links.
func spanTree(spans tracetest.SpanStubs) string {
	byID := map[trace.SpanID]tracetest.SpanStub{}
	children := map[trace.SpanID][]tracetest.SpanStub{}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	for _, s := range spans {
		if _, ok := byID[s.Parent.SpanID()]; ok {
			children[s.Parent.SpanID()] = append(children[s.Parent.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(l []tracetest.SpanStub) {
		sort.Slice(l, func(i, j int) bool { return l[i].StartTime.Before(l[j].StartTime) })
	}
	var b strings.Builder
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		ind := strings.Repeat("    ", depth)
		fmt.Fprintf(&b, "%s%s [%s] trace=%s span=%s", ind, s.Name, s.SpanKind, s.SpanContext.TraceID(), s.SpanContext.SpanID())
		if s.Parent.IsValid() {
			remote := ""
			if s.Parent.IsRemote() {
				remote = " (remote: from the job)"
			}
			fmt.Fprintf(&b, " parent=%s%s", s.Parent.SpanID(), remote)
		}
		if s.Status.Code != codes.Unset {
			fmt.Fprintf(&b, " status=%s %q", s.Status.Code, s.Status.Description)
		}
		for _, kv := range s.Attributes {
			if kv.Key == "exq.job.retry_count" {
				fmt.Fprintf(&b, " retry_count=%d", kv.Value.AsInt64())
			}
		}
		b.WriteString("\n")
		for _, l := range s.Links {
			name := "?"
			if t, ok := byID[l.SpanContext.SpanID()]; ok {
				name = t.Name
			}
			var attrs []string
			for _, kv := range l.Attributes {
				attrs = append(attrs, string(kv.Key)+"="+kv.Value.Emit())
			}
			fmt.Fprintf(&b, "%s    ~> link to span=%s (%s) %s\n", ind, l.SpanContext.SpanID(), name, strings.Join(attrs, " "))
		}
		kids := children[s.SpanContext.SpanID()]
		byStart(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	byStart(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}
