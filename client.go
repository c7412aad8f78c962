package exq

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/exqgo/exq/internal/serverclock"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Client enqueues jobs and runs nothing: no goroutines, no fetching, no scheduler (Exq's
// enqueuer mode). Scheduled jobs and retries come due only where some node runs the
// scheduler. Create it with NewClient; Close it when done.
type Client struct {
	enq    *enqueuer
	conn   *store.Conn
	closed atomic.Bool // Close was called
}

// NewClient connects to Redis and returns an enqueue-only Client. A program that also starts
// a node passes the node's options: NewClient(ctx, opts.ClientOptions()).
func NewClient(ctx context.Context, opts ClientOptions) (*Client, error) {
	o, conn, err := openRedis(ctx, opts)
	if err != nil {
		return nil, err
	}
	jq, err := newStore(o, conn, "")
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	clock := serverclock.New(conn.Time, time.Now, o.Logger)
	return &Client{enq: &enqueuer{jq: jq, now: clock.Now, fresh: clock.FreshForClient, maxRetries: o.MaxRetries,
		events: listeners{fns: o.Listeners, log: o.Logger}, hooks: o.EnqueueHooks, unit: stampUnit(o.MillisecondTimestamps)},
		conn: conn}, nil
}

// Enqueue pushes a job onto queue now; see Exq.Enqueue.
func (c *Client) Enqueue(ctx context.Context, queue, class string, args any, opts ...EnqueueOption) (string, error) {
	return c.enq.enqueue(ctx, queue, class, args, opts)
}

// EnqueueIn schedules a job to run after d; see Exq.EnqueueIn.
func (c *Client) EnqueueIn(ctx context.Context, queue, class string, d time.Duration, args any, opts ...EnqueueOption) (string, error) {
	return c.enq.enqueueIn(ctx, queue, class, d, args, opts)
}

// EnqueueAt schedules a job to run at t; see Exq.EnqueueAt.
func (c *Client) EnqueueAt(ctx context.Context, queue, class string, t time.Time, args any, opts ...EnqueueOption) (string, error) {
	return c.enq.enqueueAt(ctx, "enqueue at", queue, class, t, args, opts)
}

// EnqueueAll writes a batch of jobs in one atomic step; see Exq.EnqueueAll.
func (c *Client) EnqueueAll(ctx context.Context, jobs []JobSpec) ([]EnqueueResult, error) {
	return c.enq.enqueueAll(ctx, jobs)
}

// Close closes the Redis client if the Client built it from RedisURL.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.conn.Close()
}

// PrepareJob validates a job and returns it as an enqueue at time now would write it (with
// the node defaults: MaxRetries 25), without touching Redis: spec.At or spec.In make it a
// scheduled job, as EnqueueAt and EnqueueIn do; a typed spec (Args a JobArgs) gets its class
// and queue as EnqueueAll gives them. Its Raw() is the exact JSON document, unique fields
// included.
//
// It is for test doubles and tools, not for enqueueing: package exqtest uses it so that its
// doubles accept and refuse exactly what a real enqueue does, and the exq command checks a job
// with it before connecting. Application code enqueues with a node or a Client.
func PrepareJob(now time.Time, spec JobSpec) (*Job, error) {
	en := &enqueuer{jq: store.New(nil, store.Config{Namespace: DefaultNamespace}), now: func() time.Time { return now }, maxRetries: DefaultMaxRetries}
	op := "enqueue"
	switch {
	case !spec.At.IsZero():
		op = "enqueue at"
	case spec.In != 0:
		op = "enqueue in"
	}
	b, err := en.buildSpec(context.Background(), now, op, spec)
	if err != nil {
		return nil, err
	}
	h, err := wire.DecodeHeader(b.doc)
	if err != nil {
		return nil, err // cannot happen: build writes valid documents
	}
	return newJob(h, b.doc, b.queue, DefaultMaxRetries), nil
}

// WithJob returns a context that carries job, so that JobFromContext works in code that runs
// a worker outside a node. It is for test doubles (exqtest's Inline uses it) and for a unit
// test that calls a worker's Perform itself; a node gives every job such a context already.
func WithJob(ctx context.Context, job *Job) context.Context {
	return context.WithValue(ctx, jobKey{}, job)
}
