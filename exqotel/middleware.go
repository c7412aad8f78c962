package exqotel

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/exqgo/exq"
)

// Middleware returns an exq.Middleware that traces every run of a job: it reads the trace
// context the producer wrote into the job (EnqueueHook, or opentelemetry-ruby's Sidekiq
// client middleware) and runs the job inside a consumer span "<queue> process", a child of the
// producer span. A run that fails gets an error status with the error recorded; a run that
// panics gets the same, and the panic goes on to exq. A Snooze is not a failure: the span gets
// an "exq.snoozed" event instead.
//
// The first traced run of a job stores its span context in the job (FirstRunKey), which exq
// writes with the retry; each later run (a retry, or the run after a snooze) links to that span.
// A job without trace context gets a new root span.
//
// Give it to Options.Middleware; put it first so that the other middleware run inside its span.
func Middleware(opts ...Option) exq.Middleware {
	cfg := newConfig(opts)
	tracer := cfg.tracer()
	return func(next exq.Handler) exq.Handler {
		return func(ctx context.Context, job *exq.Job) (err error) {
			prop := cfg.prop()
			ctx = prop.Extract(ctx, jobCarrier{job: job, keys: prop.Fields()})
			start := []trace.SpanStartOption{
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					semconv.MessagingSystemKey.String(MessagingSystem),
					semconv.MessagingDestinationName(job.Queue),
					semconv.MessagingOperationTypeProcess,
					semconv.MessagingOperationName("process"),
					semconv.MessagingMessageID(job.JID),
					ClassKey.String(job.Class),
					SidekiqClassKey.String(job.Class),
					RetryCountKey.Int(job.RetryCount),
				),
			}
			firstRun, haveFirst := job.Meta(FirstRunKey)
			if haveFirst {
				if sc := parseTraceparent(firstRun); sc.IsValid() {
					start = append(start, trace.WithLinks(trace.Link{
						SpanContext: sc,
						Attributes:  []attribute.KeyValue{LinkTypeKey.String("first_run")},
					}))
				}
			}
			ctx, span := tracer.Start(ctx, job.Queue+" process", start...)
			if !haveFirst && span.SpanContext().IsValid() {
				// Written only with a retry, snooze or death: a job that succeeds leaves no trace.
				_ = job.SetMeta(FirstRunKey, formatTraceparent(span.SpanContext()))
			}
			defer func() {
				if v := recover(); v != nil {
					span.RecordError(fmt.Errorf("panic: %v", v), trace.WithStackTrace(true))
					span.SetAttributes(semconv.ErrorTypeKey.String("panic"))
					span.SetStatus(codes.Error, fmt.Sprintf("panic: %v", v))
					span.End()
					panic(v)
				}
				var snooze *exq.SnoozeError
				switch {
				case err == nil:
				case errors.As(err, &snooze):
					span.AddEvent("exq.snoozed", trace.WithAttributes(attribute.Float64("exq.snooze.seconds", snooze.Delay.Seconds())))
				default:
					span.RecordError(err)
					span.SetAttributes(semconv.ErrorType(err))
					span.SetStatus(codes.Error, err.Error())
				}
				span.End()
			}()
			return next(ctx, job)
		}
	}
}

// jobCarrier reads a propagator's fields from a running job.
type jobCarrier struct {
	job  *exq.Job
	keys []string
}

func (c jobCarrier) Get(key string) string {
	v, _ := c.job.Meta(key)
	return v
}

// Keys returns the propagator's own fields: a job's other fields are not trace context.
func (c jobCarrier) Keys() []string { return c.keys }

// Set is not used: Extract only reads.
func (c jobCarrier) Set(string, string) {}

// formatTraceparent renders sc as a W3C traceparent.
func formatTraceparent(sc trace.SpanContext) string {
	m := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), m)
	return m.Get("traceparent")
}

// parseTraceparent reads a W3C traceparent; the result is invalid if v is not one.
func parseTraceparent(v string) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": v})
	return trace.SpanContextFromContext(ctx)
}
