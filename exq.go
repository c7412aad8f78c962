// Package exq runs background jobs from Redis in the layout of Elixir's Exq and Ruby's Sidekiq,
// so a Go service can share queues with them: a job pushed by Sidekiq or Exq runs on a Go
// worker, and the other way round.
//
// A job's args can be a type that names its class; the worker and the enqueue side then share
// it. Start a node with the queues it works on and its workers (given to Start, they are there
// before the first fetch), enqueue from anywhere, and stop the node when the program is told to:
//
//	type Signup struct {
//		UserID int `json:"user_id"`
//	}
//
//	func (Signup) Class() string { return "MyApp.Signup" } // any class string, "MyApp::Signup" too
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	e, err := exq.Start(ctx, exq.Options{ // Ctrl-C or SIGTERM ends ctx, and that stops the workers
//		RedisURL: "redis://127.0.0.1:6379/0",
//		Queues:   []exq.Queue{{Name: "default", Concurrency: 50}},
//		Register: []exq.Registration{
//			exq.WorkerFor(func(ctx context.Context, job *exq.Job, a Signup) error {
//				return sendWelcome(ctx, a.UserID) // an error (or a panic) is retried with backoff
//			}),
//		},
//	})
//	if err != nil {
//		return err
//	}
//
//	jid, err := exq.EnqueueArgs(ctx, e, Signup{UserID: 42}) // args on the wire: [{"user_id":42}]
//
//	<-e.Done()                          // ctx ended, or a TERM from Sidekiq's or Exq's UI
//	return e.Stop(context.Background()) // running jobs get ShutdownTimeout to finish
//
// Enqueueing through e works until Stop is called, even once ctx has stopped the workers: a
// web service stops accepting requests, drains them (they may still enqueue), then calls Stop
// (examples/webservice).
//
// Jobs of other runtimes, with positional args, run on a WorkerFunc that reads them with
// job.Bind, and are enqueued with e.Enqueue(ctx, "default", "MyApp.SendEmail", []any{42, "welcome"}).
// A worker that returns an error (or panics) is retried with Exq's backoff, up to MaxRetries
// times, then moved to the dead set. Jobs are never lost: a job leaves Redis only after its
// outcome is stored, and a node that dies leaves its jobs in a backup list from which they
// are run again.
package exq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exqgo/exq/internal/acker"
	"github.com/exqgo/exq/internal/eventorder"
	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/heartbeat"
	"github.com/exqgo/exq/internal/loop"
	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/presence"
	"github.com/exqgo/exq/internal/registry"
	"github.com/exqgo/exq/internal/scheduler"
	"github.com/exqgo/exq/internal/serverclock"
	"github.com/exqgo/exq/internal/store"
)

// Exq is a running node: it fetches and runs jobs of its queues and enqueues new ones. It is
// safe for concurrent use. Create it with Start; end it with Stop.
type Exq struct {
	opts  settings
	conn  *store.Conn
	log   *slog.Logger
	clock *serverclock.Clock // the Redis server's clock; opts.now reads it

	jq       *store.Store
	enq      *enqueuer
	registry *registry.Registry[Worker]
	mgr      *manager
	runner   *runner
	stats    *stats
	acker    *acker.Acker
	events   listeners // Options.Listeners
	pinger   *presence.Pinger
	hb       *heartbeat.Heartbeat

	cancelRun context.CancelFunc
	graceOver chan struct{}
	wakeups   *store.Wakeups
	loops     loop.Group // fetching and scheduling: end when Stop starts
	cancelOps context.CancelFunc
	ops       loop.Group // stats, ping, heartbeat: end once the jobs have drained

	done     chan struct{} // closed when the node is asked to stop (TERM or Stop)
	doneOnce sync.Once

	stopping  atomic.Bool
	stopped   atomic.Bool // Stop has closed the enqueue side
	closeOnce sync.Once
	stopDone  chan struct{} // closed when the first Stop returns
	jobsDone  chan struct{} // closed when the last job goroutine has ended
}

// Start validates opts, connects to Redis, takes back this node's own unfinished jobs when
// opts.NodeID is fixed, and starts fetching and scheduling. It fails with ErrInvalidOptions
// (naming the field), ErrRedisUnavailable (naming the address, never the password) or
// ErrRedisOOM (Redis is out of memory: a node does not join then, though the nodes already
// running carry on).
//
// ctx bounds start-up and the life of the node's workers: when it ends after Start returned
// (the signal of signal.NotifyContext, a parent's cancel, a deadline), the node stops its
// workers as Stop does (it fetches no more, running jobs get ShutdownTimeout to finish, the
// rest go back to their queues) and Done is closed. Enqueueing through the node keeps working
// until the program calls Stop, which waits for that stop to end, closes the enqueue side and
// returns nil: a program waits on Done, drains its own requests, then calls Stop. Pass
// context.Background() for a node that only Stop ends: a deadline meant for start-up alone
// would stop the workers when it passes.
func Start(ctx context.Context, opts Options) (*Exq, error) { return start(ctx, opts, testHooks{}) }

// start is Start with the knobs only tests turn.
func start(ctx context.Context, opts Options, hooks testHooks) (*Exq, error) {
	fixedNode := opts.NodeID != ""
	foreignDeclared := opts.ForeignHeartbeatWindow != 0
	o, err := opts.withDefaults(hooks)
	if err != nil {
		return nil, err
	}
	e := &Exq{opts: o, log: o.Logger, stopDone: make(chan struct{}), jobsDone: make(chan struct{}), graceOver: make(chan struct{}),
		done: make(chan struct{})}
	e.conn, err = connect(ctx, o.ClientOptions())
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Exq, error) {
		_ = e.conn.Close()
		return nil, store.MarkOOM(err)
	}

	// Every time several nodes rely on is the Redis server's (serverclock.go): from here on,
	// o.now reads it, and the node's own clock (hooks.now) only measures time between samples.
	e.clock = serverclock.New(e.conn.Time, o.now, e.log)
	if o.serverNow != nil {
		o.now = o.serverNow
	} else {
		cctx, cancel := context.WithTimeout(ctx, o.RedisTimeout)
		err := e.clock.Sync(cctx)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("exq: start: %w", err))
		}
		o.now = e.clock.Now
	}
	e.opts = o

	e.jq, err = newStore(o.ClientOptions(), e.conn, o.NodeID)
	if err != nil {
		return fail(err)
	}
	e.events = listeners{fns: o.Listeners, node: o.NodeID, log: e.log, order: &eventorder.Order{}}
	e.enq = &enqueuer{jq: e.jq, now: o.now, maxRetries: o.MaxRetries, events: e.events, hooks: o.EnqueueHooks,
		unit: stampUnit(o.MillisecondTimestamps)}
	e.registry = newRegistry(o.Workers, o.Register, o.RegisterGrace)
	e.stats = newStats(e.jq, o.statsInterval, o.now, e.log, o.DisableStats, o.DisableMetrics)
	e.acker = acker.New(e.jq, o.RedisTimeout, e.log)
	e.mgr = newManager(managerParts{jq: e.jq, acker: e.acker, dequeuer: o.Dequeuer,
		events: e.events, timeout: o.RedisTimeout, pollTimeout: o.PollTimeout, leaseTTL: o.HeartbeatInterval * time.Duration(o.MissedHeartbeatsAllowed+1),
		now: o.now, log: e.log}, o.Queues)
	e.runner = newRunner(runnerParts{jq: e.jq, acker: e.acker, registry: e.registry, stats: e.stats, events: e.events, node: e,
		release: e.mgr.release, setJID: e.mgr.setJID, mayBegin: e.mgr.mayBegin, done: e.done, graceOver: e.graceOver, middleware: o.Middleware,
		now: o.now, log: e.log, maxRetries: o.MaxRetries, jobTimeout: o.JobTimeout, redisTimeout: o.RedisTimeout,
		deadTimeout: o.DeadTimeout, deadMaxJobs: o.DeadMaxJobs, defaultBackoff: o.Backoff, unit: e.enq.unit,
		steps: &stepConfig{store: e.jq, ttl: o.StepTTL, timeout: o.RedisTimeout}, keepExpired: o.KeepExpiredJobs})
	e.mgr.perform = e.runner.process // the manager hands each fetched job to the runner
	e.pinger = presence.New(presence.Parts{Store: e.jq, View: pingView{e.mgr}, Handle: e.handleSignal, Stopping: e.stopping.Load,
		Tag: o.Tag, Labels: o.Labels, Version: nodeVersion(), StatsDisabled: o.DisableStats, Refresh: o.statsInterval,
		PingEvery: o.pingInterval, Now: o.now, Log: e.log, OnPing: onPing((&flows.ForeignWatch{Store: e.jq, Log: e.log, Report: func(r flows.ForeignRun) {
			e.events.emit(Event{Kind: ForeignRun, Queue: r.Queue, Class: r.Class, JID: r.JID, Flow: cmp.Or(r.Batch, r.Workflow), From: r.Node})
		}}).Check, &flows.IndexTrim{Store: e.jq, Every: o.indexTrimEvery})})

	e.publishLimits(ctx)
	if err := e.savePeriodic(ctx); err != nil {
		return fail(err)
	}
	if fixedNode {
		if err := e.recoverOwnBackups(ctx); err != nil {
			return fail(err)
		}
	}
	if !o.DisableHeartbeat {
		// Beat before the first fetch: a node that crashed with jobs in its backup list but
		// never beat would never be rescued.
		var rescued func(queue, from string, n int) // JobsRescued
		if e.events.has() {
			rescued = func(q, from string, n int) { e.events.emit(Event{Kind: JobsRescued, Queue: q, Count: n, From: from}) }
		}
		e.hb = heartbeat.New(heartbeat.Parts{Store: e.jq, Interval: o.HeartbeatInterval, Missed: o.MissedHeartbeatsAllowed,
			Foreign: o.ForeignHeartbeatWindow, Timeout: o.RedisTimeout, Queues: pingView{e.mgr}.Subscriptions, Leases: e.mgr.heldLeases,
			Orphan: e.mgr.orphanAll, Rescued: rescued, Log: e.log})
		if err := e.hb.Join(ctx); err != nil {
			return fail(fmt.Errorf("exq: start: first heartbeat: %w", err))
		}
		e.mgr.alive, e.mgr.epoch = e.hb.Current, e.jq.Epoch
	}

	opsCtx, cancelOps := context.WithCancel(context.Background())
	e.cancelOps = cancelOps
	e.ops.Go(opsCtx, "acker", e.acker.Run)
	e.ops.Go(opsCtx, "stats", e.stats.Run)
	e.ops.Go(opsCtx, "pinger", e.pinger.Run)
	if o.serverNow == nil {
		e.ops.Go(opsCtx, "server clock", func(ctx context.Context) { e.clock.Run(ctx, o.HeartbeatInterval, o.RedisTimeout) })
	}
	if e.hb != nil {
		e.ops.Go(opsCtx, "heartbeat", e.hb.Run)
		watch := heartbeat.NewWatch(e.jq, o.HeartbeatInterval, o.ForeignHeartbeatWindow, foreignDeclared, o.RedisTimeout, e.log)
		e.ops.Go(opsCtx, "exq beat watch", watch.Run)
	}

	e.checkWakeChannel(ctx)

	runCtx, cancelRun := context.WithCancel(context.Background())
	e.cancelRun = cancelRun
	var sched *scheduler.Scheduler
	var due func(string)
	if !o.DisableScheduler {
		sched = scheduler.New(e.jq, o.SchedulerPollTimeout, o.schedulerPage, o.now, e.log, o.RedisTimeout)
		due = sched.Due
	}
	e.wakeups = e.jq.SubscribeWake(runCtx)
	e.loops.Go(runCtx, "wake-ups", func(context.Context) { e.mgr.listen(e.wakeups, due) }) // ends when Stop closes them
	if !o.DisableBlockingIdleWait {
		// Made here, past every failure of Start: the poll loop's end closes it.
		e.mgr.idle = e.jq.NewIdleWaiter(max(idleCap(o.PollTimeout), idleWaitBlock), func() { signal(e.mgr.wake) }, e.log)
	}
	e.loops.Go(runCtx, "manager", e.mgr.run)
	if sched != nil {
		e.loops.Go(runCtx, "scheduler", sched.Run)
		p := newPeriodicRunner(e.enq, o.PeriodicGrace, o.RedisTimeout, o.now, e.log)
		e.loops.Go(runCtx, "periodic runner", p.Run)
	}
	e.stopWhenDone(ctx)
	e.log.Info("exq: started", "node", o.NodeID, "namespace", o.Namespace, "queues", len(o.Queues))
	if e.events.has() {
		e.events.emit(Event{Kind: NodeStarted})
	}
	return e, nil
}

