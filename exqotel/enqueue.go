package exqotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/exqgo/exq"
)

// EnqueueHook returns an exq.EnqueueHook that traces every job written: it starts a producer
// span "<queue> publish", a child of the span in the enqueue call's context, writes that span's
// context into the job (top-level fields named by the propagator: "traceparent", "tracestate")
// and ends the span when the write's result is known, with an error status if it failed.
//
// Give it to Options.EnqueueHooks of a node, or ClientOptions.EnqueueHooks of a Client.
func EnqueueHook(opts ...Option) exq.EnqueueHook {
	cfg := newConfig(opts)
	tracer := cfg.tracer()
	return func(ctx context.Context, job *exq.OutgoingJob) func(string, error) {
		attrs := []attribute.KeyValue{
			semconv.MessagingSystemKey.String(MessagingSystem),
			semconv.MessagingDestinationName(job.Queue),
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("publish"),
			ClassKey.String(job.Class),
			SidekiqClassKey.String(job.Class),
		}
		if job.JID != "" {
			attrs = append(attrs, semconv.MessagingMessageID(job.JID))
		}
		if !job.At.IsZero() {
			attrs = append(attrs, ScheduledAtKey.Int64(job.At.Unix()))
		}
		ctx, span := tracer.Start(ctx, job.Queue+" publish",
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
		cfg.prop().Inject(ctx, outgoingCarrier{job})
		// jid is the job's own, or on a unique conflict the holder's (named in err): the span
		// keeps the job's own as messaging.message.id.
		return func(_ string, err error) {
			if err != nil {
				span.RecordError(err)
				span.SetAttributes(semconv.ErrorType(err))
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}

// outgoingCarrier writes a propagator's fields into a job about to be enqueued.
type outgoingCarrier struct{ job *exq.OutgoingJob }

func (c outgoingCarrier) Get(string) string     { return "" }
func (c outgoingCarrier) Keys() []string        { return nil }
func (c outgoingCarrier) Set(key, value string) { c.job.SetMeta(key, value) }
