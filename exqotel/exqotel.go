// Package exqotel traces exq jobs with OpenTelemetry: EnqueueHook starts a producer span for
// every job an exq node or Client writes and puts its trace context into the job, and
// Middleware starts a consumer span for every run of a job, a child of that producer span, so
// that a request, the jobs it enqueues and every run of them (retries included) are one trace.
//
// The trace context travels as top-level string fields of the job's JSON, named as the
// propagator's keys ("traceparent", "tracestate" for W3C Trace Context), exactly where
// opentelemetry-ruby's Sidekiq instrumentation puts it: traces continue across Ruby producers
// and workers sharing the queues. A retry run also links to the job's first run, whose span
// context the first run stores in the job's field "exq_first_run" (FirstRunKey).
//
//	node, err := exq.Start(ctx, exq.Options{
//		EnqueueHooks: []exq.EnqueueHook{exqotel.EnqueueHook()},
//		Middleware:   []exq.Middleware{exqotel.Middleware()},
//		…
//	})
package exqotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer exqotel uses.
const ScopeName = "github.com/exqgo/exq/exqotel"

// FirstRunKey is the job field in which a job's first traced run stores its span context, as a
// W3C traceparent ("00-<trace id>-<span id>-<flags>"), so that later runs link to it. exq writes
// it with the job's retry, snooze or dead document; Sidekiq keeps it like any unknown field.
const FirstRunKey = "exq_first_run"

// MessagingSystem is the value of messaging.system on every span. exq jobs are Sidekiq jobs:
// the same Redis lists and sorted sets, the same JSON, consumed by Sidekiq, Exq and exq alike,
// and opentelemetry-ruby's Sidekiq instrumentation names the system "sidekiq". One value for the
// queue whichever runtime produced or consumed a job keeps a queue's spans together in a
// backend; the instrumentation scope (ScopeName) and the exq.* attributes tell exq's apart.
const MessagingSystem = "sidekiq"

// Attribute keys of exqotel's own (the messaging.* ones are OpenTelemetry's semantic
// conventions, v1.39.0).
const (
	// ClassKey is the job's class ("MyApp.SendEmail"), on producer and consumer spans.
	ClassKey = attribute.Key("exq.job.class")
	// SidekiqClassKey is the job's class under the name opentelemetry-ruby's Sidekiq
	// instrumentation gives it, so that one query finds a class's spans from either runtime.
	SidekiqClassKey = attribute.Key("messaging.sidekiq.job_class")
	// RetryCountKey is how many times the job had failed before this run (consumer spans).
	RetryCountKey = attribute.Key("exq.job.retry_count")
	// ScheduledAtKey is when a scheduled job is due, in Unix seconds (producer spans of jobs
	// enqueued with EnqueueIn or EnqueueAt).
	ScheduledAtKey = attribute.Key("exq.job.scheduled_at")
	// LinkTypeKey is on the link from a retry run's span to the first run's: "first_run".
	LinkTypeKey = attribute.Key("exq.link.type")
)

// Option configures EnqueueHook and Middleware.
type Option func(*config)

type config struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
}

// WithTracerProvider sets the TracerProvider the spans come from. Default: the global one,
// otel.GetTracerProvider(), looked up when EnqueueHook or Middleware is called (the global
// provider forwards to one set later with otel.SetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.provider = tp }
}

// WithPropagator sets how the trace context is written into and read from jobs. Default: the
// global propagator, otel.GetTextMapPropagator(), read at every job; while the global one has
// no fields (nothing set it: OpenTelemetry's default is a no-op), W3C Trace Context.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagator = p }
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.provider == nil {
		c.provider = otel.GetTracerProvider()
	}
	return c
}

func (c config) tracer() trace.Tracer {
	return c.provider.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
}

// prop returns the propagator to use for one job.
func (c config) prop() propagation.TextMapPropagator {
	if c.propagator != nil {
		return c.propagator
	}
	if p := otel.GetTextMapPropagator(); len(p.Fields()) > 0 {
		return p
	}
	return propagation.TraceContext{}
}