// onPing is what a node does after each ping: the foreign-run watch, then a step of the trim
// of the batch and workflow listings (readers leave expired ids to the nodes).
func onPing(watch func(context.Context, []string) error, trim *flows.IndexTrim) func(context.Context, []string) error {
	return func(ctx context.Context, nodes []string) error {
		_, terr := trim.Step(ctx)
		return errors.Join(watch(ctx, nodes), terr)
	}
}

// stopWhenDone stops the node, as Stop does, once ctx (Start's) ends. Its goroutine ends when
// the node has stopped, whoever stopped it.
func (e *Exq) stopWhenDone(ctx context.Context) {
	if ctx.Done() == nil {
		return // never ends (context.Background)
	}
	go func() {
		select {
		case <-ctx.Done():
			e.startCtxEnded(ctx)
		case <-e.stopDone:
		}
	}()
}

// startCtxEnded stops the workers because ctx, Start's, has ended. It says so only when that
// is what stops the node, before the stop's own lines: when a Stop came first (and its end
// raced ctx's in stopWhenDone's select), the node has logged "exq: stopped" already and this
// logs nothing.
func (e *Exq) startCtxEnded(ctx context.Context) {
	why := func() {
		e.log.Info("exq: the context given to Start ended; stopping the workers (enqueueing works until Stop)", "node", e.opts.NodeID, "cause", context.Cause(ctx))
	}
	// Without ctx's end, or the stop would skip the grace period at once.
	if err := e.stopWorkersFor(context.WithoutCancel(ctx), why); err != nil {
		e.log.Error("exq: stop", "error", err)
	}
}

