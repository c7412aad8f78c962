package exq

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

func TestHandPushedExqOrSidekiqJobRuns(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"X": rec}})
	raw := `{"class":"X","args":[1],"queue":"default","jid":"abc","retry":true}`
	v.push("default", raw)
	testutil.WaitFor(t, "the job ran", func() bool { return rec.count() == 1 })
	job := rec.runs[0]
	assert.Equal(t, "X", job.Class)
	assert.Equal(t, "abc", job.JID)
	assert.Equal(t, "default", job.Queue)
	assert.Equal(t, DefaultMaxRetries, job.MaxRetries)
	assert.Equal(t, raw, job.Raw())
	var n int
	require.NoError(t, job.Bind(&n))
	assert.Equal(t, 1, n)
	testutil.WaitFor(t, "the backup list is empty", func() bool { return len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0 })
	assert.Zero(t, v.zcard(v.keys.Retry())+v.zcard(v.keys.Dead()))
}

func TestClassLookupIgnoresTextAfterSlash(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	v.start(Options{Workers: map[string]Worker{"MyApp.Worker": rec}})
	v.push("default", `{"class":"MyApp.Worker/custom_perform","args":[],"queue":"default","jid":"s1"}`)
	testutil.WaitFor(t, "the job ran", func() bool { return rec.count() == 1 })
	assert.Equal(t, "MyApp.Worker/custom_perform", rec.runs[0].Class)
}

func TestRegisterAddsWorkersAtRunTime(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{})
	rec := &recorder{}
	require.NoError(t, e.Register("Late", rec))
	_, err := e.Enqueue(context.Background(), "default", "Late", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job ran", func() bool { return rec.count() == 1 })
	assert.EqualError(t, e.Register("", rec), "exq: register: class is empty")
	assert.EqualError(t, e.Register("X", nil), `exq: register "X": worker is nil`)
}

// failingNode starts a node whose clock is fixed, so retry scores can be checked exactly.
func failingNode(t *testing.T, v *env, o Options, w Worker) (*Exq, *fixedClock) {
	clock := &fixedClock{t: time.Unix(1796010415, 0)}
	o.DisableScheduler = true
	o.Workers = map[string]Worker{"W": w}
	return v.start(o, testHooks{serverNow: clock.now}), clock
}

