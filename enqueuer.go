package exq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// enqueuer builds job documents and writes them. It holds no goroutines.
type enqueuer struct {
	jq *store.Store
	// now is the Redis server's clock (serverClock.now) outside tests.
	now func() time.Time
	// fresh, when set, makes sure now has a recent sample of the server's clock before a call
	// reads it (a Client's or an API's clock; a node keeps its own fresh).
	fresh      func(ctx context.Context) error
	maxRetries int
	unit       wire.TimeUnit // of created_at and enqueued_at (Options.MillisecondTimestamps)
	events     listeners
	hooks      []EnqueueHook
	// group batches the writes of concurrent Enqueue, EnqueueIn and EnqueueAt calls
	// (groupcommit.go).
	group store.GroupCommit
}

// hold marks jids as being written until the returned function is called, after their
// JobEnqueued (eventorder.Order): a worker of this node that fetched one meanwhile reports
// JobStarted after it.
func (en *enqueuer) hold(jids ...string) func() {
	if !en.events.has() {
		return func() {}
	}
	return en.events.order.Hold(jids...)
}

// stampUnit is the unit of job timestamps Options.MillisecondTimestamps asks for.
func stampUnit(millis bool) wire.TimeUnit {
	if millis {
		return wire.Millis
	}
	return wire.Seconds
}

// enqueued reports a written job to the listeners.
func (en *enqueuer) enqueued(queue, class, jid string, at time.Time) {
	if en.events.has() {
		en.events.emit(Event{Kind: JobEnqueued, Queue: queue, Class: class, JID: jid, At: at})
	}
}

// built is a validated job, ready to write.
type built struct {
	jid, doc, token string
	// queue and class are the job's (a typed JobSpec's, filled in).
	queue, class string
	lock         *store.Lock
	// key is the job's key (Key), "" for none: it is written by the keyed script.
	key string
	// at is the due time, or zero for a job that goes to its queue now.
	at time.Time
	// done are the EnqueueHooks' functions, to call with the write's result.
	done []func(string, error)
	// debounce is set for a job enqueued with Debounce (debounce.go).
	debounce *store.Debounced
}

// finish tells the EnqueueHooks how the write went.
func (b built) finish(jid string, err error) {
	for _, f := range b.done {
		f(jid, err)
	}
}

// build validates one job and renders its document. at is the due time, zero for now; a due
// time that is not after now (before 1970 too) also means now, as Sidekiq's perform_at and
// asynq's ProcessAt read it, so no job is ever written with a score the past has overtaken.
func (en *enqueuer) build(ctx context.Context, op, queue, class string, args any, at time.Time, opts []EnqueueOption) (built, error) {
	now, err := en.serverNow(ctx, op)
	if err != nil {
		return built{}, err
	}
	return en.buildAt(ctx, now, op, queue, class, args, at, opts)
}

// serverNow reads the Redis server's clock, taking a sample first if fresh says so.
func (en *enqueuer) serverNow(ctx context.Context, op string) (time.Time, error) {
	if en.fresh != nil {
		if err := en.fresh(ctx); err != nil {
			return time.Time{}, fmt.Errorf("exq: %s: %w", op, err)
		}
	}
	return en.now(), nil
}

