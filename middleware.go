package exq

import "context"

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
