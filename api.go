package exq

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/serverclock"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// API reads and changes what is stored in Redis: queues, scheduled, retry and dead jobs,
// processes, stats, and signals to nodes (Exq.Api). It runs no goroutines. Every listing is
// paginated and every search scans in pages, so no call loads an unbounded set into memory.
// Get one from a running node with Exq.API, or without one with NewAPI.
type API struct {
	conn     *store.Conn
	jq       *store.Store
	log      *slog.Logger
	wakeOnce *sync.Once         // the missing channel permission is reported once
	clock    *serverclock.Clock // the Redis server's clock, for the calls that need the time
	opened   bool               // NewAPI connected it: Close ends its use of conn
	closed   atomic.Bool        // Close was called
}

// now reads the Redis server's clock (serverclock.go), taking a sample first when the last
// one is old.
func (a *API) now(ctx context.Context) (time.Time, error) {
	if err := a.clock.FreshForClient(ctx); err != nil {
		return time.Time{}, err
	}
	return a.clock.Now(), nil
}

// Namespace is the namespace the API works on ("" for none).
func (a *API) Namespace() string { return a.jq.Namespace() }

// NewAPI connects to Redis and returns an API that needs no running node (Exq's api mode);
// opts.MaxRetries is not used. A program that also starts a node passes the node's options:
// NewAPI(ctx, opts.ClientOptions()). Close it when done.
func NewAPI(ctx context.Context, opts ClientOptions) (*API, error) {
	o, conn, err := openRedis(ctx, opts)
	if err != nil {
		return nil, err
	}
	jq, err := conn.Store(store.Config{Namespace: o.Namespace})
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &API{conn: conn, opened: true, jq: jq, log: o.Logger, wakeOnce: &sync.Once{}, clock: serverclock.New(conn.Time, time.Now, o.Logger)}, nil
}

// API returns the admin API on this node's Redis and namespace.
func (e *Exq) API() *API {
	jq, _ := e.conn.Store(store.Config{Namespace: e.jq.Namespace()}) // no WaitReplicas: no error
	return &API{conn: e.conn, jq: jq, log: e.log, wakeOnce: &sync.Once{}, clock: e.clock}
}

// Close closes the Redis client if NewAPI built it from RedisURL.
func (a *API) Close() error {
	if !a.opened || a.closed.Swap(true) {
		return nil
	}
	return a.conn.Close()
}

// Set names where a job is stored, for the API calls that work on any of them.
type Set string

// The sorted sets of jobs. A Set's value is the set's name in Redis and in Sidekiq's API
// (Sidekiq::ScheduledSet is named "schedule", as is Exq's key), so ScheduledSet is "schedule";
// the CLI's listing command and the dashboard's page say "scheduled", as Sidekiq Web's tab
// does, and the CLI's --set takes either.
const (
	RetrySet     Set = "retry"
	ScheduledSet Set = "schedule"
	DeadSet      Set = "dead"
)

// setKey checks s and returns the store's name of the set.
func (a *API) setKey(s Set) (string, error) {
	switch s {
	case RetrySet:
		return store.RetrySet, nil
	case ScheduledSet:
		return store.ScheduleSet, nil
	case DeadSet:
		return store.DeadSet, nil
	}
	return "", fmt.Errorf("exq: api: unknown set %q (want retry, schedule or dead)", s)
}

// JobRecord is a stored document: its exact raw string (what Remove and Requeue take), for a
// sorted set its score as a time (due time for retry and schedule, time of death for dead),
// and the job decoded from it, which Job returns with the error that a document some other
// program wrote may bring.
type JobRecord struct {
	Raw   string
	At    time.Time
	Score float64

	job *Job
	err error
}

// Job returns the decoded job. Its error, matching ErrUndecodableJob, says why a document
// cannot be decoded (not JSON, no class, args not a list); the record's Raw is still right,
// so the document can be removed or inspected.
func (r JobRecord) Job() (*Job, error) {
	if r.job == nil && r.err == nil {
		return nil, fmt.Errorf("%w: empty JobRecord", ErrUndecodableJob)
	}
	return r.job, r.err
}

func record(raw string, score float64, queue string) JobRecord {
	r := JobRecord{Raw: raw, Score: score, At: wire.ParseTime(score)}
	h, err := wire.DecodeHeader(raw)
	if err != nil {
		r.err = fmt.Errorf("%w: %v", ErrUndecodableJob, err)
		return r
	}
	if queue == "" {
		queue = h.Queue
	}
	r.job = newJob(h, raw, queue, DefaultMaxRetries)
	return r
}

