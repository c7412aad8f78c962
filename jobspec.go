package exq

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// EnqueueOption changes one enqueued job: MaxRetries, JID, Unique, Meta, and OnQueue for
// EnqueueArgs.
type EnqueueOption interface {
	apply(*enqueueConfig) error
	// String describes the option, for logs and test failures.
	String() string
}

type enqueueConfig struct {
	maxRetries *int
	jid        string
	unique     *UniqueOpts
	meta       [][2]string
	// expiresIn and expiresAt are ExpiresIn's and ExpiresAt's (expire.go); zero when not given.
	expiresIn time.Duration
	expiresAt time.Time
	debounce  *debounceOpts
	key       string // Key
	// flow holds the batch and workflow fields of a job of a batch or a workflow (set by
	// batch.go and workflow.go, never by an option a caller can pass).
	flow *wire.NewJob
}

// debounceOpts are Debounce's (debounce.go).
type debounceOpts struct {
	key        string
	d, maxWait time.Duration
}

type optionFunc struct {
	name string
	f    func(*enqueueConfig) error
}

func (o optionFunc) apply(c *enqueueConfig) error { return o.f(c) }

func (o optionFunc) String() string { return o.name }

// MaxRetries sets how many times the job is retried before it goes to the dead set, instead of
// Options.MaxRetries. n is the literal count, as an option given per call means what it says:
// MaxRetries(0) sends the job to the dead set at its first failure, and so does
// MaxRetries(NoRetries), the Options field's spelling of none.
func MaxRetries(n int) EnqueueOption {
	return optionFunc{fmt.Sprintf("MaxRetries(%d)", n), func(c *enqueueConfig) error {
		if n == NoRetries {
			n = 0
		}
		if n < 0 {
			return fmt.Errorf("MaxRetries must be NoRetries or not negative, got %d", n)
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

// UniqueOpts say how a job is unique; see Unique.
type UniqueOpts struct {
	// Until is when the lock is released: UntilSuccess, UntilStart or UntilExpiry. Required,
	// so that every call site says it.
	Until UniqueUntilMode
	// For is the longest the lock lives: it expires For after the job's enqueue time (its due
	// time for a scheduled job) even if Until never came, so a lost job cannot block its
	// duplicates for ever. Required; Exq's unique_for.
	For time.Duration
	// Token names the lock: jobs with the same token conflict whatever their queue, class or
	// args. Default DefaultUniqueToken (a hash of queue, class and args). Exq's default tokens
	// hash Erlang terms and cannot be reproduced outside Erlang, so jobs that must be unique
	// across Exq and exq need a Token.
	Token string
}

// Unique makes the job unique (Exq's unique jobs): the enqueue takes a lock named by the job's
// token in the same script that writes the job; while another job holds it, the enqueue writes
// nothing and returns the holder's jid with a *UniqueConflictError (errors.Is(err,
// ErrUniqueConflict)). The lock is released per o.Until (by compare-and-delete on the jid), and
// expires o.For after the job's enqueue (or due) time at the latest. Retries, snoozes and
// recoveries of a job never take or check locks.
//
//	exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Hour}) // one pending at a time
//	exq.Unique(exq.UniqueOpts{Until: exq.UntilExpiry, For: time.Hour})  // at most one per hour
func Unique(o UniqueOpts) EnqueueOption {
	name := fmt.Sprintf("Unique(until %s, for %s", o.Until, o.For)
	if o.Token != "" {
		name += fmt.Sprintf(", token %q", o.Token)
	}
	return optionFunc{name + ")", func(c *enqueueConfig) error {
		switch o.Until {
		case UntilSuccess, UntilStart, UntilExpiry:
		case "":
			return fmt.Errorf("UniqueOpts.Until is not set (UntilSuccess, UntilStart or UntilExpiry)")
		default:
			return fmt.Errorf("UniqueOpts.Until must be UntilSuccess, UntilStart or UntilExpiry, got %q", o.Until)
		}
		if o.For <= 0 {
			return fmt.Errorf("UniqueOpts.For must be positive, got %s", o.For)
		}
		c.unique = &o
		return nil
	}}
}

// DefaultUniqueToken is the token of a unique job enqueued without UniqueOpts.Token: the base64 of
// the SHA-256 of queue, class and the canonical JSON of args (object keys sorted, numbers
// kept as written), joined by ":". The same args give the same token in any key order.
func DefaultUniqueToken(queue, class string, args json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("args are not valid JSON: %v", err)
	}
	canonical, err := wire.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(queue + ":" + class + ":" + string(canonical)))
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// JobSpec is one job of EnqueueAll, of a batch (NewBatch, BatchWriter.Add, AddToBatch) or a
// batch's callback. With neither At nor In set, it is enqueued now. Typed, it names no class:
// Args is a value of a JobArgs type, as EnqueueArgs takes it,
//
//	exq.JobSpec{Args: Thumbnail{N: 1}} // class Thumbnail{}.Class(), args [{"n":1}]
type JobSpec struct {
	// Queue is the queue the job goes to; empty means the Queue method of Args when Args is a
	// JobArgs that has one, else "default".
	Queue string
	// Class is the job's class, as for Enqueue. Empty when Args is a JobArgs: its Class. (Set
	// both, and they must agree.)
	Class string
	// Args is a value of a JobArgs type, which is the job's one arg (on the wire [<its
	// JSON>], as EnqueueArgs writes it and Typed, WorkerFor and AddWorker decode it), or
	// anything that encodes to a JSON array (nil is the empty list): the job's args.
	Args any
	// At runs the job at this time (as EnqueueAt: an instant on the Redis server's clock). A
	// time that has passed, before 1970 too, enqueues the job now.
	At time.Time
	// In runs the job after this long from now on the Redis server's clock (as EnqueueIn); 0
	// or less enqueues it now. Set At or In, not both.
	In time.Duration
	// Options apply to this job only.
	Options []EnqueueOption
}

// EnqueueResult is the outcome of one job of an EnqueueAll batch, in the batch's order.
type EnqueueResult struct {
	// JID is the id of the job written or, on a unique conflict, of the job holding the lock.
	JID string
	// Err is nil when the job was written, or a *UniqueConflictError when its lock was held
	// (by an earlier job, or by an earlier job of the same batch).
	Err error
}

// NoRetries, as Options.MaxRetries, makes every job enqueued without its own MaxRetries go to
// the dead set at its first failure (the zero value of the field means DefaultMaxRetries). As
// exq.MaxRetries(NoRetries) it means the same as exq.MaxRetries(0).
const NoRetries = -1
