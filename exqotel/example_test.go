package exqotel_test

import (
	"context"
	"fmt"
	"sort"

	"github.com/alicebob/miniredis/v2"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqotel"
)

// A request enqueues a job; the node runs it. The request, the publish and the run are one
// trace. (The example runs against an in-process Redis and keeps the spans in memory; a real
// program passes its RedisURL and an exporter such as OTLP, and usually sets the global
// TracerProvider and propagator instead of passing options.)
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)

	done := make(chan struct{})
	node, err := exq.Start(ctx, exq.Options{
		RedisURL:     "redis://" + m.Addr() + "/0",
		Logger:       quiet,
		EnqueueHooks: []exq.EnqueueHook{exqotel.EnqueueHook(exqotel.WithTracerProvider(tp))},
		Middleware:   []exq.Middleware{exqotel.Middleware(exqotel.WithTracerProvider(tp))},
		Workers: map[string]exq.Worker{
			"MyApp.SendEmail": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				// ctx carries the consumer span: spans started here are its children.
				defer close(done)
				return nil
			}),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// In an HTTP handler wrapped by otelhttp, r.Context() already holds the server span.
	reqCtx, req := tp.Tracer("app").Start(ctx, "POST /signup", trace.WithSpanKind(trace.SpanKindServer))
	if _, err := node.Enqueue(reqCtx, "default", "MyApp.SendEmail", []any{42, "welcome"}); err != nil {
		fmt.Println(err)
	}
	req.End()

	<-done
	_ = node.Stop(ctx) // waits for the run, whose span then has ended

	got := spans.GetSpans()
	sort.Slice(got, func(i, j int) bool { return got[i].StartTime.Before(got[j].StartTime) })
	names := map[trace.SpanID]string{}
	for _, s := range got {
		names[s.SpanContext.SpanID()] = s.Name
		parent := "none"
		if s.Parent.IsValid() {
			parent = names[s.Parent.SpanID()]
		}
		fmt.Printf("%-14s %-8s parent: %-14s same trace: %v\n", s.Name, s.SpanKind, parent,
			s.SpanContext.TraceID() == req.SpanContext().TraceID())
	}
	// Output:
	// POST /signup   server   parent: none           same trace: true
	// default publish producer parent: POST /signup   same trace: true
	// default process consumer parent: default publish same trace: true
}
