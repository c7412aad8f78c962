package exq

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

type signupArgs struct {
	UserID   int      `json:"user_id"`
	Template string   `json:"template"`
	Tags     []string `json:"tags"`
}

func (signupArgs) Class() string { return "MyApp::Signup" }

// mailArgs names its queue.
type mailArgs struct {
	To string `json:"to"`
}

func (mailArgs) Class() string { return "MyApp.Mail" }
func (mailArgs) Queue() string { return "mail" }

// ptrArgs has Class on the pointer receiver, which the zero *ptrArgs (nil) cannot call safely.
type ptrArgs struct{ N int }

func (p *ptrArgs) Class() string { return "Ptr" + strings.Repeat("!", p.N) }

func TestEnqueueArgsWritesOneArgUnderTheArgsClassAndAddWorkerRunsIt(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	got := make(chan signupArgs, 2)
	var jid atomic.Value
	e := v.start(Options{Queues: []Queue{{Name: "default"}, {Name: "mail"}}})
	require.NoError(t, AddWorker(e, func(ctx context.Context, job *Job, a signupArgs) error {
		jid.Store(job.JID)
		got <- a
		return nil
	}))
	want := signupArgs{UserID: 42, Template: "welcome", Tags: []string{"new", "ü"}}
	j, err := EnqueueArgs(ctx, e, want)
	require.NoError(t, err)
	select {
	case a := <-got:
		assert.Equal(t, want, a)
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the worker did not run")
	}
	assert.Equal(t, j, jid.Load())

	// The wire format is plain JSON, as a Ruby or Elixir producer writes it.
	_, c := v.api()
	_, err = EnqueueArgs(ctx, c, want, OnQueue("parked"))
	require.NoError(t, err)
	parked := v.list(v.keys.Queue("parked"))
	require.Len(t, parked, 1)
	assert.Contains(t, parked[0], `"class":"MyApp::Signup"`)
	assert.Contains(t, parked[0], `"args":[{"user_id":42,"template":"welcome","tags":["new","ü"]}]`)

	// A foreign producer's job of the class runs on the same worker.
	v.push("default", `{"class":"MyApp::Signup","args":[{"user_id":7,"template":"bye","extra":true}],"queue":"default","jid":"rb"}`)
	select {
	case a := <-got:
		assert.Equal(t, signupArgs{UserID: 7, Template: "bye"}, a)
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the worker did not run the foreign job")
	}
}

func TestEnqueueArgsQueueComesFromOnQueueThenTheArgsQueueMethodThenDefault(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	_, c := v.api()
	_, err := EnqueueArgs(ctx, c, signupArgs{UserID: 1})
	require.NoError(t, err)
	_, err = EnqueueArgs(ctx, c, mailArgs{To: "a@example.com"})
	require.NoError(t, err)
	_, err = EnqueueArgs(ctx, c, mailArgs{To: "b@example.com"}, OnQueue("urgent"), MaxRetries(2))
	require.NoError(t, err)
	assert.Len(t, v.list(v.keys.Queue("default")), 1)
	assert.Len(t, v.list(v.keys.Queue("mail")), 1)
	urgent := v.list(v.keys.Queue("urgent"))
	require.Len(t, urgent, 1)
	assert.Equal(t, json.Number("2"), decode(t, urgent[0])["retry"], "the other options still apply")
}

func TestEnqueueArgsInAndAtScheduleTheJob(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	_, c := v.api()
	_, err := EnqueueArgsIn(ctx, c, time.Hour, mailArgs{To: "in"})
	require.NoError(t, err)
	_, err = EnqueueArgsAt(ctx, c, time.Now().Add(2*time.Hour), mailArgs{To: "at"})
	require.NoError(t, err)
	sched := v.zset(v.keys.Schedule())
	require.Len(t, sched, 2)
	for _, z := range sched {
		m := decode(t, z.Member.(string))
		assert.Equal(t, "MyApp.Mail", m["class"])
		assert.Equal(t, "mail", m["queue"])
		assert.Greater(t, z.Score, float64(time.Now().Add(59*time.Minute).Unix()))
	}
}

func TestOnQueueIsRefusedByTheCallsThatTakeAQueue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	_, c := v.api()
	_, err := c.Enqueue(context.Background(), "default", "W", nil, OnQueue("mail"))
	require.ErrorIs(t, err, ErrInvalidJob)
	assert.Contains(t, err.Error(), `OnQueue("mail") is for EnqueueArgs`)
}

