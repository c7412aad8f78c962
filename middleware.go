package exq

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Handler runs one job; the innermost Handler calls the job's Worker.
type Handler func(ctx context.Context, job *Job) error

// Middleware wraps a Handler with code that runs around every job (logging, tracing,
// metrics). It must call next to run the job, and should return next's error unchanged unless
// it means to change the job's outcome. exq's own bookkeeping (acknowledging, retries,
// concurrency slots) is not middleware and runs whatever a middleware does.
type Middleware func(next Handler) Handler

// chain wraps h in mws, the first middleware outermost.
func chain(h Handler, mws []Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// LogOption changes what LogJobs logs.
type LogOption func(*logConfig)

type logConfig struct{ args bool }

// LogArgs makes LogJobs include each job's args. They are left out by default, since they
// often carry personal data.
func LogArgs() LogOption { return func(c *logConfig) { c.args = true } }

// LogJobs returns a Middleware that writes one line per job when it ends, with its class,
// queue, jid, retry count, duration and outcome ("done", "snoozed", "failed", "timeout" or
// "canceled", with the error). Failures log at Warn, the rest at Info. A nil logger means
// slog.Default().
//
//	exq.Options{Middleware: []exq.Middleware{exq.LogJobs(logger)}}
func LogJobs(logger *slog.Logger, opts ...LogOption) Middleware {
	var cfg logConfig
	for _, o := range opts {
		o(&cfg)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, job *Job) (err error) {
			start := time.Now()
			defer func() {
				// Log even when the worker panics; the engine recovers the panic after us.
				v := recover()
				if v != nil {
					err = newPanicError(v) // here, where the panicking frames still are
				}
				l := logger
				if l == nil {
					l = slog.Default()
				}
				outcome, level := jobOutcome(ctx, err)
				attrs := []slog.Attr{
					slog.String("class", job.Class), slog.String("queue", job.Queue), slog.String("jid", job.JID),
					slog.Int("retry_count", job.RetryCount), slog.Duration("duration", time.Since(start)),
					slog.String("outcome", outcome),
				}
				if err != nil && outcome != "snoozed" {
					attrs = append(attrs, slog.String("error", err.Error()))
				}
				if cfg.args {
					attrs = append(attrs, slog.String("args", string(job.Args)))
				}
				l.LogAttrs(ctx, level, "exq: job "+outcome, attrs...)
				if v != nil {
					panic(v)
				}
			}()
			return next(ctx, job)
		}
	}
}

// jobOutcome names how a run ended, as the engine will treat it.
func jobOutcome(ctx context.Context, err error) (string, slog.Level) {
	var snooze *SnoozeError
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCanceled):
		return "canceled", slog.LevelWarn
	case errors.Is(cause, errTimeout):
		return "timeout", slog.LevelWarn
	case err == nil:
		return "done", slog.LevelInfo
	case errors.As(err, &snooze):
		return "snoozed", slog.LevelInfo
	}
	return "failed", slog.LevelWarn
}
