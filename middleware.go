package exq

import (
	"context"
	"log/slog"
	"time"
)

// Handler is the name Middleware gives a WorkerFunc: the same type (an alias), so a
// middleware's next is a Worker and any WorkerFunc can be wrapped. The innermost Handler calls
// the job's Worker. It was a type of its own with the same signature; nothing to migrate.
type Handler = WorkerFunc

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

// LogOption changes what LogJobs logs. LogArgs makes one.
type LogOption interface{ applyLog(*logConfig) }

type logConfig struct{ args bool }

type logArgs struct{}

func (logArgs) applyLog(c *logConfig) { c.args = true }

// LogArgs makes LogJobs include each job's args. They are left out by default, since they
// often carry personal data.
func LogArgs() LogOption { return logArgs{} }

// LogJobs returns a Middleware that writes one line per job once its outcome is stored, with
// its class, queue, jid, how long the run took, and what was written: the outcome ("done";
// "retry" with the time it runs again; "dead"; "snoozed" with the time; "handed back" to its
// queue by a stopping node; "rescued" when the node had been taken for dead while the job ran
// and another node put it back; "left in backup" when a stopping node could not store it), and the
// job's retry_count, error and error_class as stored. Failures log at Warn, the rest at Info.
// A nil logger means slog.Default().
//
//	exq.Options{Middleware: []exq.Middleware{exq.LogJobs(logger)}}
func LogJobs(logger *slog.Logger, opts ...LogOption) Middleware {
	var cfg logConfig
	for _, o := range opts {
		if o != nil {
			o.applyLog(&cfg)
		}
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, job *Job) error {
			start := time.Now()
			var took time.Duration
			// The outcome is decided after the middleware returns (a timeout, a CANCEL, retries
			// left), so the line is written when the engine reports what it stored.
			job.onOutcome(func(o outcome) {
				l := logger
				if l == nil {
					l = slog.Default()
				}
				attrs := []slog.Attr{
					slog.String("class", job.Class), slog.String("queue", job.Queue), slog.String("jid", job.JID),
					slog.String("outcome", o.name), slog.Int("retry_count", o.retryCount), slog.Duration("duration", took),
				}
				if !o.at.IsZero() {
					attrs = append(attrs, slog.Time("at", o.at))
				}
				if o.err != nil {
					attrs = append(attrs, slog.String("error", o.err.Error()), slog.String("error_class", o.errorClass))
				}
				if cfg.args {
					attrs = append(attrs, slog.String("args", string(job.Args)))
				}
				level := slog.LevelInfo
				if o.err != nil || o.name == "left in backup" {
					level = slog.LevelWarn
				}
				l.LogAttrs(context.WithoutCancel(ctx), level, "exq: job "+o.name, attrs...)
			})
			defer func() { took = time.Since(start) }() // also when next panics
			return next(ctx, job)
		}
	}
}
