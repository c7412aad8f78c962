package exq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/cronspec"
	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Defaults of Options. They are Exq's unless a field's comment says otherwise.
const (
	DefaultRedisURL             = "redis://127.0.0.1:6379/0"
	DefaultRedisTimeout         = 5 * time.Second
	DefaultNamespace            = "exq"
	DefaultQueue                = "default"
	DefaultConcurrency          = 100
	DefaultPollTimeout          = 100 * time.Millisecond
	DefaultSchedulerPollTimeout = 200 * time.Millisecond
	DefaultMaxRetries           = 25
	DefaultDeadMaxJobs          = 10000
	DefaultDeadTimeout          = 180 * 24 * time.Hour
	DefaultShutdownTimeout      = 5 * time.Second
	DefaultHeartbeatInterval    = 5 * time.Second
	DefaultMissedHeartbeats     = 3
	// DefaultWaitTimeout is how long an enqueue waits for WaitReplicas replicas (exq's own).
	DefaultWaitTimeout = time.Second
)

// ForeignHeartbeatWindow is how long a node that beats in the heartbeats set without saying
// how often (an Exq node, or an exq node from before v1) may go without a beat before it
// counts as dead and its backup lists are rescued: Exq's default window, 60 s × (5 + 1). exq
// nodes publish their own window (HeartbeatInterval × (MissedHeartbeatsAllowed + 1)) and are
// judged by it, so nodes beating at different rates never take each other for dead. It is the
// default of Options.ForeignHeartbeatWindow.
const ForeignHeartbeatWindow = 6 * time.Minute

// NoDeadJobs, as Options.DeadMaxJobs, keeps no dead jobs at all (the zero value of the field
// means DefaultDeadMaxJobs).
const NoDeadJobs = -1

// KeepNoDeadJobs is NoDeadJobs under its earlier name.
//
// Deprecated: use NoDeadJobs, named as NoRetries and NoRegisterGrace are.
const KeepNoDeadJobs = NoDeadJobs

// Queue is a queue this node works on and how many of its jobs may run at once.
type Queue struct {
	// Name of the queue, as in Exq and Sidekiq ("default", "mail", "billing:high"). Refused
	// wherever exq names a queue (here, Subscribe, enqueues): "::", a ':' at either end, '/',
	// '$', control characters and leading or trailing space (docs/queues.md, "Queue names", says why).
	Name string
	// Concurrency is the most jobs of this queue that run at the same time on this node.
	// Zero means Options.Concurrency.
	Concurrency int
	// GlobalLimit is the most jobs of this queue that run at the same time on all the nodes of
	// the namespace together (docs/queues.md). Zero means no such limit. Each job
	// holds a lease, taken in the fetch, renewed with the heartbeat (so a killed node's slots
	// free within its heartbeat window) and released as soon as the job ends. While nodes wait
	// for a slot, none holds more than one lease beyond the waiting node that holds fewest, so
	// the slots are shared out and a node behind a slow link cannot keep them. Requires
	// heartbeats.
	GlobalLimit int
	// Rate is the most jobs of this queue that start per period on all the nodes together,
	// spread out evenly; jobs beyond it wait in the queue. The zero Rate means no limit.
	Rate Rate
	// Keys makes this node serve the queue's keyed jobs (enqueued with Key) by this policy:
	// per key limits, rates, sequences and turns (docs/keys.md). The zero KeyPolicy serves
	// none: keyed jobs wait until a node serves the queue with one.
	Keys KeyPolicy
}

// ClientOptions configures what connects to Redis and writes jobs without running any:
// NewClient (enqueue only) and NewAPI (admin). The zero value of every field means its default.
// A node's Options has the same fields; Options.ClientOptions returns them.
type ClientOptions struct {
	// RedisURL is where Redis is: redis://[user:password@]host:port/db, or rediss:// for TLS.
	// A Redis Cluster is redis://host:port?cluster=true&addr=host2:port&… (go-redis'
	// ParseClusterURL form and cluster=true; docs/cluster.md).
	// Default DefaultRedisURL. Ignored when Redis is set. The password never appears in
	// logs or errors.
	RedisURL string
	// Redis is a client of the caller's (Cluster, Sentinel, custom TLS…). exq uses it and leaves
	// it open on Close or Stop. For Cluster, give a namespace with a hash tag ("{exq}") so that
	// every key lands in one slot.
	Redis redis.UniversalClient
	// RedisTimeout bounds each Redis command when exq builds the client from RedisURL.
	// Default 5 s.
	RedisTimeout time.Duration

	// Namespace prefixes every key ("exq" gives "exq:queue:default"). Default "exq". Use
	// NoNamespace for keys without any prefix.
	Namespace string
	// NoNamespace stores keys without a prefix ("queue:default"), as a Sidekiq without
	// redis-namespace does. Namespace must then be empty.
	NoNamespace bool

	// MaxRetries is written as "retry" into jobs enqueued without exq.MaxRetries. Default (0)
	// 25; NoRetries for none. NewAPI does not use it.
	MaxRetries int

	// MillisecondTimestamps writes the timestamps of the jobs this client enqueues (created_at,
	// enqueued_at) as integer epoch milliseconds, as Sidekiq 8 does, instead of float epoch
	// seconds, as Exq and Sidekiq 6 and 7 do. Set it only when every Sidekiq sharing the queues
	// is 8 or later: Sidekiq 6 and 7 and Exq read a timestamp as seconds. exq reads both forms
	// whatever this says (docs/interop.md). Default false: seconds.
	MillisecondTimestamps bool

	// WaitReplicas makes every enqueue return only once this many replicas have the job
	// (Redis WAIT on the write's connection); see Options.WaitReplicas. Default 0: no wait.
	WaitReplicas int
	// WaitTimeout bounds that wait; see Options.WaitTimeout. Default DefaultWaitTimeout.
	WaitTimeout time.Duration

	// Logger receives exq's own log lines. Default slog.Default().
	Logger *slog.Logger
	// Listeners receive a JobEnqueued event for every job this client writes (see Listener).
	Listeners []Listener
	// EnqueueHooks see every job this client writes, before and after the write (tracing:
	// see EnqueueHook).
	EnqueueHooks []EnqueueHook
}

