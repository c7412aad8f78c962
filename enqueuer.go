package exq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"

	"github.com/exqgo/exq/internal/wire"
)

// EnqueueOption changes one enqueued job: MaxRetries, JID.
type EnqueueOption interface {
	apply(*enqueueConfig) error
	// String describes the option, for logs and test failures.
	String() string
}

type enqueueConfig struct {
	maxRetries *int
	jid        string
}

type optionFunc struct {
	name string
	f    func(*enqueueConfig) error
}

func (o optionFunc) apply(c *enqueueConfig) error { return o.f(c) }
func (o optionFunc) String() string               { return o.name }

// MaxRetries sets how many times the job is retried before it goes to the dead set, instead of
// Options.MaxRetries. MaxRetries(0) sends it to the dead set at its first failure.
func MaxRetries(n int) EnqueueOption {
	return optionFunc{fmt.Sprintf("MaxRetries(%d)", n), func(c *enqueueConfig) error {
		if n < 0 {
			return fmt.Errorf("MaxRetries must not be negative, got %d", n)
		}
		c.maxRetries = &n
		return nil
	}}
}

// JID gives the job this id instead of a new UUID. Any non-empty string is accepted, as Exq
// and Sidekiq do; it should be unique, since the admin API finds jobs by it.
func JID(jid string) EnqueueOption {
	return optionFunc{fmt.Sprintf("JID(%q)", jid), func(c *enqueueConfig) error {
		if jid == "" {
			return fmt.Errorf("JID is empty")
		}
		c.jid = jid
		return nil
	}}
}

// JobSpec is one job of an EnqueueAll batch. With neither At nor In set, it is enqueued now.
type JobSpec struct {
	// Queue and Class are as for Enqueue.
	Queue, Class string
	// Args must encode to a JSON array (nil is the empty list).
	Args any
	// At runs the job at this time (as EnqueueAt).
	At time.Time
	// In runs the job after this long (as EnqueueIn). Set At or In, not both.
	In time.Duration
	// Options apply to this job only.
	Options []EnqueueOption
}

// EnqueueResult is the outcome of one job of an EnqueueAll batch, in the batch's order.
type EnqueueResult struct {
	// JID is the id of the job written.
	JID string
}

// invalidJobError is the error of an enqueue whose input is unacceptable.
type invalidJobError struct{ op, msg string }

func (e *invalidJobError) Error() string        { return "exq: " + e.op + ": " + e.msg }
func (e *invalidJobError) Is(target error) bool { return target == ErrInvalidJob }

// enqueuer builds job documents and writes them. It holds no goroutines.
type enqueuer struct {
	jq         *jobQueue
	now        func() time.Time
	maxRetries int
}

// build validates one job and renders its document. at is the due time, zero for now.
func (en *enqueuer) build(op, queue, class string, args any, at time.Time, opts []EnqueueOption) (jid, doc string, err error) {
	bad := func(format string, a ...any) (string, string, error) {
		return "", "", &invalidJobError{op, fmt.Sprintf(format, a...)}
	}
	if class == "" {
		return bad("class is empty")
	}
	if err := checkQueueName(queue); err != nil {
		return bad("%v", err)
	}
	rawArgs, err := encodeArgs(args)
	if err != nil {
		return bad("%v", err)
	}
	cfg := enqueueConfig{}
	for _, o := range opts {
		if o == nil {
			return bad("an option is nil")
		}
		if err := o.apply(&cfg); err != nil {
			return bad("%v", err)
		}
	}
	now := en.now()
	j := wire.NewJob{
		Class:      class,
		Args:       rawArgs,
		Queue:      queue,
		JID:        cfg.jid,
		EnqueuedAt: now,
		CreatedAt:  now,
		Retry:      en.maxRetries,
	}
	if j.JID == "" {
		j.JID = uuid.NewString()
	}
	if !at.IsZero() {
		j.EnqueuedAt = at // Exq: a scheduled job's enqueued_at is its due time
	}
	if cfg.maxRetries != nil {
		j.Retry = *cfg.maxRetries
	}
	return j.JID, j.Encode(), nil
}

// encodeArgs renders args as a JSON array. nil is the empty list.
func encodeArgs(args any) (json.RawMessage, error) {
	if args == nil {
		return json.RawMessage("[]"), nil
	}
	if raw, ok := args.(json.RawMessage); ok && !json.Valid(raw) {
		return nil, fmt.Errorf("args: invalid JSON %q", raw)
	}
	b, err := wire.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("args cannot be encoded as JSON: %v", err)
	}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return json.RawMessage("[]"), nil
	}
	if len(b) == 0 || b[0] != '[' {
		return nil, fmt.Errorf("args must be a list (a slice or array), got %s", describe(args))
	}
	return b, nil
}

func describe(v any) string {
	if _, ok := v.(json.RawMessage); ok {
		return "JSON that is not an array"
	}
	return reflect.TypeOf(v).String()
}

func (en *enqueuer) enqueue(ctx context.Context, queue, class string, args any, opts []EnqueueOption) (string, error) {
	jid, doc, err := en.build("enqueue", queue, class, args, time.Time{}, opts)
	if err != nil {
		return "", err
	}
	if err := en.jq.enqueue(ctx, queue, doc); err != nil {
		return "", fmt.Errorf("exq: enqueue %s to %s: %w", class, queue, err)
	}
	return jid, nil
}

func (en *enqueuer) enqueueAt(ctx context.Context, op, queue, class string, at time.Time, args any, opts []EnqueueOption) (string, error) {
	if at.IsZero() {
		return "", &invalidJobError{op, "time is zero"}
	}
	jid, doc, err := en.build(op, queue, class, args, at, opts)
	if err != nil {
		return "", err
	}
	if err := en.jq.enqueueAt(ctx, at, doc); err != nil {
		return "", fmt.Errorf("exq: %s %s to %s: %w", op, class, queue, err)
	}
	return jid, nil
}

func (en *enqueuer) enqueueAll(ctx context.Context, specs []JobSpec) ([]EnqueueResult, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	items := make([]batchItem, len(specs))
	results := make([]EnqueueResult, len(specs))
	for i, s := range specs {
		op := fmt.Sprintf("enqueue all: job %d", i)
		if !s.At.IsZero() && s.In != 0 {
			return nil, &invalidJobError{op, "both At and In are set"}
		}
		at := s.At
		if s.In != 0 {
			at = en.now().Add(s.In)
		}
		jid, doc, err := en.build(op, s.Queue, s.Class, s.Args, at, s.Options)
		if err != nil {
			return nil, err
		}
		items[i] = batchItem{queue: s.Queue, at: at, job: doc}
		results[i] = EnqueueResult{JID: jid}
	}
	if err := en.jq.enqueueAll(ctx, items); err != nil {
		return nil, fmt.Errorf("exq: enqueue all (%d jobs): %w", len(specs), err)
	}
	return results, nil
}