// recoverOwnBackups puts back every job this NodeID left in its backup lists (a previous
// process with the same id that crashed), at the front of its queue, oldest first, and drops
// the leases that process held.
func (e *Exq) recoverOwnBackups(ctx context.Context) error {
	known, err := e.jq.KnownQueues(ctx)
	if err != nil {
		return fmt.Errorf("exq: start: recover backup lists of node %s: %w", e.opts.NodeID, err)
	}
	queues := map[string]bool{}
	for _, q := range known {
		queues[q] = true
	}
	for _, q := range e.opts.Queues {
		queues[q.Name] = true
	}
	for q := range queues {
		n, err := e.jq.RecoverBackup(ctx, q)
		if err != nil {
			return fmt.Errorf("exq: start: recover backup list of node %s, queue %s: %w", e.opts.NodeID, q, err)
		}
		if n > 0 {
			e.log.Info("exq: recovered unfinished jobs of this node", "queue", q, "jobs", n)
		}
	}
	for _, q := range e.opts.Queues {
		if q.GlobalLimit == 0 {
			continue
		}
		if _, err := e.jq.DropOwnLeases(ctx, q.Name); err != nil {
			return fmt.Errorf("exq: start: drop the leases node %s left on queue %s: %w", e.opts.NodeID, q.Name, err)
		}
	}
	return nil
}