// withDefaults validates c and fills in its defaults. Errors name the field.
func (c ClientOptions) withDefaults() (ClientOptions, error) {
	bad := func(field, format string, args ...any) (ClientOptions, error) {
		return c, fmt.Errorf("%w: %s: %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
	}
	if c.Redis == nil && c.RedisURL == "" {
		c.RedisURL = DefaultRedisURL
	}
	if c.Redis == nil {
		if err := store.CheckURL(c.RedisURL); err != nil {
			return c, err
		}
	}
	if c.RedisTimeout < 0 {
		return bad("RedisTimeout", "must not be negative, got %s", c.RedisTimeout)
	}
	if c.RedisTimeout == 0 {
		c.RedisTimeout = DefaultRedisTimeout
	}
	if err := c.replicaDefaults(); err != nil {
		return c, err
	}
	for i, l := range c.Listeners {
		if l == nil {
			return bad(fmt.Sprintf("Listeners[%d]", i), "is nil")
		}
	}
	for i, h := range c.EnqueueHooks {
		if h == nil {
			return bad(fmt.Sprintf("EnqueueHooks[%d]", i), "is nil")
		}
	}
	if c.NoNamespace && c.Namespace != "" {
		return bad("Namespace", "must be empty when NoNamespace is set, got %q", c.Namespace)
	}
	if !c.NoNamespace && c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if !sentinelDefault(&c.MaxRetries, DefaultMaxRetries, NoRetries) {
		return bad("MaxRetries", "must be NoRetries or not negative, got %d", c.MaxRetries)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if err := checkClusterNamespace(c); err != nil {
		return c, err
	}
	return c, nil
}

// Options configures a node started with Start. The zero value of every field means its
// default, so Options{} runs the "default" queue against Redis on localhost (as River's and
// asynq's Config do). A field whose "none" is a real setting spells none with a sentinel named
// No…: NoRetries (MaxRetries), NoDeadJobs (DeadMaxJobs), NoRegisterGrace (RegisterGrace).
// Per-call options take the literal value instead: exq.MaxRetries(0) is no retries, as
// exq.MaxRetries(NoRetries) is.
type Options struct {
	// RedisURL is where Redis is: redis://[user:password@]host:port/db, or rediss:// for TLS.
	// A Redis Cluster is redis://host:port?cluster=true&addr=host2:port&… (go-redis'
	// ParseClusterURL form and cluster=true; docs/cluster.md).
	// Default DefaultRedisURL. Ignored when Redis is set. The password never appears in
	// logs or errors.
	RedisURL string
	// Redis is a client of the caller's (Cluster, Sentinel, custom TLS…). exq uses it and leaves
	// it open on Stop. For Cluster, give a namespace with a hash tag ("{exq}") so that every key
	// lands in one slot.
	Redis redis.UniversalClient
	// RedisTimeout bounds each Redis command when exq builds the client from RedisURL.
	// Default 5 s.
	RedisTimeout time.Duration

	// Namespace prefixes every key ("exq" gives "exq:queue:default"). Default "exq". Use
	// NoNamespace for keys without any prefix.
	Namespace string
	// NoNamespace stores keys without a prefix ("queue:default"), as a Sidekiq without
	// redis-namespace does. Namespace must then be empty.
	NoNamespace bool

	// Queues this node works on. nil means "default" with Concurrency; an empty, non-nil
	// slice means none (a node that only enqueues and schedules until Subscribe is called).
	Queues []Queue
	// Concurrency is the per-queue limit for queues that do not set their own. Default 100.
	Concurrency int
	// Dequeuer, when set, decides how many of each queue's free slots this node may fetch now,
	// and hears of every job fetched and finished and of Stop (see Dequeuer). Default nil:
	// each queue's Concurrency alone.
	Dequeuer Dequeuer
	// Register are the workers of this node, each for its class (build them with WorkerFor,
	// for a JobArgs type, or as a Registration literal). They are registered before the first
	// fetch, so the jobs already waiting run at once; give workers here rather than with
	// AddWorker after Start. A class given twice (here or in Workers) is ErrInvalidOptions
	// wrapping ErrAlreadyRegistered.
	Register []Registration
	// Workers maps job classes to the code that runs them, as Register's Registration
	// literals do (prefer Register; Workers stays for code that has such a map). More can be
	// added with Exq.Register or AddWorker while the node runs.
	Workers map[string]Worker
	// RegisterGrace is how long after Start the node waits for the worker of a job whose
	// class has none: such a job goes back to the end of its queue (not a failure, no retry
	// used) and is fetched again later, so workers added with AddWorker just after Start still
	// get the jobs that were waiting. After it, or once Exq.RegistrationDone is called, the
	// job fails with error_class "exq.UnknownClass" (and is retried or dead like any
	// failure). Default DefaultRegisterGrace (10 s); NoRegisterGrace for none.
	RegisterGrace time.Duration
	// Middleware wraps every job run, outermost first.
	Middleware []Middleware

	// PollTimeout is how long an idle node first waits between polls of its queues; the wait
	// doubles after each empty poll up to 50 × PollTimeout (at most 5 s, never less than
	// PollTimeout) and drops back on a wake-up or a job found. Jobs enqueued through exq wake
	// idle nodes at once, so the wait bounds the pickup delay only for jobs nobody announced
	// (pushed by other runtimes, or whose wake-up was lost): 5 s at most with the default.
	// Default 100 ms.
	PollTimeout time.Duration
	// DisableBlockingIdleWait turns off the blocking wait on idle queues and leaves foreign
	// pushes to polling (within the idle poll cap above). By default, each queue that an idle
	// node polled empty gets a BLMOVE of the queue onto itself, which blocks on a connection of
	// its own until a job is pushed and leaves the queue unchanged; the node then fetches at
	// once. So a job pushed without a wake-up (Sidekiq's client, Exq's enqueue, a plain LPUSH)
	// starts within milliseconds. Cost: one more connection per idle queue, and one BLMOVE per
	// idle queue per idle poll cap. It needs Redis 6.2 or later and a *redis.Client or
	// *redis.ClusterClient (or RedisURL); otherwise polling alone is used.
	DisableBlockingIdleWait bool
	// SchedulerPollTimeout bounds how late the scheduler moves a due scheduled or retry job
	// that exq wrote (it sleeps until the earliest job is due, and exq's writes announce
	// earlier ones), and the wait after a failure. The scheduler looks at the sets at least
	// every 25 × SchedulerPollTimeout (at most 5 s, never less than SchedulerPollTimeout): the
	// bound for jobs other runtimes schedule. Default 200 ms.
	SchedulerPollTimeout time.Duration
	// Periodic are schedules this node writes to Redis at Start (docs/queues.md, "Periodic jobs"): a
	// new one is created, an existing one keeps its status and history and gets the rest.
	// Every node (without DisableScheduler) enqueues the ticks of every schedule of the
	// namespace, these and those others wrote, exactly once per tick in all. Errors at Start
	// name the schedule.
	Periodic []PeriodicJob
	// PeriodicGrace is how late a tick may still be enqueued: when no node ran at a tick, the
	// first node up within this long after it enqueues it (only the latest such tick; earlier
	// ones are skipped). Default DefaultPeriodicGrace (1 minute, as sidekiq-cron).
	PeriodicGrace time.Duration
	// DisableScheduler turns off the scheduler on this node, and with it the enqueueing of
	// periodic jobs. Some node must run it, or scheduled jobs and retries never come due and
	// periodic jobs never run.
	DisableScheduler bool

	// MaxRetries is written as "retry" into jobs enqueued without exq.MaxRetries, and is the
	// limit for jobs whose "retry" is true. Default (0) 25; NoRetries for none.
	MaxRetries int
	// Backoff is the delay before retry number retryCount (1 for the first retry) of job.
	// Default: Exq's retryCount^4 + 15 + rand(0..30)·(retryCount+1) seconds.
	Backoff func(retryCount int, job *Job) time.Duration
	// DeadMaxJobs is how many jobs the dead set keeps (the newest). Default (0) 10 000;
	// NoDeadJobs for none.
	DeadMaxJobs int
	// DeadTimeout is how long a dead job is kept. Default 180 days.
	DeadTimeout time.Duration
	// ResultTTL is how long a result stored by a job of this node (SetResult, TypedResult) is
	// kept. Default (0) DefaultResultTTL.
	ResultTTL time.Duration
	// ResultMaxBytes is the largest result, as JSON, a job of this node may store; a larger
	// one is refused with ErrResultTooLarge. Default (0) DefaultResultMaxBytes.
	ResultMaxBytes int
	// StepTTL is how long the durable steps of a job of this node (Step) are kept once the job
	// has succeeded, and past a retry's due time. Default (0) DefaultStepTTL.
	StepTTL time.Duration
	// KeepExpiredJobs moves a job that expired before it started (ExpiresIn, ExpiresAt) to the
	// dead set, with error_class "exq.Expired", instead of dropping it. Default false: dropped.
	KeepExpiredJobs bool

	// JobTimeout bounds how long a job may run: when it passes, the job's context is cancelled
	// and, once the worker returns, the job fails with error_class "exq.Timeout" and is retried
	// like any failure. A worker with a Timeout() time.Duration method overrides it (a negative
	// value there means no timeout). Default 0: no timeout.
	JobTimeout time.Duration

	// ShutdownTimeout is how long Stop lets running jobs finish before it cancels their
	// contexts and hands them back to the front of their queues. Default 5 s.
	ShutdownTimeout time.Duration

	// NodeID names this node's backup lists. Default "<hostname>:<pid>:<random>", so two
	// processes never share one (this differs from Exq, which uses the hostname). Set a fixed
	// NodeID only if it stays unique per process and you want a restarted process to take back
	// the jobs its predecessor had in flight.
	NodeID string

	// DisableHeartbeat stops this node from beating and from rescuing the backup lists of nodes
	// that stopped beating. Heartbeats are on by default (Exq has them off): with per-process
	// node ids, they are what brings back the in-flight jobs of a crashed process.
	DisableHeartbeat bool
	// HeartbeatInterval is how often the node beats and (twice as often) looks for dead nodes.
	// Default 5 s.
	HeartbeatInterval time.Duration
	// MissedHeartbeatsAllowed is how many beats a node may miss before it counts as dead: its
	// jobs are rescued HeartbeatInterval × (MissedHeartbeatsAllowed+1) after its last beat.
	// Default 3.
	MissedHeartbeatsAllowed int
	// ForeignHeartbeatWindow is how long a node that beats without publishing its window (an
	// Exq node: its heartbeat_interval × (missed_heartbeats_allowed + 1)) may go without a beat
	// before this node rescues its backup lists. Set it to the Exq fleet's window: shorter than
	// Exq's heartbeat_interval re-runs the jobs of live Exq nodes; longer only delays the rescue
	// of a dead one. Default ForeignHeartbeatWindow (6 min, Exq's defaults). Sharing a fleet with
	// Exq nodes, HeartbeatInterval must also be shorter than the shortest Exq window, or Exq takes
	// this node for dead and runs its jobs a second time; Start warns when Exq's beats show a
	// shorter spacing (docs/mixed-fleets.md).
	ForeignHeartbeatWindow time.Duration
	// DisableStats stops the processed/failed counters and this node's list of running jobs
	// (the UIs' Busy page). The node still registers itself and reads its signals.
	DisableStats bool
	// DisableMetrics stops the per-class run metrics that Sidekiq 7 and 8's Web UI shows in its
	// Metrics tab (runs, failures, milliseconds and a run-time histogram per class and minute,
	// under both versions' key names, kept 8 hours; Sidekiq 8's ten-minute rollup 3 days).
	// They are written with the counters, once a second. DisableStats stops them too.
	DisableMetrics bool

	// Tag names this node's application in Sidekiq's Web UI: the Busy page shows it next to the
	// process, as it shows a Ruby process' -g tag. Default: the binary's name
	// (filepath.Base(os.Args[0])). Plain text; the Web UI does not escape it, so <, >, &, quotes
	// and control characters are refused.
	Tag string
	// Labels are shown next to the process on Sidekiq's Busy page, after "exq-go", which every
	// exq node carries so operators can tell it from a Ruby one. Same characters as Tag; no
	// empty or repeated labels.
	Labels []string

	// MillisecondTimestamps writes job timestamps as integer epoch milliseconds, as Sidekiq 8
	// does, instead of float epoch seconds (Exq, Sidekiq 6 and 7): created_at and enqueued_at
	// of the jobs this node enqueues, and failed_at and retried_at of a job without timestamps
	// of its own. A retry writes a job's failure times in the unit its own timestamps use, so one
	// job never mixes units. Set it only when every Sidekiq sharing the queues is 8 or later.
	// exq reads both forms whatever this says (docs/interop.md). Default false: seconds.
	MillisecondTimestamps bool

	// WaitReplicas asks for durable writes on a replicated Redis (Sentinel, or a master with
	// replicas): every enqueue (Enqueue, EnqueueIn, EnqueueAt, EnqueueAll) and every outcome
	// write (ack, retry, snooze, dead, hand-back) is followed by WAIT WaitReplicas WaitTimeout on
	// the same connection. An enqueue that fewer replicas confirmed in time returns an error
	// wrapping ErrNotReplicated (the job was written on the master). An outcome write that
	// fewer replicas confirmed is logged and counts as written: a failover before the replicas
	// have it can run the job again, not lose it. Replication is asynchronous: without
	// WaitReplicas, a failover loses the enqueues the replica had not yet received. Costs a
	// wait for the slowest of those replicas on each write (well under a millisecond on a
	// local network), and WaitTimeout per write while fewer replicas are up. Default 0: no
	// WAIT, no cost.
	WaitReplicas int
	// WaitTimeout is how long a write waits for WaitReplicas replicas. It must be shorter than
	// RedisTimeout (and than the read timeout of a caller's client), which bounds the reply.
	// A call whose ctx ends sooner waits for three quarters of what its ctx leaves, so that it
	// still gets the answer (ErrNotReplicated: the job is written) rather than a timeout.
	// Default DefaultWaitTimeout (1 s), or half of RedisTimeout if that is shorter.
	WaitTimeout time.Duration

	// Logger receives exq's own log lines. Default slog.Default().
	Logger *slog.Logger
	// Listeners receive the node's events: every job's enqueue, start and outcome, and the
	// node's own life (see Event). With none, events cost nothing per job.
	Listeners []Listener
	// EnqueueHooks see every job this node writes (Enqueue calls, periodic jobs), before and
	// after the write (see EnqueueHook).
	EnqueueHooks []EnqueueHook
}

// ClientOptions returns the fields of o that NewClient and NewAPI use, so that a program
// that starts a node can open an API or an enqueue-only client on the same Redis:
// exq.NewAPI(ctx, opts.ClientOptions()).
func (o Options) ClientOptions() ClientOptions {
	return ClientOptions{RedisURL: o.RedisURL, Redis: o.Redis, RedisTimeout: o.RedisTimeout, Namespace: o.Namespace,
		NoNamespace: o.NoNamespace, MaxRetries: o.MaxRetries, WaitReplicas: o.WaitReplicas, WaitTimeout: o.WaitTimeout,
		MillisecondTimestamps: o.MillisecondTimestamps, Logger: o.Logger, Listeners: o.Listeners, EnqueueHooks: o.EnqueueHooks}
}

// testHooks are the knobs only tests turn. They are not options: Start uses the zero value
// (the defaults below), and tests pass their own to start.
type testHooks struct {
	// now is this node's own clock, which a test skews. Default time.Now. The node reads the
	// Redis server's clock with it (serverClock); no decision reads it directly.
	now func() time.Time
	// serverNow, when set, stands for the Redis server's clock: the node takes no sample of
	// TIME and times every job, tick and lock by it, so a test can pin those times exactly.
	serverNow func() time.Time
	// schedulerPage is the scheduler's page size. Default 100.
	schedulerPage int
	// pingInterval and statsInterval pace the node ping (5 s, as Exq and Sidekiq) and the
	// stats flush (1 s).
	pingInterval, statsInterval time.Duration
	// indexTrimEvery is how often a node of the namespace starts a pass over the batch and
	// workflow listings to trim expired ids (flows.DefaultTrimEvery, a minute).
	indexTrimEvery time.Duration
}

func (h testHooks) withDefaults() testHooks {
	if h.now == nil {
		h.now = time.Now
	}
	if h.schedulerPage <= 0 {
		h.schedulerPage = 100
	}
	if h.pingInterval <= 0 {
		h.pingInterval = 5 * time.Second
	}
	if h.statsInterval <= 0 {
		h.statsInterval = time.Second
	}
	return h
}

// settings is what a node runs with: its validated Options and the test hooks.
type settings struct {
	Options
	testHooks
}

// withDefaults validates o and fills in its defaults, and adds the test hooks (the zero value
// outside tests). Errors name the field.
func (o Options) withDefaults(h testHooks) (settings, error) {
	bad := func(field, format string, args ...any) (settings, error) {
		return settings{}, fmt.Errorf("%w: %s: %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
	}
	c, err := o.ClientOptions().withDefaults()
	if err != nil {
		return settings{}, err
	}
	o.RedisURL, o.Redis, o.RedisTimeout, o.Namespace, o.NoNamespace, o.MaxRetries, o.Logger =
		c.RedisURL, c.Redis, c.RedisTimeout, c.Namespace, c.NoNamespace, c.MaxRetries, c.Logger
	o.WaitReplicas, o.WaitTimeout = c.WaitReplicas, c.WaitTimeout
	if o.Concurrency < 0 {
		return bad("Concurrency", "must not be negative, got %d", o.Concurrency)
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Queues == nil {
		o.Queues = []Queue{{Name: DefaultQueue}}
	}
	seen := map[string]bool{}
	qs := make([]Queue, len(o.Queues))
	for i, q := range o.Queues {
		field := fmt.Sprintf("Queues[%d]", i)
		if err := names.CheckQueue(q.Name); err != nil {
			return bad(field+".Name", "%v", err)
		}
		if seen[q.Name] {
			return bad(field+".Name", "queue %q is listed twice", q.Name)
		}
		seen[q.Name] = true
		if q.Concurrency < 0 {
			return bad(field+".Concurrency", "must not be negative, got %d", q.Concurrency)
		}
		if q.Concurrency == 0 {
			q.Concurrency = o.Concurrency
		}
		if err := q.checkLimits(); err != nil {
			return bad(field+"."+err.field, "%s", err.msg)
		}
		if err := q.Keys.check(); err != nil {
			return bad(field+"."+err.field, "%s", err.msg)
		}
		if q.Keys.on() && (q.GlobalLimit > 0 || q.Rate != (Rate{})) {
			return bad(field+".Keys", "cannot be combined with the queue's GlobalLimit or Rate yet")
		}
		if (q.Keys.Concurrency > 0 || q.Keys.Sequence) && o.DisableHeartbeat {
			return bad(field+".Keys", "a Concurrency or Sequence needs heartbeats, which renew the leases; DisableHeartbeat is set")
		}
		if q.GlobalLimit > 0 && o.DisableHeartbeat {
			return bad(field+".GlobalLimit", "needs heartbeats, which renew the leases; DisableHeartbeat is set")
		}
		qs[i] = q
	}
	o.Queues = qs
	for class, w := range o.Workers {
		if class == "" {
			return bad("Workers", "a worker is registered under an empty class")
		}
		if w == nil {
			return bad("Workers", "class %q has a nil worker", class)
		}
	}
	if err := checkRegistrations(o.Workers, o.Register); err != nil {
		return settings{}, err
	}
	switch {
	case o.RegisterGrace == NoRegisterGrace:
		o.RegisterGrace = 0
	case o.RegisterGrace < 0:
		return bad("RegisterGrace", "must be NoRegisterGrace or not negative, got %s", o.RegisterGrace)
	case o.RegisterGrace == 0:
		o.RegisterGrace = DefaultRegisterGrace
	}
	for i, m := range o.Middleware {
		if m == nil {
			return bad(fmt.Sprintf("Middleware[%d]", i), "is nil")
		}
	}
	for _, d := range []struct {
		field string
		v     *time.Duration
		def   time.Duration
	}{
		{"PollTimeout", &o.PollTimeout, DefaultPollTimeout},
		{"SchedulerPollTimeout", &o.SchedulerPollTimeout, DefaultSchedulerPollTimeout},
		{"DeadTimeout", &o.DeadTimeout, DefaultDeadTimeout},
		{"ShutdownTimeout", &o.ShutdownTimeout, DefaultShutdownTimeout},
		{"HeartbeatInterval", &o.HeartbeatInterval, DefaultHeartbeatInterval},
		{"ForeignHeartbeatWindow", &o.ForeignHeartbeatWindow, ForeignHeartbeatWindow},
		{"JobTimeout", &o.JobTimeout, 0},
		{"StepTTL", &o.StepTTL, DefaultStepTTL},
	} {
		if *d.v < 0 {
			return bad(d.field, "must not be negative, got %s", *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if !sentinelDefault(&o.DeadMaxJobs, DefaultDeadMaxJobs, NoDeadJobs) {
		return bad("DeadMaxJobs", "must be NoDeadJobs or not negative, got %d", o.DeadMaxJobs)
	}
	if o.MissedHeartbeatsAllowed < 0 {
		return bad("MissedHeartbeatsAllowed", "must not be negative, got %d", o.MissedHeartbeatsAllowed)
	}
	if o.MissedHeartbeatsAllowed == 0 {
		o.MissedHeartbeatsAllowed = DefaultMissedHeartbeats
	}
	if o.Backoff == nil {
		o.Backoff = ExqBackoff
	}
	if o.NodeID == "" {
		o.NodeID = names.DefaultNodeID()
	} else if strings.Contains(o.NodeID, "::") {
		return bad("NodeID", "must not contain \"::\" (it separates the parts of backup list keys), got %q", o.NodeID)
	}
	if o.Tag == "" {
		o.Tag = names.DefaultTag()
	} else if err := names.CheckLabel(o.Tag); err != nil {
		return bad("Tag", "%v", err)
	}
	labels := []string{NodeLabel}
	for i, l := range o.Labels {
		if err := names.CheckLabel(l); err != nil {
			return bad(fmt.Sprintf("Labels[%d]", i), "%v", err)
		}
		if slices.Contains(labels, l) {
			return bad(fmt.Sprintf("Labels[%d]", i), "label %q is listed twice (%q is always there)", l, NodeLabel)
		}
		labels = append(labels, l)
	}
	o.Labels = labels
	names := map[string]bool{}
	for i, p := range o.Periodic {
		field := fmt.Sprintf("Periodic[%d]", i)
		if _, _, err := p.check(); err != nil {
			return settings{}, fmt.Errorf("%w: %s: %w", ErrInvalidOptions, field, err)
		}
		if names[p.Name] {
			return bad(field, "periodic job %q is listed twice", p.Name)
		}
		names[p.Name] = true
	}
	if o.PeriodicGrace < 0 {
		return bad("PeriodicGrace", "must not be negative, got %s", o.PeriodicGrace)
	}
	if o.PeriodicGrace == 0 {
		o.PeriodicGrace = DefaultPeriodicGrace
	}
	return settings{Options: o, testHooks: h.withDefaults()}, nil
}

// NodeLabel is the label every exq node shows on Sidekiq's Busy page (Options.Labels).
const NodeLabel = "exq-go"

// sentinelDefault resolves an int option whose zero value means def, so that "none" is spelled
// with a negative sentinel: none becomes 0. It reports false for any other negative value.
func sentinelDefault(v *int, def, none int) bool {
	switch {
	case *v == none:
		*v = 0
	case *v < 0:
		return false
	case *v == 0:
		*v = def
	}
	return true
}

// Redis Cluster. One namespace lives in one hash slot: its name carries a hash tag ("{exq}"),
// so every key of it, and so every script, lands on one master.

// checkClusterNamespace refuses a namespace whose keys would spread over several hash slots on
// a Redis Cluster (the caller's *redis.ClusterClient, or RedisURL with cluster=true): exq's
// scripts and transactions touch several keys at once, which a cluster allows in one slot only.
func checkClusterNamespace(c ClientOptions) error {
	cluster := false
	if c.Redis != nil {
		cluster = store.IsCluster(c.Redis)
	} else {
		var err error
		if cluster, err = store.ClusterURL(c.RedisURL); err != nil {
			return err
		}
	}
	if !cluster || names.HashTag(c.Namespace) != "" {
		return nil
	}
	if c.NoNamespace {
		return fmt.Errorf(`%w: NoNamespace: keys without a namespace spread over every hash slot of a Redis Cluster; `+
			`use a namespace with a hash tag such as "{exq}"`, ErrInvalidOptions)
	}
	return fmt.Errorf(`%w: Namespace: %q needs a hash tag such as "{%s}" on a Redis Cluster, so that all its keys share one slot`,
		ErrInvalidOptions, c.Namespace, strings.Trim(c.Namespace, "{}"))
}

// openRedis validates opts and connects, for the constructors that run no node.
func openRedis(ctx context.Context, opts ClientOptions) (ClientOptions, *store.Conn, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return o, nil, err
	}
	conn, err := connect(ctx, o)
	return o, conn, err
}

// connect opens o's Redis: the caller's client, or one built from RedisURL (store.Open).
func connect(ctx context.Context, o ClientOptions) (*store.Conn, error) {
	return store.Open(ctx, store.ConnOptions{Client: o.Redis, URL: o.RedisURL, Timeout: o.RedisTimeout, Logger: o.Logger})
}

// newStore returns the store of o's namespace on conn for node ("" for a client or an API),
// with o's WaitReplicas, or an error when the client's read timeout would cut the wait short.
func newStore(o ClientOptions, conn *store.Conn, node string) (*store.Store, error) {
	return conn.Store(store.Config{Namespace: o.Namespace, Node: node, WaitReplicas: o.WaitReplicas,
		WaitTimeout: o.WaitTimeout, Logger: o.Logger})
}

// Redis Sentinel and replicas.

// replicaDefaults validates WaitReplicas and WaitTimeout and fills in the timeout's default.
func (c *ClientOptions) replicaDefaults() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
	}
	if c.WaitReplicas < 0 {
		return bad("WaitReplicas", "must not be negative, got %d", c.WaitReplicas)
	}
	if c.WaitTimeout < 0 {
		return bad("WaitTimeout", "must not be negative, got %s", c.WaitTimeout)
	}
	if c.WaitTimeout == 0 && c.WaitReplicas > 0 {
		c.WaitTimeout = min(DefaultWaitTimeout, c.RedisTimeout/2)
	}
	// WAIT is read in a pipeline, where the connection's read timeout (RedisTimeout, for a
	// client exq builds) bounds its reply: a longer wait would read as a broken connection.
	if c.WaitReplicas > 0 && c.WaitTimeout >= c.RedisTimeout {
		return bad("WaitTimeout", "must be shorter than RedisTimeout (%s), got %s", c.RedisTimeout, c.WaitTimeout)
	}
	return nil
}

// ExqBackoff is the default retry delay, Exq's (and classic Sidekiq's) formula:
// retryCount⁴ + 15 + rand(0..30)·(retryCount+1) seconds, retryCount being 1 for the first
// retry. 25 retries span about 25 days. A negative retryCount counts as 0, and one above 309
// as 309 (about 289 years), the largest whose delay fits in a time.Duration: a job with a
// hostile retry_count never gets a delay that overflows into the past.
func ExqBackoff(retryCount int, _ *Job) time.Duration {
	n := float64(min(max(retryCount, 0), maxBackoffCount))
	sec := math.Pow(n, 4) + 15 + float64(rand.IntN(31))*(n+1)
	return time.Duration(sec * float64(time.Second))
}

// maxBackoffCount is the largest retry count whose Exq backoff, random part included, fits in
// a time.Duration: 309⁴ + 15 + 30·310 s < 2⁶³ ns < 310⁴ s.
const maxBackoffCount = 309

// DefaultRegisterGrace is Options.RegisterGrace's default.
const DefaultRegisterGrace = 10 * time.Second

// NoRegisterGrace, as Options.RegisterGrace, makes a job whose class has no worker fail at
// once, from the node's start on (the zero value of the field means DefaultRegisterGrace).
const NoRegisterGrace = -1

// Registration is one worker given to Start in Options.Register: the class it runs and the
// Worker. WorkerFor builds one from a typed function; a literal works for any Worker:
//
//	exq.Registration{Class: "Billing::Invoice", Worker: exq.Typed(invoice)}
//
// The ways to register a worker, one per case (docs/jobs.md, "Registering workers"):
//   - at start, for an args type with Class(): Options.Register with WorkerFor(fn), the
//     recommended way (WorkerForResult(fn) for a function that returns a result);
//   - at start, for a class string chosen elsewhere or any Worker: Options.Register with a
//     Registration literal (Typed(fn) for typed args; Options.Workers, a map, does the same);
//   - while the node runs: AddWorker(e, fn) (AddWorkerResult) for an args type with Class(),
//     e.Register(class, w) for any other Worker;
//   - in a test: AddWorker (or Register) on an exqtest double.
type Registration struct {
	// Class is the job class the worker runs ("MyApp.Signup", "Billing::Invoice").
	Class string
	// Worker runs the jobs of Class.
	Worker Worker

	err error // what WorkerFor could not build; Start reports it naming the field
}

// check reports what makes r unusable.
func (r Registration) check() error {
	switch {
	case r.err != nil:
		return r.err
	case r.Class == "":
		return errors.New("class is empty")
	case r.Worker == nil:
		return fmt.Errorf("class %q has a nil worker", r.Class)
	}
	return nil
}

// checkRegistrations validates Options.Workers and Options.Register together: no entry is
// incomplete and no class has two workers.
func checkRegistrations(ws map[string]Worker, regs []Registration) error {
	for i, r := range regs {
		field := fmt.Sprintf("Register[%d]", i)
		if err := r.check(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidOptions, field, err)
		}
		if _, ok := ws[r.Class]; ok {
			return fmt.Errorf("%w: %s: %w: %q is in Workers too", ErrInvalidOptions, field, ErrAlreadyRegistered, r.Class)
		}
		for j := range i {
			if regs[j].Class == r.Class {
				return fmt.Errorf("%w: %s: %w: %q is Register[%d] too", ErrInvalidOptions, field, ErrAlreadyRegistered, r.Class, j)
			}
		}
	}
	return nil
}

// PeriodicJob is a schedule: a job of Class with Args goes to Queue at every tick of Spec,
// exactly once per tick however many nodes run (docs/queues.md, "Periodic jobs"). Schedules live in
// Redis in sidekiq-cron 1.x's layout, so Sidekiq processes running sidekiq-cron share them.
type PeriodicJob struct {
	// Name identifies the schedule in the namespace. It may not contain "/" or "$" (Sidekiq
	// Web could not reach it) nor end in ":enqueued" or ":jid_history".
	Name string `json:"name"`
	// Spec is when it runs: a cron line of 5 fields (minute hour day month weekday) or 6 with
	// the seconds first, with an optional time zone name at the end ("0 9 * * 1-5
	// Europe/Paris"); or @yearly, @monthly, @weekly, @daily, @midnight, @hourly; or "@every
	// 30s" where the interval divides a minute, an hour or a day (stored as the cron line it
	// stands for, "*/30 * * * * *", so that sidekiq-cron reads it too).
	Spec string `json:"spec"`
	// Queue the jobs go to. Default "default".
	Queue string `json:"queue"`
	// Class is the worker class of the jobs.
	Class string `json:"class"`
	// Args must encode to a JSON array; nil is the empty list.
	Args any `json:"args,omitempty"`
	// Timezone is an IANA zone name ("America/New_York") the Spec's times are in, when the
	// Spec names none. Default: the process's local zone (TZ), which is also sidekiq-cron's.
	Timezone string `json:"timezone,omitempty"`
	// Description is shown by Sidekiq Web's Cron tab.
	Description string `json:"description,omitempty"`
	// Disabled creates the schedule disabled. It applies only when the schedule is new: an
	// existing schedule keeps the status it has in Redis (enable and disable it with the API,
	// the CLI or Sidekiq Web).
	Disabled bool `json:"disabled,omitempty"`

	classErr error // PeriodicArgs could not read the class
}

// DefaultPeriodicGrace is how late a tick may still be enqueued (Options.PeriodicGrace): a
// tick missed because no node ran is enqueued when a node starts within this long after it.
// It is sidekiq-cron's own limit.
const DefaultPeriodicGrace = time.Minute

// storedSpec is the cron line exq writes for p: @every turned into the cron line it stands
// for, and Timezone appended when the spec names no zone, so every reader (sidekiq-cron too)
// computes the same ticks.
func (p PeriodicJob) storedSpec() (string, error) {
	line, _, err := cronspec.Every(p.Spec)
	if err != nil || p.Timezone == "" {
		return line, err
	}
	if d, ok := cronspec.Descriptors[line]; ok {
		line = d
	}
	if fields := strings.Fields(line); len(fields) > 0 && !cronspec.ZoneLike(fields[len(fields)-1]) {
		line += " " + p.Timezone
	}
	return line, nil
}

// check validates p and returns its stored spec and parsed schedule. Errors name the field.
func (p PeriodicJob) check() (string, cronspec.Schedule, error) {
	bad := func(field, format string, a ...any) (string, cronspec.Schedule, error) {
		return "", cronspec.Schedule{}, fmt.Errorf("%w %q: %s: %s", ErrInvalidPeriodic, p.Name, field, fmt.Sprintf(format, a...))
	}
	switch {
	case p.Name == "":
		return bad("Name", "is empty")
	case strings.ContainsAny(p.Name, "/$"):
		return bad("Name", `must not contain "/" or "$" (Sidekiq Web could not reach it)`)
	case strings.HasSuffix(p.Name, ":enqueued") || strings.HasSuffix(p.Name, ":jid_history"):
		return bad("Name", "must not end in :enqueued or :jid_history (the keys of another schedule)")
	case p.classErr != nil:
		return bad("Class", "%v", p.classErr)
	case p.Class == "":
		return bad("Class", "is empty")
	}
	if err := names.CheckQueue(p.queue()); err != nil {
		return bad("Queue", "%v", err)
	}
	if _, err := wire.EncodeArgs(p.Args); err != nil {
		return bad("Args", "%v", err)
	}
	line, err := p.storedSpec()
	if err != nil {
		return bad("Spec", "%v", err)
	}
	if p.Timezone != "" {
		if _, err := time.LoadLocation(p.Timezone); err != nil {
			return bad("Timezone", "%v", err)
		}
	}
	s, err := cronspec.Parse(line, "")
	if err != nil {
		return bad("Spec", "%v", err)
	}
	return line, s, nil
}

func (p PeriodicJob) queue() string {
	if p.Queue == "" {
		return DefaultQueue
	}
	return p.Queue
}

// stored is p as the store saves it at now: line is its stored spec, s its schedule. The
// ticks before now as exq sees them, and as sidekiq-cron does (the latest at or before the
// second before now), are passed along: a poll of either in this second must not fire a tick
// from before.
func (p PeriodicJob) stored(line string, s cronspec.Schedule, now time.Time) (store.CronJob, error) {
	args, err := wire.EncodeArgs(p.Args)
	if err != nil {
		return store.CronJob{}, err
	}
	var prev []string
	for _, at := range []time.Time{now, now.Truncate(time.Second).Add(-time.Second)} {
		if t := s.Latest(at); !t.IsZero() && !slices.Contains(prev, wire.CronTick(t)) {
			prev = append(prev, wire.CronTick(t))
		}
	}
	return store.CronJob{Name: p.Name, Class: p.Class, Queue: p.queue(), Description: p.Description, Spec: line,
		Args: args, Disabled: p.Disabled, Prev: prev}, nil
}
