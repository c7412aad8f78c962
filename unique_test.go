package exq

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// gate is a worker whose jobs wait until the test opens their jid, and that records runs.
type gate struct {
	recorder
	mu    sync.Mutex
	open  map[string]chan struct{}
	fails map[string]int // jid → runs that fail before one succeeds
}

func newGate() *gate { return &gate{open: map[string]chan struct{}{}, fails: map[string]int{}} }

func (g *gate) ch(jid string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[jid] == nil {
		g.open[jid] = make(chan struct{})
	}
	return g.open[jid]
}

// release lets jid's runs finish.
func (g *gate) release(jid string) { close(g.ch(jid)) }

func (g *gate) Perform(ctx context.Context, job *Job) error {
	_ = g.recorder.Perform(ctx, job)
	select {
	case <-g.ch(job.JID):
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fails[job.JID] > 0 {
		g.fails[job.JID]--
		return errors.New("failing on purpose")
	}
	return nil
}

func (g *gate) ran(jid string) int {
	n := 0
	for _, j := range g.jids() {
		if j == jid {
			n++
		}
	}
	return n
}

// conflictWith asserts err is a unique conflict with holder.
func conflictWith(t *testing.T, holder, jid string, err error) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrUniqueConflict), "%v", err)
	var uc *UniqueConflictError
	require.True(t, errors.As(err, &uc))
	assert.Equal(t, holder, uc.JID)
	assert.Equal(t, holder, jid, "the holder's jid is returned")
}

func (v *env) lockGone(token string) func() bool {
	return func() bool { return v.rdb.Exists(context.Background(), v.keys.Unique(token)).Val() == 0 }
}

func TestUniqueJobConflictsUntilItSucceeds(t *testing.T) { // Exq 33
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 0)
	en := v.enqueuer(func() time.Time { return now })
	args := []any{map[string]any{"b": 2, "a": 1}}
	j1, err := en.enqueue(ctx, "default", "U", args, []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute})})
	require.NoError(t, err)
	j2, err := en.enqueue(ctx, "default", "U", []any{map[string]any{"a": 1, "b": 2}}, []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute})})
	conflictWith(t, j1, j2, err)
	_, err = en.enqueueAt(ctx, "enqueue at", "default", "U", now.Add(time.Hour), args, []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute})})
	assert.ErrorIs(t, err, ErrUniqueConflict)
	require.Len(t, v.list(v.keys.Queue("default")), 1, "nothing written on a conflict")
	assert.Zero(t, v.zcard(v.keys.Schedule()))

	token, err := DefaultUniqueToken("default", "U", json.RawMessage(`[{"a":1,"b":2}]`))
	require.NoError(t, err)
	m := decode(t, v.list(v.keys.Queue("default"))[0])
	assert.Equal(t, "60", m["unique_for"].(json.Number).String())
	assert.Equal(t, "success", m["unique_until"])
	assert.Equal(t, token, m["unique_token"])
	assert.Equal(t, "1796010475.000000", m["unlocks_at"].(json.Number).String())
	assert.Equal(t, j1, v.get(v.keys.Unique(token)))

	g := newGate()
	g.release(j1)
	v.start(Options{Workers: map[string]Worker{"U": g}})
	testutil.WaitFor(t, "the lock is released after success", v.lockGone(token))
	_, err = en.enqueue(ctx, "default", "U", args, []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute})})
	assert.NoError(t, err)
}

func TestUniqueTokenConflictsAcrossQueues(t *testing.T) { // Exq 34
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	g := newGate()
	e := v.start(Options{Queues: []Queue{{Name: "q1"}, {Name: "q2"}}, Workers: map[string]Worker{"U": g}})
	j1, err := e.Enqueue(ctx, "q1", "U", []any{1}, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "t1"}))
	require.NoError(t, err)
	j2, err := e.Enqueue(ctx, "q2", "Other", []any{2}, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "t1"}))
	conflictWith(t, j1, j2, err)
	g.release(j1)
	testutil.WaitFor(t, "the lock is released", v.lockGone("t1"))
	_, err = e.Enqueue(ctx, "q2", "U", []any{2}, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "t1"}))
	assert.NoError(t, err)
}

func TestUniqueUntilStartLetsADuplicateInWhileTheFirstRuns(t *testing.T) { // Exq 35
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	g := newGate()
	e := v.start(Options{Queues: []Queue{{Name: "default", Concurrency: 1}}, Workers: map[string]Worker{"U": g}})
	opts := []EnqueueOption{Unique(UniqueOpts{Until: UntilStart, For: time.Minute, Token: "s"})}
	a, err := e.Enqueue(ctx, "default", "U", nil, opts...)
	require.NoError(t, err)
	testutil.WaitFor(t, "A runs", func() bool { return g.ran(a) == 1 })
	b, err := e.Enqueue(ctx, "default", "U", nil, opts...)
	require.NoError(t, err, "A released its lock when it started")
	c, err := e.Enqueue(ctx, "default", "U", nil, opts...)
	conflictWith(t, b, c, err)
	g.release(a)
	g.release(b)
	testutil.WaitFor(t, "B ran too", func() bool { return g.ran(b) == 1 })
	testutil.WaitFor(t, "B released its lock when it started", v.lockGone("s"))
	d, err := e.Enqueue(ctx, "default", "U", nil, opts...)
	assert.NoError(t, err)
	g.release(d)
}