// buildAt is build with the clock already read (once for a whole batch).
func (en *enqueuer) buildAt(ctx context.Context, now time.Time, op, queue, class string, args any, at time.Time, opts []EnqueueOption) (built, error) {
	bad := func(format string, a ...any) (built, error) {
		return built{}, &invalidJobError{op: op, msg: fmt.Sprintf(format, a...)}
	}
	if class == "" {
		return bad("class is empty")
	}
	if err := names.CheckQueue(queue); err != nil {
		return bad("%v", err)
	}
	rawArgs, err := wire.EncodeArgs(args)
	if err != nil {
		if _, typed := args.(JobArgs); typed {
			// A typed value given to the class-string calls: say which call takes it.
			return bad("%v; a %T is a JobArgs: exq.EnqueueArgs (or a JobSpec with it as Args) enqueues it as a job of its own class, or pass []any{it} as positional args", err, args)
		}
		return bad("%v", err)
	}
	if len(rawArgs) > MaxJobBytes {
		return built{}, tooLarge(op, len(rawArgs), "its args")
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
	if o := cfg.debounce; o != nil {
		if msg := o.refuse(&cfg, at); msg != "" {
			return bad("%s", msg)
		}
		cfg.meta = append(cfg.meta, [2]string{wire.DebounceField, o.key})
	}
	j := wire.NewJob{
		Class:      class,
		Args:       rawArgs,
		Queue:      queue,
		JID:        cfg.jid,
		EnqueuedAt: now,
		CreatedAt:  now,
		Unit:       en.unit,
		Retry:      en.maxRetries,
	}
	if j.JID == "" {
		j.JID = wire.NewJID()
	}
	if !at.After(now) {
		at = time.Time{}
	}
	if at.After(wire.LatestTime) {
		return bad("time %s is after year 9999, the latest exq schedules", at.UTC().Format(time.RFC3339))
	}
	if !at.IsZero() {
		j.EnqueuedAt = at // Exq: a scheduled job's enqueued_at is its due time
	}
	if cfg.maxRetries != nil {
		j.Retry = *cfg.maxRetries
	}
	j.Meta = cfg.meta
	if cfg.expiresIn > 0 || !cfg.expiresAt.IsZero() {
		if j.ExpiresAt, err = resolveExpiry(cfg.expiresIn, cfg.expiresAt, now, at); err != nil {
			return bad("%v", err)
		}
	}
	j.Key = cfg.key
	if f := cfg.flow; f != nil {
		j.Bid, j.Workflow, j.WorkflowJob, j.WorkflowParents, j.CallbackOf = f.Bid, f.Workflow, f.WorkflowJob, f.WorkflowParents, f.CallbackOf
	}
	b := built{jid: j.JID, queue: queue, class: class, at: at, key: cfg.key}
	if cfg.key != "" && cfg.flow != nil {
		return bad("Key is not supported for jobs of batches and workflows yet")
	}
	if u := cfg.unique; u != nil {
		token := u.Token
		if token == "" {
			if token, err = DefaultUniqueToken(queue, class, rawArgs); err != nil {
				return bad("%v", err)
			}
		}
		unlocksAt := j.EnqueuedAt.Add(u.For)
		j.Unique = &wire.Unique{For: u.For, Until: string(u.Until), Token: token, UnlocksAt: unlocksAt}
		b.token = token
		b.lock = &store.Lock{Token: token, JID: j.JID, TTL: unlocksAt.Sub(now)}
	}
	// The hooks run last, once nothing can fail any more, so each one hears the write's end.
	if len(en.hooks) > 0 {
		out := &OutgoingJob{Queue: queue, Class: class, JID: j.JID, At: at, meta: &j.Meta}
		for _, h := range en.hooks {
			if done := h(ctx, out); done != nil {
				b.done = append(b.done, done)
			}
		}
		if out.err != nil {
			b.finish("", out.err)
			return bad("an EnqueueHook: %v", out.err)
		}
	}
	b.doc = j.Encode()
	if len(b.doc) > MaxJobBytes {
		err := tooLarge(op, len(b.doc), "the job")
		b.finish("", err)
		return built{}, err
	}
	if o := cfg.debounce; o != nil {
		head, tail, err := j.DebounceParts(b.doc)
		if err != nil {
			b.finish("", err)
			return built{}, fmt.Errorf("exq: %s: %w", op, err)
		}
		b.debounce = &store.Debounced{Key: o.key, Wait: o.d, MaxWait: o.maxWait, JID: j.JID, Head: head, Tail: tail, Unit: j.Unit}
	}
	return b, nil
}

// MaxJobBytes is the largest job document an enqueue writes: 1 MiB of JSON, args included.
// A job is read whole by every node that fetches it, every retry, and every dashboard page and
// command that shows it, so a larger one belongs in a store of its own with its key in the
// args. Sidekiq and Exq set no limit; documents they write are read whatever their size.
const MaxJobBytes = 1 << 20

func tooLarge(op string, n int, what string) error {
	return &invalidJobError{op: op, tooLarge: true,
		msg: fmt.Sprintf("%s take %d bytes as JSON, more than MaxJobBytes (%d): keep large payloads elsewhere and pass their key", what, n, MaxJobBytes)}
}

// inBatch names job i of a batch in the error buildSpec refused it with. (The label is made
// for a refusal only: formatting it for every job of every batch showed in the profile.)
func inBatch(err error, i int) error {
	var bad *invalidJobError
	if errors.As(err, &bad) {
		bad.op = fmt.Sprintf("%s: job %d", bad.op, i)
	}
	return err
}

// buildSpec is buildAt for a JobSpec: At, or In from now, or neither for now.
func (en *enqueuer) buildSpec(ctx context.Context, now time.Time, op string, s JobSpec) (built, error) {
	s, err := s.resolved()
	if err != nil {
		return built{}, &invalidJobError{op: op, msg: err.Error()}
	}
	if !s.At.IsZero() && s.In != 0 {
		return built{}, &invalidJobError{op: op, msg: "both At and In are set"}
	}
	at := s.At
	if s.In != 0 {
		at = now.Add(s.In)
	}
	return en.buildAt(ctx, now, op, s.Queue, s.Class, s.Args, at, s.Options)
}

// resolved is s with what a typed spec leaves out filled in: Class and the one-element args
// list from Args when it is a JobArgs, and Queue from its Queue method, else DefaultQueue.
func (s JobSpec) resolved() (JobSpec, error) {
	if a, ok := s.Args.(JobArgs); ok {
		class, err := classOf(a)
		switch {
		case err != nil:
			return s, err
		case class == "":
			return s, fmt.Errorf("the args are a %T, whose Class() is empty", a)
		case s.Class != "" && s.Class != class:
			return s, fmt.Errorf("class %q, but the args are a %T, whose Class() is %q: leave Class empty", s.Class, a, class)
		}
		s.Class, s.Args = class, []any{a}
		if k := keyOf(a); k != "" {
			s.Options = append([]EnqueueOption{Key(k)}, s.Options...) // a Key option given wins
		}
		if q, ok := a.(interface{ Queue() string }); ok && s.Queue == "" {
			s.Queue = q.Queue()
		}
	}
	if s.Queue == "" {
		s.Queue = DefaultQueue
	}
	return s, nil
}

func (en *enqueuer) enqueue(ctx context.Context, queue, class string, args any, opts []EnqueueOption) (string, error) {
	b, err := en.build(ctx, "enqueue", queue, class, args, time.Time{}, opts)
	if err != nil {
		return "", err
	}
	if b.debounce != nil {
		return en.enqueueDebounced(ctx, b)
	}
	release := en.hold(b.jid)
	holder, err := en.write(ctx, b, store.BatchItem{Queue: queue, Job: b.doc, Lock: b.lock})
	if holder == "" && (err == nil || errors.Is(err, ErrNotReplicated)) {
		en.enqueued(queue, class, b.jid, time.Time{})
	}
	release()
	jid, err := b.result("enqueue", class, queue, holder, err)
	b.finish(jid, err)
	return jid, err
}

// writeAll writes the jobs of EnqueueAll: the keyed ones (without locks) in one call of their
// own, after the others, which go in one call as ever. The two calls are not one atomic
// write: an error of the second leaves the first written.
func (en *enqueuer) writeAll(ctx context.Context, items []store.BatchItem, bs []built) ([]string, error) {
	var keyed []store.KeyedItem
	var plain []store.BatchItem
	for i, b := range bs {
		if b.key != "" {
			keyed = append(keyed, store.KeyedItem{BatchItem: items[i], Key: b.key})
		} else {
			plain = append(plain, items[i])
		}
	}
	if len(keyed) == 0 {
		return en.jq.EnqueueAll(ctx, items)
	}
	holders := make([]string, len(items))
	if len(plain) > 0 {
		hs, err := en.jq.EnqueueAll(ctx, plain)
		if err != nil && !errors.Is(err, ErrNotReplicated) {
			return nil, err
		}
		j := 0
		for i, b := range bs {
			if b.key == "" {
				holders[i] = hs[j]
				j++
			}
		}
	}
	return holders, en.jq.EnqueueKeyedAll(ctx, keyed)
}

// write writes one built job: a keyed one by its own script (never onto the queue's list),
// any other with the writes of concurrent callers (groupcommit.go).
func (en *enqueuer) write(ctx context.Context, b built, it store.BatchItem) (string, error) {
	if b.key != "" {
		return en.jq.EnqueueKeyed(ctx, it, b.key)
	}
	return en.group.Write(ctx, en.jq, it)
}

// result turns what a one-job write returned into Enqueue's reply. An error wrapping
// ErrNotReplicated comes after the script ran: the job was written (or, on a unique conflict,
// nothing was, and the conflict is what the caller needs), so the jid goes with it.
func (b built) result(op, class, queue, holder string, err error) (string, error) {
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return "", fmt.Errorf("exq: %s %s to %s: %w", op, class, queue, err)
	}
	if holder != "" {
		return holder, &UniqueConflictError{JID: holder, Token: b.token}
	}
	if err != nil {
		return b.jid, fmt.Errorf("exq: %s %s to %s: job %s written on the master: %w", op, class, queue, b.jid, err)
	}
	return b.jid, nil
}

