package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// Meta adds a top-level string field to the job's JSON: metadata that travels with the job,
// such as a trace context ("traceparent"). Exq and Sidekiq keep fields they do not know, through
// retries too. The key must not be a field that Exq, Sidekiq or exq give a meaning ("class",
// "retry_count", …); a later Meta with the same key replaces the value.
func Meta(key, value string) EnqueueOption {
	return optionFunc{fmt.Sprintf("Meta(%q)", key), func(c *enqueueConfig) error { return c.setMeta(key, value) }}
}

func (c *enqueueConfig) setMeta(key, value string) error {
	if err := checkMetaKey(key); err != nil {
		return err
	}
	for i := range c.meta {
		if c.meta[i][0] == key {
			c.meta[i][1] = value
			return nil
		}
	}
	c.meta = append(c.meta, [2]string{key, value})
	return nil
}

func checkMetaKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("Meta key is empty")
	case wire.Reserved(key):
		return fmt.Errorf("Meta key %q is a field of the job itself", key)
	}
	return nil
}

// EnqueueHook sees every job an enqueuer (a node or a Client) is about to write, with the
// context of the enqueue call: it may add metadata (OutgoingJob.SetMeta) and start work such
// as a tracing span, and returns a function that is called with the write's result (nil for
// none): the jid, or "" and the error when nothing was written ("" and nil for a periodic
// job's tick that another node or sidekiq-cron enqueued). EnqueueAll calls it once per job.
// A periodic tick's enqueue whose reply is lost is sent again, the same job under the same
// claim, until Redis answers whether the tick is this node's, and the function is called with
// that answer; only a node that stops before Redis answers calls it with "" and an error that
// says the outcome is unknown. Set hooks with Options.EnqueueHooks or
// ClientOptions.EnqueueHooks.
type EnqueueHook func(ctx context.Context, job *OutgoingJob) (done func(jid string, err error))

// OutgoingJob is a job an EnqueueHook sees before it is written.
type OutgoingJob struct {
	Queue, Class, JID string
	// At is when a scheduled job is due; zero for a job that goes to its queue now.
	At   time.Time
	meta *[][2]string
	err  error
}

// SetMeta adds a top-level string field to the job, as the Meta option does.
func (j *OutgoingJob) SetMeta(key, value string) {
	c := enqueueConfig{meta: *j.meta}
	if err := c.setMeta(key, value); err != nil && j.err == nil {
		j.err = err
	}
	*j.meta = c.meta
}

// Meta reads a top-level string field of the job ("traceparent"): set with the Meta option,
// an EnqueueHook, or by another runtime. ok is false when the field is missing or not a string.
func (j *Job) Meta(key string) (value string, ok bool) {
	for _, m := range j.setMeta {
		if m[0] == key {
			return m[1], true
		}
	}
	obj, err := wire.ParseObject(j.raw)
	if err != nil {
		return "", false
	}
	raw, ok := obj.Get(key)
	if !ok {
		return "", false
	}
	if err := json.Unmarshal(raw, &value); err != nil {
		return "", false
	}
	return value, true
}

// SetMeta sets a top-level string field of the job while it runs; the field is written with
// the job's document when it is retried, snoozed or dead-lettered (a job that succeeds is
// gone). Reserved keys, as for the Meta option, are an error.
func (j *Job) SetMeta(key, value string) error {
	c := enqueueConfig{meta: j.setMeta}
	if err := c.setMeta(key, value); err != nil {
		return fmt.Errorf("exq: job %s: %w", j.JID, err)
	}
	j.setMeta = c.meta
	return nil
}

// writeMeta puts what SetMeta set into a rewritten document.
func (j *Job) writeMeta(obj *wire.Object) {
	for _, m := range j.setMeta {
		obj.SetString(m[0], m[1])
	}
}