func TestAnExpiredLockIsNeverDeletedByItsOldHolder(t *testing.T) { // Exq 36
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	g := newGate()
	e := v.start(Options{Workers: map[string]Worker{"U": g}})
	j1, err := e.Enqueue(ctx, "default", "U", nil, Unique(UniqueOpts{Until: UntilSuccess, For: 200 * time.Millisecond, Token: "exp"}))
	require.NoError(t, err)
	testutil.WaitFor(t, "j1 runs", func() bool { return g.ran(j1) == 1 })
	testutil.WaitFor(t, "j1's lock expired", v.lockGone("exp"))
	j2, err := e.Enqueue(ctx, "parked", "U", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "exp"}))
	require.NoError(t, err)
	g.release(j1)
	testutil.WaitFor(t, "j1 finished", func() bool { return len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0 })
	j3, err := e.Enqueue(ctx, "default", "U", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "exp"}))
	conflictWith(t, j2, j3, err)
}

func TestRetriesOfAStartJobNeverReleaseAnotherJobsLock(t *testing.T) { // Exq 37
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	g := newGate()
	e := v.start(Options{Workers: map[string]Worker{"U": g}, Backoff: func(int, *Job) time.Duration { return 0 }})
	a, err := e.Enqueue(ctx, "default", "U", nil, Unique(UniqueOpts{Until: UntilStart, For: time.Minute, Token: "st"}), MaxRetries(5))
	require.NoError(t, err)
	g.mu.Lock()
	g.fails[a] = 1
	g.mu.Unlock()
	testutil.WaitFor(t, "A's first run released the lock", v.lockGone("st"))
	b, err := e.Enqueue(ctx, "parked", "U", nil, Unique(UniqueOpts{Until: UntilStart, For: time.Minute, Token: "st"}))
	require.NoError(t, err)
	g.release(a) // fails once, then its retry runs and succeeds
	testutil.WaitFor(t, "A ran twice", func() bool { return g.ran(a) == 2 && v.zcard(v.keys.Retry()) == 0 })
	testutil.WaitFor(t, "A is done", func() bool { return len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0 })
	c, err := e.Enqueue(ctx, "default", "U", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "st"}))
	conflictWith(t, b, c, err)
}

func TestUniqueUntilExpiryOnlyExpires(t *testing.T) { // Exq 38
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"U": rec}})
	const lockFor = 500 * time.Millisecond
	opts := []EnqueueOption{Unique(UniqueOpts{Until: UntilExpiry, For: lockFor, Token: "ex"})}
	began := time.Now()
	j1, err := e.Enqueue(ctx, "default", "U", nil, opts...)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job ran", func() bool {
		return rec.count() == 1 && len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0
	})
	j2, err := e.Enqueue(ctx, "default", "U", nil, opts...)
	if err == nil {
		// Accepted: only once the lock expired (a slow run). Checking the lock after this
		// enqueue, as the test did, found j2's own lock and took it for j1's (cluster run).
		assert.GreaterOrEqual(t, time.Since(began), lockFor, "a second job is accepted only after the lock expired")
	} else {
		conflictWith(t, j1, j2, err)
	}
	testutil.WaitFor(t, "the lock expired", v.lockGone("ex"))
	_, err = e.Enqueue(ctx, "default", "U", nil, opts...)
	assert.NoError(t, err)
}

func TestSuccessLockIsKeptWhileTheJobWaitsInRetry(t *testing.T) { // Exq 39
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	fail := WorkerFunc(func(context.Context, *Job) error { return errors.New("boom") })
	e := v.start(Options{Workers: map[string]Worker{"U": fail}, Backoff: func(int, *Job) time.Duration { return time.Hour }})
	j1, err := e.Enqueue(ctx, "default", "U", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "sr"}), MaxRetries(5))
	require.NoError(t, err)
	testutil.WaitFor(t, "the job is in retry", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	j2, err := e.Enqueue(ctx, "default", "U", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "sr"}))
	conflictWith(t, j1, j2, err)
}

func TestSuccessLockIsReleasedWhenTheJobDies(t *testing.T) { // Exq 40
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	fail := WorkerFunc(func(context.Context, *Job) error { return errors.New("boom") })
	e := v.start(Options{Workers: map[string]Worker{"U": fail}, Backoff: func(int, *Job) time.Duration { return 0 }})
	_, err := e.Enqueue(ctx, "default", "U", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "sd"}), MaxRetries(1))
	require.NoError(t, err)
	testutil.WaitFor(t, "the job died", func() bool { return v.zcard(v.keys.Dead()) == 1 })
	assert.True(t, v.lockGone("sd")())
	_, err = e.Enqueue(ctx, "parked", "U", nil, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute, Token: "sd"}))
	assert.NoError(t, err)
}