func TestFailedJobMovesToRetryWithBackoffKeepingUnknownFields(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	var runs atomic.Int32
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		runs.Add(1)
		return fmt.Errorf("send mail: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")})
	})
	e, clock := failingNode(t, v, Options{}, w)
	now := clock.now()
	raw := `{"class":"W","args":[1,{"a":"b"}],"queue":"default","jid":"j1","retry":3,"bid":"batch-1","tags":["x"],"created_at":1700000000.25}`
	v.push("default", raw)
	testutil.WaitFor(t, "the job is in retry", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")), "removed from the backup list once in retry")

	z := v.zset(v.keys.Retry())[0]
	delay := z.Score - float64(now.Unix())
	assert.GreaterOrEqual(t, delay, 16.0, "first retry: 1^4 + 15 + rand(0..30)*2")
	assert.LessOrEqual(t, delay, 76.0)
	m := decode(t, z.Member.(string))
	assert.EqualValues(t, "1", m["retry_count"].(fmt.Stringer).String(), "1-based after the first failure")
	assert.Equal(t, "send mail: dial tcp: refused", m["error_message"])
	assert.Equal(t, "*net.OpError", m["error_class"])
	assert.Equal(t, "1796010415.000000", m["failed_at"].(fmt.Stringer).String())
	assert.Equal(t, "1796010415.000000", m["retried_at"].(fmt.Stringer).String())
	assert.True(t, strings.HasPrefix(z.Member.(string),
		`{"class":"W","args":[1,{"a":"b"}],"queue":"default","jid":"j1","retry":3,"bid":"batch-1","tags":["x"],"created_at":1700000000.25,`),
		"every field we do not own is kept, in order, byte for byte: %s", z.Member)

	// Run it again (as the scheduler would) a minute later: the count goes to 2, failed_at stays.
	clock.add(time.Minute)
	require.NoError(t, v.rdb.ZRem(ctx, v.keys.Retry(), z.Member).Err())
	v.push("default", z.Member.(string))
	testutil.WaitFor(t, "the job is in retry again", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	z2 := v.zset(v.keys.Retry())[0]
	m2 := decode(t, z2.Member.(string))
	assert.EqualValues(t, "2", m2["retry_count"].(fmt.Stringer).String())
	assert.Equal(t, "1796010415.000000", m2["failed_at"].(fmt.Stringer).String())
	assert.Equal(t, "1796010475.000000", m2["retried_at"].(fmt.Stringer).String())
	delay = z2.Score - float64(clock.now().Unix())
	assert.GreaterOrEqual(t, delay, 31.0, "second retry: 2^4 + 15 + rand(0..30)*3")
	assert.LessOrEqual(t, delay, 121.0)
	assert.EqualValues(t, 2, runs.Load())
}

func TestExqBackoffMatchesExqFormula(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 5, 25} {
		lo := time.Duration(n*n*n*n+15) * time.Second
		hi := lo + time.Duration(30*(n+1))*time.Second
		seen := map[time.Duration]bool{}
		for i := 0; i < 2000; i++ {
			d := ExqBackoff(n, nil)
			require.GreaterOrEqual(t, d, lo, "n=%d", n)
			require.LessOrEqual(t, d, hi, "n=%d", n)
			seen[d] = true
		}
		assert.Len(t, seen, 31, "n=%d: rand(0..30) takes all 31 values", n)
	}
}