func TestAddWorkerRefusesAClassItCannotReadFromTheZeroValue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{})
	err := AddWorker(e, func(context.Context, *Job, *ptrArgs) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "*exq.ptrArgs.Class() panicked")
	_, err = EnqueueArgs(context.Background(), e, (*ptrArgs)(nil))
	require.Error(t, err, "a nil pointer's Class panics: an error, not a panic")
	// A non-nil pointer whose Class works is fine to enqueue.
	_, err = EnqueueArgs(context.Background(), e, &ptrArgs{N: 1})
	require.NoError(t, err)
}

func TestTypedRegistersAFuncForAClassStringOfAnotherRuntime(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	got := make(chan int, 1)
	type invoice struct {
		ID int `json:"id"`
	}
	v.start(Options{Workers: map[string]Worker{"Billing::Invoice": Typed(func(ctx context.Context, job *Job, a invoice) error {
		assert.Equal(t, "rb", job.JID)
		assert.Same(t, job, JobFromContext(ctx))
		got <- a.ID
		return nil
	})}})
	v.push("default", `{"class":"Billing::Invoice","args":[{"id":9}],"queue":"default","jid":"rb"}`)
	select {
	case id := <-got:
		assert.Equal(t, 9, id)
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the typed worker did not run")
	}
}

func TestTypedWorkerFailsClearlyOnBadArgShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args string
		want string
	}{
		{`[]`, "Signup: a typed worker takes exactly one arg (the JSON of a exq.signupArgs), the job has 0"},
		{`[{"user_id":1},{"user_id":2}]`, "the job has 2"},
		{`["not an object"]`, `Signup: arg "not an object" is not a exq.signupArgs`},
		{`[{"user_id":"forty-two"}]`, `is not a exq.signupArgs`},
	} {
		t.Run(tc.args, func(t *testing.T) {
			v := newEnv(t)
			called := false
			w := Typed(func(context.Context, *Job, signupArgs) error { called = true; return nil })
			v.start(Options{Workers: map[string]Worker{"Signup": w}})
			v.push("default", `{"class":"Signup","args":`+tc.args+`,"queue":"default","jid":"bad","retry":1}`)
			testutil.WaitFor(t, "the job went to the dead set", func() bool { return v.zcard(v.keys.Dead()) == 1 })
			m := decode(t, v.zset(v.keys.Dead())[0].Member.(string))
			assert.Contains(t, m["error_message"], tc.want)
			assert.Equal(t, "exq.ArgsDecodeError", m["error_class"])
			assert.False(t, called)
		})
	}
}

// Numbers that land in an interface{} are json.Number, so a big integer id pushed by Ruby or
// Elixir stays exact (a float64 would make 12345678901234567890 into 12345678901234567168).
// Typed destinations decode as encoding/json always does.
func TestBindAndTypedDecodeNumbersInAnInterfaceAsExactJSONNumbers(t *testing.T) {
	t.Parallel()
	job := &Job{Class: "W", Args: json.RawMessage(`[12345678901234567890, 1.5, {"id": 12345678901234567890}, 7, 2.5]`)}
	var big, frac any
	var obj map[string]any
	var n int64
	var f float64
	require.NoError(t, job.Bind(&big, &frac, &obj, &n, &f))
	assert.Equal(t, json.Number("12345678901234567890"), big)
	assert.Equal(t, json.Number("1.5"), frac)
	assert.Equal(t, json.Number("12345678901234567890"), obj["id"])
	assert.Equal(t, int64(7), n)
	assert.Equal(t, 2.5, f)

	type withAny struct {
		ID    any     `json:"id"`
		Ratio float64 `json:"ratio"`
	}
	var got withAny
	w := Typed(func(_ context.Context, _ *Job, a withAny) error { got = a; return nil })
	require.NoError(t, w.Perform(context.Background(), &Job{Class: "W", Args: json.RawMessage(`[{"id":12345678901234567890,"ratio":0.25}]`)}))
	assert.Equal(t, withAny{ID: json.Number("12345678901234567890"), Ratio: 0.25}, got)
}

// Every kind of node takes AddWorker (exqtest's Inline is checked in its own package).
var (
	_ Registrar = (*Exq)(nil)
	_ Registrar = (*Sharded)(nil)
)