// ListOptions pages a listing. Size 0 means 100.
type ListOptions struct {
	Offset, Size int
	// Reverse flips the order: queues list newest first and retry/schedule soonest first
	// (dead newest first) unless Reverse is set.
	Reverse bool
}

func (o ListOptions) bounds() (start, stop int64, err error) {
	if o.Offset < 0 || o.Size < 0 {
		return 0, 0, fmt.Errorf("exq: api: offset and size must not be negative")
	}
	size := o.Size
	if size == 0 {
		size = 100
	}
	return int64(o.Offset), int64(o.Offset + size - 1), nil
}

// Queues lists the known queue names, sorted.
func (a *API) Queues(ctx context.Context) ([]string, error) {
	qs, err := a.jq.KnownQueues(ctx)
	sort.Strings(qs)
	return qs, err
}

// QueueSize is the number of jobs waiting in queue q.
func (a *API) QueueSize(ctx context.Context, q string) (int64, error) {
	return a.jq.QueueSize(ctx, q)
}

// QueueSizes maps every known queue to its number of waiting jobs.
func (a *API) QueueSizes(ctx context.Context) (map[string]int64, error) {
	qs, err := a.Queues(ctx)
	if err != nil || len(qs) == 0 {
		return map[string]int64{}, err
	}
	return a.jq.QueueSizes(ctx, qs)
}

// RemoveQueue deletes queue q and its waiting jobs: the queue's list and its name in the set
// of queues, as Sidekiq Web's Delete does. Keyed jobs wait in their keys' lists, not in the
// queue's list (docs/keys.md): they are kept, and a node serving q runs them.
func (a *API) RemoveQueue(ctx context.Context, q string) error {
	return a.jq.RemoveQueue(ctx, q)
}

// PauseQueue pauses queue q on every exq node of the namespace: once it returns, no node
// fetches a job of q (the fetch script itself skips paused queues, so there is no window), and
// jobs of q already running finish normally. Enqueues keep landing in q. q need not exist yet.
// The state lives in Redis (the set <ns>:paused), so nodes started later see it; Exq and
// Sidekiq nodes working on the same queue do not.
func (a *API) PauseQueue(ctx context.Context, q string) error {
	if err := names.CheckQueue(q); err != nil {
		return fmt.Errorf("%w: pause: %w", ErrInvalidQueue, err)
	}
	if err := a.jq.Pause(ctx, q); err != nil {
		return fmt.Errorf("exq: pause queue %q: %w", q, err)
	}
	return nil
}

// ResumeQueue lets every node fetch from queue q again and wakes idle nodes at once. Resuming
// a queue that is not paused does nothing.
func (a *API) ResumeQueue(ctx context.Context, q string) error {
	if err := names.CheckQueue(q); err != nil {
		return fmt.Errorf("%w: resume: %w", ErrInvalidQueue, err)
	}
	wakeErr, err := a.jq.Resume(ctx, q)
	if err != nil {
		return fmt.Errorf("exq: resume queue %q: %w", q, err)
	}
	if wakeErr != nil {
		a.warnWake(wakeErr)
	}
	return nil
}

// warnWake says once per API that this Redis user cannot use the wake-up channel: what it
// did is done, and idle nodes find it at their next poll.
func (a *API) warnWake(err error) {
	if a.wakeOnce == nil || a.log == nil {
		return
	}
	a.wakeOnce.Do(func() {
		a.log.Warn("exq: api: cannot publish on the wake-up channel; changes still take effect, and idle nodes see them at their next poll (grant the channel, e.g. ACL &"+
			a.jq.WakeChannel()+")", "channel", a.jq.WakeChannel(), "error", err)
	})
}

// PausedQueues lists the paused queues, sorted.
func (a *API) PausedQueues(ctx context.Context) ([]string, error) {
	qs, err := a.jq.Paused(ctx)
	if err != nil {
		return nil, fmt.Errorf("exq: paused queues: %w", err)
	}
	sort.Strings(qs)
	return qs, nil
}