func TestBackoffOptionIsUsedWithTheNewRetryCount(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var got atomic.Int32
	backoff := func(n int, job *Job) time.Duration {
		got.Store(int32(n))
		return time.Duration(n) * time.Hour
	}
	_, clock := failingNode(t, v, Options{Backoff: backoff}, WorkerFunc(func(context.Context, *Job) error { return errors.New("x") }))
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"j","retry":5,"retry_count":2}`)
	testutil.WaitFor(t, "the job is in retry", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	assert.EqualValues(t, 3, got.Load())
	assert.Equal(t, float64(clock.now().Add(3*time.Hour).Unix()), v.zset(v.keys.Retry())[0].Score)
}

func TestJobsWithoutRetriesOrOutOfRetriesGoToDead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, retry string
		count       string
		wantCount   string
	}{
		{"retry false", `false`, ``, "1"},
		{"retry 0", `0`, ``, "1"},
		{"retry missing", ``, ``, "1"},
		{"retry null", `null`, ``, "1"},
		{"retries used up", `2`, `,"retry_count":2`, "3"},
		{"retry true with node limit used up", `true`, `,"retry_count":4`, "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			e, clock := failingNode(t, v, Options{MaxRetries: 4}, WorkerFunc(func(context.Context, *Job) error { return errors.New("boom") }))
			retry := ""
			if tc.retry != "" {
				retry = `,"retry":` + tc.retry
			}
			raw := `{"class":"W","args":[],"queue":"default","jid":"d1"` + retry + tc.count + `,"bid":"keep"}`
			v.push("default", raw)
			testutil.WaitFor(t, "the job is dead", func() bool { return v.zcard(v.keys.Dead()) == 1 })
			assert.Zero(t, v.zcard(v.keys.Retry()))
			assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
			z := v.zset(v.keys.Dead())[0]
			assert.Equal(t, float64(clock.now().Unix()), z.Score, "scored with the time of death")
			m := decode(t, z.Member.(string))
			assert.Equal(t, "boom", m["error_message"])
			assert.Equal(t, "*errors.errorString", m["error_class"])
			assert.Equal(t, tc.wantCount, m["retry_count"].(fmt.Stringer).String())
			assert.Equal(t, "keep", m["bid"])
		})
	}
}

func TestMaxRetriesZeroEnqueueOptionSendsFirstFailureToDead(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	failingNode(t, v, Options{}, WorkerFunc(func(context.Context, *Job) error { return errors.New("boom") }))
	en := v.enqueuer(time.Now)
	_, err := en.enqueue(context.Background(), "default", "W", nil, []EnqueueOption{MaxRetries(0)})
	require.NoError(t, err)
	testutil.WaitFor(t, "the job is dead", func() bool { return v.zcard(v.keys.Dead()) == 1 })
	assert.Zero(t, v.zcard(v.keys.Retry()))
}

func TestDeadSetIsTrimmedByCountAndAge(t *testing.T) {
	t.Parallel()
	fail := WorkerFunc(func(context.Context, *Job) error { return errors.New("boom") })
	pushN := func(v *env, n int) {
		for i := 0; i < n; i++ {
			v.push("default", fmt.Sprintf(`{"class":"W","args":[%d],"queue":"default","jid":"d%d","retry":false}`, i, i))
		}
	}
	t.Run("by count keeps the newest", func(t *testing.T) {
		v := newEnv(t)
		var ran atomic.Int32
		e, clock := failingNode(t, v, Options{DeadMaxJobs: 5, Queues: []Queue{{Name: "default", Concurrency: 1}}},
			WorkerFunc(func(ctx context.Context, job *Job) error { ran.Add(1); return fail(ctx, job) }))
		_ = e
		_ = clock
		pushN(v, 10)
		testutil.WaitFor(t, "10 jobs failed", func() bool {
			return ran.Load() == 10 && len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0
		})
		assert.Equal(t, 5, v.zcard(v.keys.Dead()))
	})
	t.Run("NoDeadJobs keeps none", func(t *testing.T) {
		v := newEnv(t)
		var ran atomic.Int32
		e, _ := failingNode(t, v, Options{DeadMaxJobs: NoDeadJobs},
			WorkerFunc(func(ctx context.Context, job *Job) error { ran.Add(1); return fail(ctx, job) }))
		pushN(v, 3)
		testutil.WaitFor(t, "3 jobs failed", func() bool {
			return ran.Load() == 3 && len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0
		})
		assert.Zero(t, v.zcard(v.keys.Dead()))
	})
	t.Run("by age", func(t *testing.T) {
		v := newEnv(t)
		ctx := context.Background()
		_, clock := failingNode(t, v, Options{DeadTimeout: time.Hour}, fail)
		now := clock.now()
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Dead(), redisZ(now.Add(-2*time.Hour), "old")).Err())
		require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Dead(), redisZ(now.Add(-30*time.Minute), "recent")).Err())
		pushN(v, 1)
		testutil.WaitFor(t, "the job is dead", func() bool {
			n, _ := v.rdb.ZScore(ctx, v.keys.Dead(), "recent").Result()
			return n != 0 && len(v.zset(v.keys.Dead())) == 2 && v.zset(v.keys.Dead())[1].Member != "recent"
		})
		members := []string{}
		for _, z := range v.zset(v.keys.Dead()) {
			members = append(members, z.Member.(string))
		}
		assert.Equal(t, "recent", members[0])
		assert.NotContains(t, members, "old")
	})
}

func TestPoisonMessagesAreDeadLetteredNeverRerun(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`not json at all`,
		`{"args":[1],"queue":"default","jid":"noclass"}`,
		`{"class":"W","args":5,"queue":"default","jid":"badargs"}`,
		`["class","W"]`,
		"{\"class\":\"W\",\"args\":[\"\xff\"", // truncated, invalid UTF-8
	} {
		t.Run(raw, func(t *testing.T) {
			v := newEnv(t)
			rec := &recorder{}
			e := v.start(Options{Workers: map[string]Worker{"W": rec}})
			v.push("default", raw)
			testutil.WaitFor(t, "the poison message is dead", func() bool { return v.zcard(v.keys.Dead()) == 1 })
			assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
			assert.Empty(t, v.list(v.keys.Queue("default")))
			assert.Zero(t, rec.count())
			m := decode(t, v.zset(v.keys.Dead())[0].Member.(string))
			if utf8.ValidString(raw) {
				assert.Equal(t, raw, m["raw"])
			} else {
				exact, err := base64.StdEncoding.DecodeString(m["raw_base64"].(string))
				require.NoError(t, err)
				assert.Equal(t, raw, string(exact), "invalid UTF-8 is kept byte for byte in raw_base64")
			}
			assert.Equal(t, wire.PoisonClass, m["class"])
			assert.Equal(t, wire.PoisonErrorClass, m["error_class"])
			assert.Contains(t, m["error_message"], "undecodable job")
			// The node goes on working.
			v.push("default", `{"class":"W","args":[],"queue":"default","jid":"good"}`)
			testutil.WaitFor(t, "a good job runs after the poison one", func() bool { return rec.count() == 1 })
		})
	}
}

func TestPanickingWorkerFailsAndTheNodeGoesOn(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		if job.JID == "p1" {
			panic("index out of range [3] with length 1")
		}
		var none []int
		return fmt.Errorf("unreachable: %d", none[len(job.JID)]) // a runtime panic
	})
	e, _ := failingNode(t, v, Options{}, w)
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"p1","retry":1}`)
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"p2","retry":0}`)
	testutil.WaitFor(t, "one retry and one dead", func() bool { return v.zcard(v.keys.Retry()) == 1 && v.zcard(v.keys.Dead()) == 1 })
	m := decode(t, v.zset(v.keys.Retry())[0].Member.(string))
	assert.Equal(t, "panic", m["error_class"])
	assert.Equal(t, "index out of range [3] with length 1", m["error_message"])
	d := decode(t, v.zset(v.keys.Dead())[0].Member.(string))
	assert.Equal(t, "panic", d["error_class"])
	assert.Contains(t, d["error_message"], "runtime error: index out of range [2] with length 0")
	testutil.WaitFor(t, "slots freed", func() bool { return e.mgr.inFlight() == 0 })
	assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
}

func TestUnknownClassIsAFailureNamingTheClass(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e, _ := failingNode(t, v, Options{RegisterGrace: NoRegisterGrace}, &recorder{})
	v.push("default", `{"class":"Missing.Worker","args":[],"queue":"default","jid":"u1","retry":2}`)
	testutil.WaitFor(t, "the job is in retry", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	m := decode(t, v.zset(v.keys.Retry())[0].Member.(string))
	assert.Equal(t, `no worker registered for class "Missing.Worker"`, m["error_message"], "error_class says the rest")
	assert.Equal(t, "exq.UnknownClass", m["error_class"])
	assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
}

func TestLongErrorMessagesAreCutToTheWireLimit(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	failingNode(t, v, Options{}, WorkerFunc(func(context.Context, *Job) error {
		return errors.New(strings.Repeat("é", 6000))
	}))
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"l1","retry":1}`)
	testutil.WaitFor(t, "the job is in retry", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	msg := decode(t, v.zset(v.keys.Retry())[0].Member.(string))["error_message"].(string)
	assert.LessOrEqual(t, len(msg), 10000)
	assert.Equal(t, strings.Repeat("é", 5000), msg)
}