// enqueueIn schedules a job to run d after now on the Redis server's clock.
func (en *enqueuer) enqueueIn(ctx context.Context, queue, class string, d time.Duration, args any, opts []EnqueueOption) (string, error) {
	now, err := en.serverNow(ctx, "enqueue in")
	if err != nil {
		return "", err
	}
	return en.enqueueAt(ctx, "enqueue in", queue, class, now.Add(d), args, opts)
}

// enqueueAt schedules a job at at. A zero at is an error rather than "now": it is time.Time's
// unset value, so it nearly always is a forgotten field, which running the job at once would
// hide. A time that has passed enqueues the job now (see build).
func (en *enqueuer) enqueueAt(ctx context.Context, op, queue, class string, at time.Time, args any, opts []EnqueueOption) (string, error) {
	if at.IsZero() {
		return "", &invalidJobError{op: op, msg: "time is zero"}
	}
	b, err := en.build(ctx, op, queue, class, args, at, opts)
	if err != nil {
		return "", err
	}
	release := en.hold(b.jid)
	holder, err := en.write(ctx, b, store.BatchItem{Queue: queue, At: b.at, Job: b.doc, Lock: b.lock})
	if holder == "" && (err == nil || errors.Is(err, ErrNotReplicated)) {
		en.enqueued(queue, class, b.jid, b.at)
	}
	release()
	jid, err := b.result(op, class, queue, holder, err)
	b.finish(jid, err)
	return jid, err
}