// NodeID is this node's identity: the name of its backup lists.
func (e *Exq) NodeID() string { return e.opts.NodeID }

// Subscribe makes the node work on queue with at most concurrency jobs at once (0 means
// Options.Concurrency), or changes the limit of a queue it already works on. Jobs of the
// queue that this node is running are not touched.
func (e *Exq) Subscribe(queue string, concurrency int) error {
	if e.stopping.Load() {
		return ErrStopped
	}
	if err := names.CheckQueue(queue); err != nil {
		return fmt.Errorf("exq: subscribe: %w", err)
	}
	if concurrency < 0 {
		return fmt.Errorf("exq: subscribe %s: concurrency must not be negative, got %d", queue, concurrency)
	}
	if concurrency == 0 {
		concurrency = e.opts.Concurrency
	}
	e.mgr.subscribe(Queue{Name: queue, Concurrency: concurrency})
	return nil
}

// Unsubscribe stops fetching jobs of queue; its running jobs finish normally. When it returns,
// no fetch of this node can take a job of queue any more (it waits for a fetch under way).
func (e *Exq) Unsubscribe(queue string) error {
	if e.stopping.Load() {
		return ErrStopped
	}
	e.mgr.unsubscribe(queue)
	return nil
}

// UnsubscribeAll stops fetching from every queue (the node goes quiet) while running jobs finish.
func (e *Exq) UnsubscribeAll() error {
	if e.stopping.Load() {
		return ErrStopped
	}
	e.mgr.unsubscribeAll()
	return nil
}