func TestMiddlewareWrapsEveryJobOutermostFirst(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var trace []string
	var mu = make(chan struct{}, 1)
	mw := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, job *Job) error {
				mu <- struct{}{}
				trace = append(trace, name+">")
				<-mu
				err := next(ctx, job)
				mu <- struct{}{}
				trace = append(trace, "<"+name)
				<-mu
				return err
			}
		}
	}
	rec := &recorder{fn: func(context.Context, *Job) error {
		mu <- struct{}{}
		trace = append(trace, "worker")
		<-mu
		return nil
	}}
	e := v.start(Options{Middleware: []Middleware{mw("a"), mw("b")}, Workers: map[string]Worker{"W": rec}})
	_, err := e.Enqueue(context.Background(), "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the job ran", func() bool {
		mu <- struct{}{}
		defer func() { <-mu }()
		return len(trace) == 5
	})
	assert.Equal(t, []string{"a>", "b>", "worker", "<b", "<a"}, trace)
}

func TestMiddlewareCanTurnSuccessIntoFailure(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	veto := func(next Handler) Handler {
		return func(ctx context.Context, job *Job) error {
			if err := next(ctx, job); err != nil {
				return err
			}
			return errors.New("vetoed by middleware")
		}
	}
	rec := &recorder{}
	failingNode(t, v, Options{Middleware: []Middleware{veto}}, rec)
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"m1","retry":1}`)
	testutil.WaitFor(t, "the job is in retry", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	assert.Equal(t, []string{"m1"}, rec.jids(), "the worker ran once and succeeded; the middleware failed the job after it")
	m := decode(t, v.zset(v.keys.Retry())[0].Member.(string))
	assert.Equal(t, "m1", m["jid"])
	assert.Equal(t, "vetoed by middleware", m["error_message"], "the middleware's error is the job's failure")
	assert.Equal(t, "*errors.errorString", m["error_class"])
}

func TestOutcomeIsWrittenOnceRedisComesBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		outcome error
	}{
		{"success", nil},
		{"failure", errors.New("boom")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			proxy := testutil.NewProxy(t, v.rdb.Options().Addr)
			client := v.clientVia(proxy.Addr())
			release, returned := make(chan struct{}), make(chan struct{})
			var runs atomic.Int32
			w := WorkerFunc(func(ctx context.Context, job *Job) error {
				defer close(returned)
				runs.Add(1)
				<-release
				return tc.outcome
			})
			e := v.start(Options{Redis: client, RedisTimeout: 5 * time.Second, DisableScheduler: true, Workers: map[string]Worker{"W": w}})
			v.push("default", `{"class":"W","args":[],"queue":"default","jid":"o1","retry":3}`)
			testutil.WaitFor(t, "the job started", func() bool { return runs.Load() == 1 })

			proxy.Down()
			close(release) // the worker finishes while Redis is unreachable
			<-returned
			if tc.outcome == nil {
				// A success frees its slot at once; the acker holds the acknowledgement.
				testutil.WaitFor(t, "the slot is free", func() bool { return e.mgr.inFlight() == 0 })
				assert.EqualValues(t, 1, e.acker.Count(), "the acknowledgement waits for Redis")
			} else {
				assert.Equal(t, 1, e.mgr.inFlight(), "a failure holds its slot until its retry is written")
			}
			assert.Len(t, v.list(v.keys.Backup(e.NodeID(), "default")), 1, "the job is still in Redis")
			proxy.Up()
			testutil.WaitFor(t, "the outcome is written", func() bool {
				return len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0 && e.mgr.inFlight() == 0
			})
			if tc.outcome != nil {
				assert.Equal(t, 1, v.zcard(v.keys.Retry()))
			} else {
				assert.Zero(t, v.zcard(v.keys.Retry()))
			}
			assert.EqualValues(t, 1, runs.Load())
			assert.Empty(t, v.list(v.keys.Queue("default")))
		})
	}
}

func TestJobBindDecodesPositionalArgs(t *testing.T) {
	t.Parallel()
	type payload struct {
		Name string `json:"name"`
	}
	j := &Job{Class: "W", Args: []byte(`[42,"welcome",{"name":"ada"},null,12345678901234567890]`)}
	var (
		id   int
		tmpl string
		p    payload
		big  any
	)
	require.NoError(t, j.Bind(&id, &tmpl, &p, nil, &big))
	assert.Equal(t, 42, id)
	assert.Equal(t, "welcome", tmpl)
	assert.Equal(t, "ada", p.Name)
	assert.Equal(t, "12345678901234567890", fmt.Sprint(big), "big numbers are kept exactly")

	for _, tc := range []struct {
		args string
		dst  []any
		want string
	}{
		{`[1,2]`, []any{&id}, "exq: bind W: job has 2 args, want 1"},
		{`[]`, []any{&id}, "exq: bind W: job has 0 args, want 1"},
		{`["x"]`, []any{&id}, `exq: bind W: arg 0 ("x"): json: cannot unmarshal string into Go value of type int`},
		{`{"a":1}`, []any{&id}, "exq: bind W: args are not a JSON array"},
	} {
		err := (&Job{Class: "W", Args: []byte(tc.args)}).Bind(tc.dst...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestErrorClassNamesTheFailure(t *testing.T) {
	t.Parallel()
	opErr := &net.OpError{Op: "dial", Err: errors.New("x")}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("x"), "*errors.errorString"},
		{opErr, "*net.OpError"},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", opErr)), "*net.OpError"},
		{fmt.Errorf("plain %s", "text"), "*errors.errorString"},
		{&PanicError{Value: 1}, "panic"},
		{fmt.Errorf("wrapped: %w", &unknownClassError{"X"}), "exq.UnknownClass"},
		{context.DeadlineExceeded, "context.deadlineExceededError"},
	} {
		assert.Equal(t, tc.want, errorClass(tc.err), "%v", tc.err)
	}
}

func TestAPanickingBackoffFallsBackToExqBackoff(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	_, clock := failingNode(t, v, Options{Backoff: func(int, *Job) time.Duration { panic("bad backoff") }},
		WorkerFunc(func(context.Context, *Job) error { return errors.New("x") }))
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"b1","retry":3}`)
	testutil.WaitFor(t, "the job is in retry", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	delay := v.zset(v.keys.Retry())[0].Score - float64(clock.now().Unix())
	assert.GreaterOrEqual(t, delay, 16.0)
	assert.LessOrEqual(t, delay, 76.0)
}

