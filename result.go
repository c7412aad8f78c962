package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// Defaults of the results jobs store (Options.ResultTTL and ResultMaxBytes).
const (
	DefaultResultTTL      = 24 * time.Hour
	DefaultResultMaxBytes = 512 << 10
)

// resultRecheck is how often a waiting client reads the result again in case a wake-up was
// lost with a broken connection.
const resultRecheck = time.Second

// SetResult stores v, encoded as JSON, as the result of the job running with ctx, for
// Options.ResultTTL; a client reads it with Result or WaitResult, a workflow job's dependents
// with ParentResult. A later call, or a later run of the job, replaces it. A result larger than
// Options.ResultMaxBytes is refused with ErrResultTooLarge and nothing is stored; outside a
// running job it returns ErrNoResult.
func SetResult(ctx context.Context, v any) error {
	job := JobFromContext(ctx)
	if job == nil || job.node == nil {
		return fmt.Errorf("exq: set result: not in a running job: %w", ErrNoResult)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("exq: set result of job %s: %w", job.JID, err)
	}
	e := job.node
	if limit := cmpInt(e.opts.ResultMaxBytes, DefaultResultMaxBytes); len(b) > limit {
		return fmt.Errorf("exq: set result of job %s: %d bytes of JSON, more than ResultMaxBytes (%d): %w", job.JID, len(b), limit, ErrResultTooLarge)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.RedisTimeout)
	defer cancel()
	if err := e.jq.setResult(wctx, job.JID, b, cmpDur(e.opts.ResultTTL, DefaultResultTTL)); err != nil {
		return fmt.Errorf("exq: set result of job %s: %w", job.JID, err)
	}
	return nil
}

func cmpInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// TypedResult is Typed for a worker that returns a result: on success (a nil error) the result
// is stored as by SetResult before the job counts as succeeded, so a client waiting for it
// and a workflow's dependents find it. A result that cannot be stored fails the run.
func TypedResult[A, R any](f func(ctx context.Context, job *Job, args A) (R, error)) Worker {
	return Typed(func(ctx context.Context, job *Job, args A) error {
		r, err := f(ctx, job, args)
		if err != nil {
			return err
		}
		return SetResult(ctx, r)
	})
}

// ParentResult decodes into dst the result stored by parent, a job the workflow job running
// with ctx depends on (named as in its DependsOn). It returns ErrNoResult when that job stored
// none (or it expired), and an error when ctx is not a workflow job's or parent is not one of
// its parents.
func ParentResult(ctx context.Context, parent string, dst any) error {
	job := JobFromContext(ctx)
	if job == nil || job.node == nil || job.wf == "" {
		return fmt.Errorf("exq: parent result %q: not in a running job of a workflow: %w", parent, ErrNoResult)
	}
	jid, ok := parentJID(job.raw, parent)
	if !ok {
		return fmt.Errorf("exq: parent result: job %q of workflow %s does not depend on %q", job.wfJob, job.wf, parent)
	}
	return job.node.readResult(ctx, jid, dst)
}

// parentJID reads the jid of parent from the document's "wf_parents".
func parentJID(raw, parent string) (string, bool) {
	obj, err := wire.ParseObject(raw)
	if err != nil {
		return "", false
	}
	v, ok := obj.Get("wf_parents")
	if !ok {
		return "", false
	}
	var parents map[string]string
	if json.Unmarshal(v, &parents) != nil {
		return "", false
	}
	jid, ok := parents[parent]
	return jid, ok && jid != ""
}

// resultReader reads results on one store.
type resultReader interface{ store() *jobQueue }

func (e *Exq) store() *jobQueue    { return e.jq }
func (c *Client) store() *jobQueue { return c.enq.jq }

// Result decodes into dst the result job jid stored; ErrNoResult when there is none (not yet,
// or expired).
func (e *Exq) Result(ctx context.Context, jid string, dst any) error {
	return e.readResult(ctx, jid, dst)
}

// Result decodes into dst the result job jid stored; see Exq.Result.
func (c *Client) Result(ctx context.Context, jid string, dst any) error {
	return readResult(ctx, c, jid, dst)
}

// WaitResult waits until job jid has stored its result and decodes it into dst, or returns
// ctx's error when ctx ends first. It is woken by pub/sub as the result is stored, on any
// node: request and response over the queue.
func (e *Exq) WaitResult(ctx context.Context, jid string, dst any) error {
	return waitResult(ctx, e, jid, dst)
}

// WaitResult waits for job jid's result; see Exq.WaitResult.
func (c *Client) WaitResult(ctx context.Context, jid string, dst any) error {
	return waitResult(ctx, c, jid, dst)
}

func (e *Exq) readResult(ctx context.Context, jid string, dst any) error {
	return readResult(ctx, e, jid, dst)
}

func readResult(ctx context.Context, r resultReader, jid string, dst any) error {
	b, ok, err := r.store().result(ctx, jid)
	if err != nil {
		return fmt.Errorf("exq: result of job %s: %w", jid, err)
	}
	if !ok {
		return fmt.Errorf("exq: result of job %s: %w", jid, ErrNoResult)
	}
	return decodeResult(jid, b, dst)
}

func waitResult(ctx context.Context, r resultReader, jid string, dst any) error {
	b, err := r.store().waitResult(ctx, jid, resultRecheck)
	if err != nil {
		return fmt.Errorf("exq: wait for the result of job %s: %w", jid, err)
	}
	return decodeResult(jid, b, dst)
}

func decodeResult(jid string, b []byte, dst any) error {
	if dst == nil {
		return nil
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("exq: result of job %s: %w", jid, err)
	}
	return nil
}