// Subscriptions lists the queues the node works on, in subscription order.
func (e *Exq) Subscriptions() []Queue { return e.mgr.subscriptions() }

// Enqueue pushes a job for class onto queue, to run as soon as a worker is free, and returns
// its jid. args must encode to a JSON array ([]any{42, "welcome"}, a typed slice, or nil).
// Errors match ErrInvalidJob (nothing written), ErrUniqueConflict (the holder's jid is
// returned), ErrStopped, or, with Options.WaitReplicas, ErrNotReplicated (the job was written
// on the master and its jid is returned, but too few replicas confirmed it in time).
func (e *Exq) Enqueue(ctx context.Context, queue, class string, args any, opts ...EnqueueOption) (string, error) {
	if e.stopped.Load() {
		return "", ErrStopped
	}
	return e.enq.enqueue(ctx, queue, class, args, opts)
}

// EnqueueIn schedules a job to run after delay d; a d of 0 or less enqueues it now. d is
// measured from now on the Redis server's clock, so a node whose own clock is off still
// schedules the job d from now.
func (e *Exq) EnqueueIn(ctx context.Context, queue, class string, d time.Duration, args any, opts ...EnqueueOption) (string, error) {
	if e.stopped.Load() {
		return "", ErrStopped
	}
	return e.enq.enqueueIn(ctx, queue, class, d, args, opts)
}

// EnqueueAt schedules a job to run at time t. A time that has passed (before 1970 too)
// enqueues it now; the zero time.Time is an error, since it is almost always a forgotten field.
// t is an instant, kept as given: the job is due when the Redis server's clock reaches it, and
// "has passed" is judged by that clock. A t computed from a clock that is off (time.Now() on a
// skewed machine, plus a delay) is off by as much: use EnqueueIn for a delay.
func (e *Exq) EnqueueAt(ctx context.Context, queue, class string, t time.Time, args any, opts ...EnqueueOption) (string, error) {
	if e.stopped.Load() {
		return "", ErrStopped
	}
	return e.enq.enqueueAt(ctx, "enqueue at", queue, class, t, args, opts)
}

// EnqueueAll writes a batch of immediate and scheduled jobs in one atomic step: all of them,
// or (on an error) none. Results are in the order of jobs.
func (e *Exq) EnqueueAll(ctx context.Context, jobs []JobSpec) ([]EnqueueResult, error) {
	if e.stopped.Load() {
		return nil, ErrStopped
	}
	return e.enq.enqueueAll(ctx, jobs)
}

// Stop ends the node. It stops fetching at once, lets running jobs finish for up to
// ShutdownTimeout (or until ctx ends), then cancels the contexts of jobs still running and
// hands those jobs back to the front of their queues, where another node runs them next.
// It returns when every goroutine it started has ended; a worker that ignores its context
// keeps Stop waiting until ctx ends, and Stop then returns ctx's error. Calling Stop again
// waits for the first call.
//
// Enqueueing works until Stop returns, so draining jobs can still enqueue; after it, the
// enqueue calls return ErrStopped and the Redis client exq built is closed. When the ctx given
// to Start ends (a signal), the node stops its workers as Stop does but enqueueing keeps
// working until the program calls Stop: a web service stops accepting requests, waits for
// those in flight (which may enqueue), then calls Stop.
func (e *Exq) Stop(ctx context.Context) error {
	err := e.stopWorkers(ctx)
	select {
	case <-e.stopDone:
		e.closeOnce.Do(func() {
			e.stopped.Store(true)
			_ = e.conn.Close()
		})
	default:
		// The first stop is still under way and uses the client: it stays open.
	}
	return err
}

