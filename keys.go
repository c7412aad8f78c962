package exq

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/exqgo/exq/internal/store"
)

// Key gives the job a key (a tenant, a customer, an account…): a queue whose Queue.Keys policy
// is set then limits, paces, orders and shares its jobs per key (docs/keys.md). A keyed job
// never waits in the queue's list, where Sidekiq and Exq nodes (which know nothing of keys)
// would run it: it waits in exq's own per-key list until an exq node serving the queue with a
// KeyPolicy fetches it. The key is carried in the job's "exq_key" field. k must be 1 to
// MaxKeyBytes bytes of UTF-8 without control characters.
//
// A JobArgs type can give its jobs a key itself with a JobKey method (KeyedArgs); Key wins.
func Key(k string) EnqueueOption {
	return optionFunc{fmt.Sprintf("Key(%q)", k), func(c *enqueueConfig) error {
		if err := checkKey(k); err != nil {
			return err
		}
		c.key = k
		return nil
	}}
}

// KeyedArgs is a JobArgs whose jobs carry a key derived from their args (as Key gives one):
//
//	func (s Sync) JobKey() string { return s.TenantID }
//
// An empty JobKey enqueues the job without a key.
type KeyedArgs interface {
	JobArgs
	JobKey() string
}

// errKeyedEnqueueAll refuses a keyed job in EnqueueAll.
var errKeyedEnqueueAll = errors.New("Key with Unique is not supported by EnqueueAll yet: enqueue such jobs one by one")

// MaxKeyBytes is the longest key Key accepts.
const MaxKeyBytes = 200

// checkKey validates a job's key.
func checkKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("Key is empty")
	case len(k) > MaxKeyBytes:
		return fmt.Errorf("Key is %d bytes, more than MaxKeyBytes (%d)", len(k), MaxKeyBytes)
	case !utf8.ValidString(k):
		return fmt.Errorf("Key %q is not valid UTF-8", k)
	}
	for _, r := range k {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("Key %q holds a control character", k)
		}
	}
	return nil
}

// keyOf is the key a JobArgs value derives (KeyedArgs), "" for none.
func keyOf(args any) string {
	if k, ok := args.(KeyedArgs); ok {
		return k.JobKey()
	}
	return ""
}

// KeyPolicy is how the nodes serve a queue's keyed jobs (Queue.Keys; docs/keys.md). Every
// limit holds across every node of the namespace, on the Redis server's clock. Keys that have
// jobs waiting are served in turn, weighted by Weights, so a key with a large backlog delays
// another key's next job by at most one turn. Jobs of the queue without a key share the
// node's slots with the keyed ones (up to half of them each when both wait).
//
// The zero KeyPolicy serves no keyed jobs: set Fair (keys in turn, no other limit) or any
// limit. Every node serving the queue should give it the same policy: each fetch applies the
// policy of the node that makes it.
type KeyPolicy struct {
	// Concurrency is the most jobs of one key that run at the same time on all the nodes
	// together; 0 means no such limit. Each running keyed job holds a lease, renewed with the
	// heartbeat (a killed node's leases lapse within its heartbeat window) and released when
	// the job ends. Requires heartbeats.
	Concurrency int
	// Rate is the most jobs of one key that start per period on all the nodes together (at
	// most N in any window of length Per). The zero Rate means no limit.
	Rate Rate
	// Sequence runs one job of a key at a time, in enqueue order (Concurrency 1), other keys
	// in parallel. A job that fails holds its key's later jobs until it succeeds or dies,
	// unless SkipFailed.
	Sequence bool
	// SkipFailed, with Sequence, lets a failed job's retries wait aside: the key's later jobs
	// go on meanwhile, and the retry runs when due, one at a time with them.
	SkipFailed bool
	// Weights give some keys more turns than others: a key of weight 3 is served three times
	// for one turn of a key of weight 1. Missing keys weigh 1. At most 1000 entries.
	Weights map[string]int
	// Fair serves the queue's keyed jobs in turn with no other limit (implied by any other
	// field).
	Fair bool
}

// on reports whether p serves keyed jobs.
func (p KeyPolicy) on() bool {
	return p.Fair || p.Sequence || p.Concurrency > 0 || p.Rate != (Rate{}) || len(p.Weights) > 0
}

// hold reports whether a failed job holds its key.
func (p KeyPolicy) hold() bool { return p.Sequence && !p.SkipFailed }

// store is p as a fetch carries it; nil when p serves no keyed jobs.
func (p KeyPolicy) store() *store.KeyPolicy {
	if !p.on() {
		return nil
	}
	c := p.Concurrency
	if p.Sequence {
		c = 1
	}
	r := p.Rate
	return &store.KeyPolicy{Concurrency: c, RateN: r.N, RatePer: r.Per, Weights: p.Weights, Hold: p.hold()}
}

// check validates p.
func (p KeyPolicy) check() *limitError {
	switch {
	case p.Concurrency < 0:
		return &limitError{"Keys.Concurrency", fmt.Sprintf("must not be negative, got %d", p.Concurrency)}
	case p.Sequence && p.Concurrency > 1:
		return &limitError{"Keys.Concurrency", fmt.Sprintf("a Sequence runs one job of a key at a time: leave Concurrency 0 or 1, got %d", p.Concurrency)}
	case p.SkipFailed && !p.Sequence:
		return &limitError{"Keys.SkipFailed", "applies to a Sequence only"}
	case len(p.Weights) > 1000:
		return &limitError{"Keys.Weights", fmt.Sprintf("at most 1000 entries, got %d", len(p.Weights))}
	}
	if r := p.Rate; r != (Rate{}) {
		if r.N < 1 {
			return &limitError{"Keys.Rate.N", fmt.Sprintf("must be at least 1, got %d", r.N)}
		}
		if r.Per < 1e6 {
			return &limitError{"Keys.Rate.Per", fmt.Sprintf("must be at least 1ms, got %s", r.Per)}
		}
	}
	for k, w := range p.Weights {
		if err := checkKey(k); err != nil {
			return &limitError{"Keys.Weights", err.Error()}
		}
		if w < 1 || w > 1000 {
			return &limitError{"Keys.Weights", fmt.Sprintf("weight of %q must be 1 to 1000, got %d", k, w)}
		}
	}
	return nil
}
