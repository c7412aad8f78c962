// Package flows is the logic of batches, workflows and results behind the root package's
// public API: checking ids and graphs, building what a batch's or workflow's write stores,
// reading the replies and states back, and waiting for results. Every Redis call is the
// store's (internal/store); the root package hands over its jobs as Specs, already able to
// render their documents, and never the other way round: this package must not import it.
package flows

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Errors the root package exports under the same names (errors.go documents them).
var (
	ErrInvalidBatch     = errors.New("exq: invalid batch")
	ErrBatchNotFound    = errors.New("exq: batch not found")
	ErrBatchExists      = errors.New("exq: batch exists")
	ErrNotInBatch       = errors.New("exq: not in a running job of a batch")
	ErrBatchClosed      = errors.New("exq: batch is not open")
	ErrInvalidWorkflow  = errors.New("exq: invalid workflow")
	ErrWorkflowNotFound = errors.New("exq: workflow not found")
	ErrWorkflowExists   = errors.New("exq: workflow exists")
	ErrResultTooLarge   = errors.New("exq: result too large")
	ErrNoResult         = errors.New("exq: no result")
)

// Default lifetimes of a batch's and a workflow's data.
const (
	BatchTTL       = 24 * time.Hour
	BatchExpiry    = 30 * 24 * time.Hour
	WorkflowTTL    = 24 * time.Hour
	WorkflowExpiry = 30 * 24 * time.Hour
)

// Env is what the writes of batches and workflows use besides their specs.
type Env struct {
	Store *store.Store
	// Now is the server's time for operation op, or why it cannot be known.
	Now func(ctx context.Context, op string) (time.Time, error)
	// Enqueued reports a job written to its queue (the JobEnqueued event).
	Enqueued func(queue, class, jid string)
}

// Spec is one job of a batch or workflow as the root package hands it over.
type Spec struct {
	Queue string
	// Label is how a refusal names the job ("job 3" when empty).
	Label string
	// Scheduled is true for a job given At or In, which a batch or workflow refuses.
	Scheduled bool
	// Build renders the job with the flow fields f; unique reports that it took a unique
	// lock option, which a batch or workflow refuses. Its error names the job already.
	Build func(ctx context.Context, now time.Time, f *wire.NewJob) (job store.FlowJob, unique bool, err error)
}

type badFunc func(op, format string, a ...any) error

func badBatch(op, format string, a ...any) error {
	return fmt.Errorf("exq: %s: %s: %w", op, fmt.Sprintf(format, a...), ErrInvalidBatch)
}

func badWorkflow(op, format string, a ...any) error {
	return fmt.Errorf("exq: %s: %s: %w", op, fmt.Sprintf(format, a...), ErrInvalidWorkflow)
}

// build validates and renders specs; flow gives each its fields. The EnqueueHooks of the jobs
// hear the write's result through finish; when a job is refused, those of the jobs built
// before it hear the refusal.
func build(ctx context.Context, now time.Time, op string, specs []Spec, flow func(i int) *wire.NewJob, bad badFunc) ([]store.FlowJob, error) {
	out := make([]store.FlowJob, 0, len(specs))
	fail := func(err error) ([]store.FlowJob, error) {
		finish(out, err)
		return nil, err
	}
	for i, s := range specs {
		label := s.Label
		if label == "" {
			label = fmt.Sprintf("job %d", i)
		}
		if s.Scheduled {
			return fail(bad(op, "%s is scheduled (At or In): jobs of a batch or workflow are enqueued now", label))
		}
		j, unique, err := s.Build(ctx, now, flow(i))
		if err != nil {
			return fail(err)
		}
		out = append(out, j)
		if ReservedJID(j.JID) {
			return fail(bad(op, "%s: jid %q is reserved: a jid of a job of a batch or workflow must not begin with %q, "+
				"the prefix of the batch layout's own members (a child batch, an open batch's mark)", label, j.JID, ReservedPrefix))
		}
		if unique {
			return fail(bad(op, "%s is unique: a unique lock would decide alone whether it runs", label))
		}
	}
	return out, nil
}

// ReservedPrefix begins the members of a batch's pending hash and jobs set that are not jobs:
// "batch:<bid>" for a child batch (batch_add.lua) and store.OpenMember ("batch::open") for an
// open batch. No jid of a job of a batch or workflow may begin with it.
const ReservedPrefix = "batch:"

// ReservedJID reports whether jid begins with ReservedPrefix.
func ReservedJID(jid string) bool { return strings.HasPrefix(jid, ReservedPrefix) }

// finish tells the EnqueueHooks of jobs how their write went: written (err nil, or a
// shortfall of replicas), or not.
func finish(jobs []store.FlowJob, err error) {
	written := err == nil || errors.Is(err, store.ErrNotReplicated)
	for _, j := range jobs {
		jid := j.JID
		if !written {
			jid = ""
		}
		for _, f := range j.Done {
			f(jid, err)
		}
	}
}

// enqueued reports jobs written to their queues and returns their jids.
func enqueued(env Env, jobs []store.FlowJob) []string {
	jids := make([]string, len(jobs))
	for i, j := range jobs {
		env.Enqueued(j.Queue, j.Class, j.JID)
		jids[i] = j.JID
	}
	return jids
}

// failed reports whether err leaves nothing written (a shortfall of replicas is written).
func failed(err error) bool { return err != nil && !errors.Is(err, store.ErrNotReplicated) }

// orDefault is d, or def when d is zero.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// ttlSeconds is d (or def) in whole seconds, at least 1, as stored.
func ttlSeconds(d, def time.Duration) string {
	return fmt.Sprint(max(int64(orDefault(d, def)/time.Second), 1))
}

// CheckID refuses a batch or workflow id that would make its keys ambiguous or unreadable:
// longer than 200 bytes, not valid UTF-8, or holding a space, a control or format character
// (bidi overrides included), ':' (the key separator), '{' or '}' (a Redis Cluster hash tag, which
// would move the id's keys to another slot), or a glob character ('*', '?', '[', ']', '\').
func CheckID(id string) error {
	if len(id) > 200 {
		return fmt.Errorf("longer than 200 bytes")
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("%q is not valid UTF-8", id)
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
			return fmt.Errorf("%q holds the space or control character %U: use letters, digits, '-', '_' or '.'", id, r)
		}
		if strings.ContainsRune(":*?[]\\{}", r) {
			return fmt.Errorf("%q holds %q, which has a meaning in a Redis key: use letters, digits, '-', '_' or '.'", id, r)
		}
	}
	return nil
}

// Shard picks, among stores (one per shard), the one that holds a batch or workflow with id
// (a new id when empty) and parent (a batch id, or ""): the parent's shard for a child, else
// the one id hashes to. It returns the store's index and the id.
func Shard(ctx context.Context, stores []*store.Store, id, parent string) (int, string, error) {
	if id == "" {
		id = wire.NewJID()
	}
	if parent == "" {
		h := fnv.New32a()
		_, _ = h.Write([]byte(id))
		return int(h.Sum32() % uint32(len(stores))), id, nil
	}
	for i, st := range stores {
		ok, err := st.BatchExists(ctx, parent)
		if err != nil {
			return 0, "", fmt.Errorf("exq: new batch: looking for parent %s: %w", parent, err)
		}
		if ok {
			return i, id, nil
		}
	}
	return 0, "", fmt.Errorf("exq: new batch %s: parent batch %s: %w", id, parent, ErrBatchNotFound)
}