// stopWorkers stops everything but the enqueue side: fetching, jobs, the background parts,
// and the node's registration in Redis. The end of Start's ctx calls it; Stop calls it and
// then closes the client.
func (e *Exq) stopWorkers(ctx context.Context) error { return e.stopWorkersFor(ctx, nil) }

// stopWorkersFor is stopWorkers; why, when not nil, logs the reason for the stop if this call
// is the one that stops the node.
func (e *Exq) stopWorkersFor(ctx context.Context, why func()) error {
	if !e.stopping.CompareAndSwap(false, true) {
		// A later call waits for what the first one started, and for workers it gave up on.
		for _, ch := range []chan struct{}{e.stopDone, e.jobsDone} {
			select {
			case <-ch:
			case <-ctx.Done():
				return fmt.Errorf("exq: stop: %d workers still running: %w", e.mgr.inFlight(), ctx.Err())
			}
		}
		e.mgr.stopWorkers()
		return nil
	}
	if why != nil {
		why()
	}
	defer close(e.stopDone)
	e.requestStop()
	if e.events.has() {
		e.events.emit(Event{Kind: NodeStopping})
		defer e.events.emit(Event{Kind: NodeStopped})
	}

	// The phases, in this order, each waiting for the one before:
	//  1. stop fetching and scheduling (the loops end; no job enters a backup list any more);
	//  2. drain: running jobs finish within the grace period, the rest are handed back;
	//  3. clean up: every worker has returned, the acker has written what they finished, and
	//     what is left in the backup lists goes back to its queue (proof: emptyBackups);
	//  4. end the background parts (stats, pings, heartbeat, acker);
	//  5. sign off: the last counters, and leave the heartbeats only with that proof.
	e.cancelRun()
	_ = e.wakeups.Close()
	e.loops.Wait()

	go func() {
		e.mgr.jobs.Wait()
		close(e.jobsDone)
	}()
	e.drainJobs(ctx)
	empty, stopErr := e.cleanUpBackups(ctx)
	e.mgr.cancelRuns(errShutdown)
	e.cancelOps()
	e.ops.Wait()
	e.signOff(context.WithoutCancel(ctx), empty)
	e.log.Info("exq: stopped", "node", e.opts.NodeID)
	return stopErr
}

// drainJobs lets running jobs finish for up to ShutdownTimeout (or until ctx ends), then
// hands those still running back to the front of their queues and cancels their contexts.
func (e *Exq) drainJobs(ctx context.Context) {
	grace := time.NewTimer(e.opts.ShutdownTimeout)
	defer grace.Stop()
	select {
	case <-e.jobsDone:
	case <-grace.C:
	case <-ctx.Done():
	}
	close(e.graceOver)
	if n := e.mgr.inFlight(); n > 0 {
		e.log.Warn("exq: stop: grace period over; cancelling running jobs and handing them back", "jobs", n)
		// Claim the jobs before cancelling them, so that a worker returning at once cannot
		// write an outcome (or hand its job back out of order) first.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.RedisTimeout)
		e.mgr.handBackAll(hctx)
		cancel()
		e.mgr.cancelRuns(errShutdown)
	}
}

// cleanUpBackups waits for every worker to return, for the acker to write what they finished,
// and then moves whatever is left in this node's backup lists back to their queues. It returns
// the proof that the backup lists are empty (nil when they may not be), or ctx's error if
// workers outlived it.
func (e *Exq) cleanUpBackups(ctx context.Context) (*emptyBackups, error) {
	select {
	case <-e.jobsDone:
		e.mgr.stopWorkers()
	case <-ctx.Done():
		return nil, fmt.Errorf("exq: stop: %d workers still running after their contexts were cancelled: %w", e.mgr.inFlight(), ctx.Err())
	}
	// Finished jobs must be acknowledged before the sweep, or it would run them again (their
	// leases go with them).
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.RedisTimeout)
	defer cancel()
	if !e.acker.Drain(sctx) {
		e.log.Error("exq: stop: finished jobs could not be acknowledged; they stay in the backup list for a rescue")
		return nil, nil
	}
	empty := e.mgr.sweep(sctx)
	e.mgr.stopWaiting(sctx)
	return empty, nil
}