// Jobs lists the jobs waiting in queue q, newest first (the next to run is last), or oldest
// (next to run) first with Reverse.
func (a *API) Jobs(ctx context.Context, q string, o ListOptions) ([]JobRecord, error) {
	start, stop, err := o.bounds()
	if err != nil {
		return nil, err
	}
	if o.Reverse {
		start, stop = -stop-1, -start-1
	}
	raws, err := a.jq.QueueRange(ctx, q, start, stop)
	if err != nil {
		return nil, err
	}
	if o.Reverse {
		for i, j := 0, len(raws)-1; i < j; i, j = i+1, j-1 {
			raws[i], raws[j] = raws[j], raws[i]
		}
	}
	out := make([]JobRecord, len(raws))
	for i, raw := range raws {
		out[i] = record(raw, 0, q)
	}
	return out, nil
}

// Retries lists the retry set, soonest due first (Reverse: latest first).
func (a *API) Retries(ctx context.Context, o ListOptions) ([]JobRecord, error) {
	return a.listSet(ctx, RetrySet, o, false)
}

// Scheduled lists the schedule set, soonest due first (Reverse: latest first).
func (a *API) Scheduled(ctx context.Context, o ListOptions) ([]JobRecord, error) {
	return a.listSet(ctx, ScheduledSet, o, false)
}

// Dead lists the dead set, most recent death first (Reverse: oldest first).
func (a *API) Dead(ctx context.Context, o ListOptions) ([]JobRecord, error) {
	return a.listSet(ctx, DeadSet, o, true)
}

func (a *API) listSet(ctx context.Context, s Set, o ListOptions, newestFirst bool) ([]JobRecord, error) {
	key, err := a.setKey(s)
	if err != nil {
		return nil, err
	}
	start, stop, err := o.bounds()
	if err != nil {
		return nil, err
	}
	zs, err := a.jq.SetRange(ctx, key, start, stop, newestFirst != o.Reverse)
	if err != nil {
		return nil, err
	}
	out := make([]JobRecord, len(zs))
	for i, z := range zs {
		out[i] = record(z.Raw, z.Score, "")
	}
	return out, nil
}

// Size is the number of jobs in a sorted set.
func (a *API) Size(ctx context.Context, s Set) (int64, error) {
	key, err := a.setKey(s)
	if err != nil {
		return 0, err
	}
	return a.jq.SetSize(ctx, key)
}

// findPage is how many entries a search reads per round trip.
const findPage = 500

// hasJID reports whether raw is the document of job jid; the cheap substring test skips the
// decode for almost every non-matching job. A jid that JSON may escape (a quote, a backslash,
// <, >, &, a control or non-ASCII character) is not searched as a substring: its document
// may hold it escaped.
func hasJID(raw, jid string) bool {
	if IsRef(jid) {
		ref, _, _ := strings.Cut(jid, "@")
		return RefOf(raw) == ref
	}
	if plainJID(jid) && !strings.Contains(raw, jid) {
		return false
	}
	h, err := wire.DecodeHeader(raw)
	return err == nil && h.JID == jid
}

func plainJID(jid string) bool {
	for i := 0; i < len(jid); i++ {
		if c := jid[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// FindInQueue finds job jid (or the document of a Ref) waiting in queue q, scanning the list in
// pages. No job with that jid is ErrJobNotFound.
func (a *API) FindInQueue(ctx context.Context, q, jid string) (JobRecord, error) {
	for start := int64(0); ; start += findPage {
		raws, err := a.jq.QueueRange(ctx, q, start, start+findPage-1)
		if err != nil {
			return JobRecord{}, err
		}
		for _, raw := range raws {
			if hasJID(raw, jid) {
				return record(raw, 0, q), nil
			}
		}
		if len(raws) < findPage {
			return JobRecord{}, fmt.Errorf("%w: %s in queue %s", ErrJobNotFound, jid, q)
		}
	}
}

// Find finds job jid (or the document of a Ref) in a sorted set (RetrySet, ScheduledSet or
// DeadSet), scanning it in pages. No job with that jid is ErrJobNotFound.
func (a *API) Find(ctx context.Context, s Set, jid string) (JobRecord, error) {
	key, err := a.setKey(s)
	if err != nil {
		return JobRecord{}, err
	}
	for start := int64(0); ; start += findPage {
		zs, err := a.jq.SetRange(ctx, key, start, start+findPage-1, false)
		if err != nil {
			return JobRecord{}, err
		}
		for _, z := range zs {
			if hasJID(z.Raw, jid) {
				return record(z.Raw, z.Score, ""), nil
			}
		}
		if len(zs) < findPage {
			return JobRecord{}, fmt.Errorf("%w: %s in %s", ErrJobNotFound, jid, s)
		}
	}
}