// A job's Args are its own copy, whether they fit in its run (short) or not (long): a worker
// that writes into them or appends to them changes neither the stored document (the job is
// still acknowledged: its backup entry matches) nor the Args of the next job, and
// JobFromContext gives each run its own job.
func TestAWorkerThatChangesItsArgsLeavesItsDocumentAndOtherJobsAlone(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	long := `["` + strings.Repeat("x", 200) + `"]`
	var mu sync.Mutex
	seen := map[string]string{}
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		mu.Lock()
		seen[job.JID] = string(job.Args)
		mu.Unlock()
		if JobFromContext(ctx) != job {
			return fmt.Errorf("JobFromContext is not the job")
		}
		job.Args[1] = 'Z'
		job.Args = append(job.Args, "garbage"...)
		return nil
	})
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 1}}, Workers: map[string]Worker{"W": w}})
	want := map[string]string{}
	for i := range 6 {
		jid, args := fmt.Sprintf("j%d", i), fmt.Sprintf("[%d]", i)
		if i%2 == 1 {
			args = long
		}
		want[jid] = args
		v.push("q", fmt.Sprintf(`{"class":"W","args":%s,"queue":"q","jid":%q,"retry":0}`, args, jid))
	}
	testutil.WaitFor(t, "every job ran and was acknowledged", func() bool {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		return n == len(want) && len(v.list(v.keys.Backup(e.NodeID(), "q"))) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, want, seen, "each job saw its own args")
	assert.Zero(t, v.zcard(v.keys.Dead())+v.zcard(v.keys.Retry()), "no job failed")
}