// signOff writes the last counters and removes this node from the processes set and, with
// the proof that its backup lists are empty, from the heartbeats (otherwise other nodes
// rescue what is left).
func (e *Exq) signOff(ctx context.Context, empty *emptyBackups) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.RedisTimeout)
	defer cancel()
	if err := e.stats.Flush(ctx); err != nil {
		e.log.Warn("exq: stop: the last counters could not be written", "error", err)
	}
	if err := e.pinger.Unregister(ctx); err != nil {
		e.log.Warn("exq: stop: could not remove this node from the processes set", "error", err)
	}
	switch {
	case e.hb != nil && empty != nil:
		if err := e.jq.Forget(ctx); err != nil {
			e.log.Warn("exq: stop: could not remove this node's heartbeat", "error", err)
		}
	case empty != nil:
		// No heartbeat to leave, but the set of backup queues would outlive the node.
		if err := e.jq.DropBackupQueues(ctx); err != nil {
			e.log.Warn("exq: stop: could not remove this node's set of backup queues", "error", err)
		}
	}
}

// checkWakeChannel warns when this Redis user may not use the wake-up channel (an ACL user
// without "&<namespace>:*"): jobs still run, but idle nodes then find them only by polling.
func (e *Exq) checkWakeChannel(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.RedisTimeout)
	defer cancel()
	if err := e.jq.PublishWake(ctx); err != nil {
		e.log.Warn("exq: cannot use the wake-up channel; idle nodes will find new jobs by polling every PollTimeout (grant the channel, e.g. ACL &"+
			e.jq.WakeChannel()+")", "channel", e.jq.WakeChannel(), "error", err)
	}
}

// publishLimits records the cluster-wide limits of this node's queues in Redis, for the API
// and the CLI, and warns when another node ran a queue with other limits: each node enforces
// its own, so nodes that disagree do not hold the limit. The record only informs, and the
// fetch script does not read it: a failure to write it is logged, not fatal.
func (e *Exq) publishLimits(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.RedisTimeout)
	defer cancel()
	queues := make([]store.QueueLimits, len(e.opts.Queues))
	for i, q := range e.opts.Queues {
		queues[i] = store.QueueLimits{Name: q.Name, Limits: q.limits()}
	}
	differ, err := e.jq.PublishLimits(ctx, queues)
	if err != nil {
		e.log.Warn("exq: start: could not publish the queues' limits; the API and the CLI will not show them", "error", err)
		return
	}
	for q, was := range differ {
		if was == (store.LimitsRecord{}) {
			continue // the first node with limits on q
		}
		e.log.Warn("exq: another node ran this queue with other limits; each node enforces its own, so set the same on every node",
			"queue", q, "global_limit_was", was.GlobalLimit, "rate_was", rateOf(was.Limits()).String())
	}
}

// savePeriodic writes Options.Periodic to Redis: new schedules are created, existing ones keep
// their status and history.
func (e *Exq) savePeriodic(ctx context.Context) error {
	for _, p := range e.opts.Periodic {
		line, sched, err := p.check()
		if err != nil {
			return err // checked by withDefaults already
		}
		now := e.opts.now()
		stored, err := p.stored(line, sched, now)
		if err != nil {
			return fmt.Errorf("exq: start: save periodic job %q: %w", p.Name, err)
		}
		cctx, cancel := context.WithTimeout(ctx, e.opts.RedisTimeout)
		_, err = e.jq.SaveCron(cctx, stored, store.CronUpsert, now)
		cancel()
		if err != nil {
			return fmt.Errorf("exq: start: save periodic job %q: %w", p.Name, err)
		}
	}
	return nil
}

var (
	_ Enqueuer = (*Exq)(nil)
	_ Enqueuer = (*Client)(nil)
)