func TestScheduledUniqueJobsHoldTheirLockUntilTheyRun(t *testing.T) { // Exq 41
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"U": rec}})
	// Due in an hour, so the conflicting enqueue cannot come after it ran; then run it now.
	j1, err := e.EnqueueIn(ctx, "default", "U", time.Hour, []any{1}, Unique(UniqueOpts{Until: UntilSuccess, For: 2 * time.Hour}))
	require.NoError(t, err)
	j2, err := e.Enqueue(ctx, "default", "U", []any{1}, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute}))
	conflictWith(t, j1, j2, err)
	assert.Zero(t, rec.count())
	_, err = e.API().RequeueJob(ctx, ScheduledSet, j1)
	require.NoError(t, err)
	testutil.WaitFor(t, "the scheduled job ran", func() bool { return rec.count() == 1 })
	testutil.WaitFor(t, "its lock is released", func() bool { return len(v.rdb.Keys(ctx, v.ns+":unique:*").Val()) == 0 })
	j3, err := e.EnqueueAt(ctx, "default", "U", time.Now(), []any{1}, Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute}))
	require.NoError(t, err)
	testutil.WaitFor(t, "the new job ran", func() bool { return rec.count() == 2 })
	assert.Equal(t, []string{j1, j3}, rec.jids())
}

func TestEnqueueAllWithTwoIdenticalUniqueJobs(t *testing.T) { // Exq 42
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"U": rec}})
	batch := []JobSpec{
		{Queue: "default", Class: "U", Args: []any{1}, In: time.Hour, Options: []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: 2 * time.Hour})}},
		{Queue: "default", Class: "U", Args: []any{1}, In: time.Hour, Options: []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: 2 * time.Hour})}},
		{Queue: "default", Class: "U", Args: []any{2}},
	}
	res, err := e.EnqueueAll(ctx, batch)
	require.NoError(t, err)
	require.Len(t, res, 3)
	assert.NoError(t, res[0].Err)
	assert.ErrorIs(t, res[1].Err, ErrUniqueConflict)
	assert.Equal(t, res[0].JID, res[1].JID, "the conflict names the first job")
	assert.NoError(t, res[2].Err)
	assert.Equal(t, 1, v.zcard(v.keys.Schedule()))
	// Due in an hour, so nothing can take it before the count above; run it now.
	_, err = e.API().RequeueJob(ctx, ScheduledSet, res[0].JID)
	require.NoError(t, err)
	testutil.WaitFor(t, "both written jobs ran", func() bool { return rec.count() == 2 })
	testutil.WaitFor(t, "the lock is released", func() bool { return len(v.rdb.Keys(ctx, v.ns+":unique:*").Val()) == 0 })
	res, err = e.EnqueueAll(ctx, batch[:1])
	require.NoError(t, err)
	assert.NoError(t, res[0].Err)
}

func TestUniqueOptionsAreValidated(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	en := v.enqueuer(time.Now)
	for _, tc := range []struct {
		opts []EnqueueOption
		want string
	}{
		{[]EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: 0})}, "UniqueOpts.For must be positive, got 0s"},
		{[]EnqueueOption{Unique(UniqueOpts{For: time.Second})}, "UniqueOpts.Until is not set (UntilSuccess, UntilStart or UntilExpiry)"},
		{[]EnqueueOption{Unique(UniqueOpts{Until: "later", For: time.Second})}, `UniqueOpts.Until must be UntilSuccess, UntilStart or UntilExpiry, got "later"`},
	} {
		_, err := en.enqueue(context.Background(), "default", "U", nil, tc.opts)
		assert.ErrorIs(t, err, ErrInvalidJob)
		assert.ErrorContains(t, err, tc.want)
	}
}

func TestDefaultUniqueTokenIsStableAndDistinguishesJobs(t *testing.T) {
	t.Parallel()
	tok := func(q, c, args string) string {
		s, err := DefaultUniqueToken(q, c, json.RawMessage(args))
		require.NoError(t, err)
		return s
	}
	base := tok("q", "C", `[{"a":1,"b":[1,2]},"x"]`)
	assert.Equal(t, base, tok("q", "C", `[{"b":[1,2],"a":1}, "x"]`), "key order and spacing do not matter")
	assert.NotEqual(t, base, tok("q2", "C", `[{"a":1,"b":[1,2]},"x"]`))
	assert.NotEqual(t, base, tok("q", "D", `[{"a":1,"b":[1,2]},"x"]`))
	assert.NotEqual(t, base, tok("q", "C", `[{"a":1,"b":[2,1]},"x"]`))
	assert.NotEqual(t, tok("q", "C", `[1]`), tok("q", "C", `[1.0]`), "numbers are kept as written")
	assert.Len(t, base, 44, "base64 of a SHA-256")
}