func (en *enqueuer) enqueueAll(ctx context.Context, specs []JobSpec) ([]EnqueueResult, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	items := make([]store.BatchItem, len(specs))
	bs := make([]built, len(specs))
	now, err := en.serverNow(ctx, "enqueue all")
	if err != nil {
		return nil, err
	}
	for i, s := range specs {
		b, err := en.buildSpec(ctx, now, "enqueue all", s)
		if err == nil && b.debounce != nil {
			err = b.refuseInBatch("enqueue all")
		}
		if err != nil {
			err = inBatch(err, i)
			for _, done := range bs[:i] {
				done.finish("", err) // nothing of the batch is written
			}
			return nil, err
		}
		if b.key != "" && b.lock != nil {
			err := inBatch(&invalidJobError{op: "enqueue all", msg: errKeyedEnqueueAll.Error()}, i)
			for _, done := range bs[:i] {
				done.finish("", err)
			}
			b.finish("", err)
			return nil, err
		}
		items[i] = store.BatchItem{Queue: b.queue, At: b.at, Job: b.doc, Lock: b.lock}
		bs[i] = b
	}
	jids := make([]string, len(bs))
	for i, b := range bs {
		jids[i] = b.jid
	}
	release := en.hold(jids...)
	defer release() // after the JobEnqueued events below (or the failure)
	holders, err := en.writeAll(ctx, items, bs)
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		err = fmt.Errorf("exq: enqueue all (%d jobs): %w", len(specs), err)
		for _, b := range bs {
			b.finish("", err)
		}
		return nil, err
	}
	if err != nil {
		// The batch was written on the master: the results say what it holds.
		err = fmt.Errorf("exq: enqueue all (%d jobs): written on the master: %w", len(specs), err)
	}
	results := make([]EnqueueResult, len(specs))
	for i, h := range holders {
		if h != "" {
			results[i] = EnqueueResult{JID: h, Err: &UniqueConflictError{JID: h, Token: bs[i].token}}
		} else {
			results[i] = EnqueueResult{JID: bs[i].jid}
			en.enqueued(bs[i].queue, bs[i].class, bs[i].jid, items[i].At)
		}
		bs[i].finish(results[i].JID, results[i].Err)
	}
	return results, err
}

// enqueueDebounced writes b, built with a Debounce option, into the schedule set
// (debounce.lua) and reports it as Enqueue does: the jid returned is the burst's.
func (en *enqueuer) enqueueDebounced(ctx context.Context, b built) (string, error) {
	release := en.hold(b.jid) // the jid of a burst this call starts
	res, err := en.jq.Debounce(ctx, *b.debounce)
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		release()
		err = fmt.Errorf("exq: enqueue %s to %s: %w", b.class, b.queue, err)
		b.finish("", err)
		return "", err
	}
	if res.How != store.DebounceRepeat {
		en.enqueued(b.queue, b.class, res.JID, res.At)
	}
	release()
	if err != nil {
		err = fmt.Errorf("exq: enqueue %s to %s: job %s written on the master: %w", b.class, b.queue, res.JID, err)
	}
	b.finish(res.JID, err)
	return res.JID, err
}

// refuseInBatch is the refusal of a debounced job in EnqueueAll, whose one atomic write has no
// place for a burst's replacement; b's EnqueueHooks hear it.
func (b built) refuseInBatch(op string) error {
	err := &invalidJobError{op: op, msg: "Debounce is for Enqueue, not EnqueueAll"}
	b.finish("", err)
	return err
}
