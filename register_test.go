package exq

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

type regSignup struct {
	N int `json:"n"`
}

func (regSignup) Class() string { return "Reg.Signup" }

// jidCounter counts the runs of each jid.
type jidCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *jidCounter) add(jid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[jid]++
}

func (c *jidCounter) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.runs)
}

func (c *jidCounter) get(jid string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[jid]
}

// assertNoFailure checks that no job failed: stat:failed is 0 (once the counters are flushed),
// and the retry and dead sets are empty.
func (v *env) assertNoFailure(processed int) {
	v.t.Helper()
	testutil.WaitFor(v.t, "the processed counter is flushed", func() bool {
		n, _ := v.rdb.Get(context.Background(), v.keys.Stat("processed")).Int()
		return n == processed
	})
	failed, _ := v.rdb.Get(context.Background(), v.keys.Stat("failed")).Int()
	assert.Zero(v.t, failed, "stat:failed")
	assert.Zero(v.t, v.zcard(v.keys.Retry()), "retry set")
	assert.Zero(v.t, v.zcard(v.keys.Dead()), "dead set")
}

func TestWorkersGivenAtStartRunTheJobsAlreadyWaitingWithoutAFailure(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	const n = 40
	var jids []string
	for i := range n {
		jid := fmt.Sprintf("typed-%d", i)
		v.push("default", fmt.Sprintf(`{"class":"Reg.Signup","args":[{"n":%d}],"queue":"default","jid":%q,"retry":3}`, i, jid))
		jids = append(jids, jid)
		jid = fmt.Sprintf("plain-%d", i)
		v.push("default", fmt.Sprintf(`{"class":"Reg.Plain","args":[],"queue":"default","jid":%q,"retry":3}`, jid))
		jids = append(jids, jid)
	}
	var ran jidCounter
	v.start(Options{
		Register: []Registration{
			WorkerFor(func(_ context.Context, job *Job, a regSignup) error { ran.add(job.JID); return nil }),
			{Class: "Reg.Plain", Worker: WorkerFunc(func(_ context.Context, job *Job) error { ran.add(job.JID); return nil })},
		},
		RegisterGrace: NoRegisterGrace, // every worker is given at start: nothing may fail
	})
	testutil.WaitFor(t, "every job ran", func() bool { return ran.distinct() == 2*n })
	for _, jid := range jids {
		assert.Equal(t, 1, ran.get(jid), jid)
	}
	v.assertNoFailure(2 * n)
}

func TestAWorkerAddedAfterStartGetsTheJobsFetchedBeforeIt(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	const n = 20
	for i := range n {
		v.push("default", fmt.Sprintf(`{"class":"Reg.Signup","args":[{"n":%d}],"queue":"default","jid":"late-%d","retry":3}`, i, i))
	}
	e := v.start(Options{Queues: []Queue{{Name: "default", Concurrency: 5}}})
	testutil.WaitFor(t, "the node fetched jobs it has no worker for", func() bool { return e.mgr.inFlight() > 0 })
	var ran jidCounter
	require.NoError(t, AddWorker(e, func(_ context.Context, job *Job, a regSignup) error { ran.add(job.JID); return nil }))
	testutil.WaitFor(t, "every job ran", func() bool { return ran.distinct() == n })
	for i := range n {
		assert.Equal(t, 1, ran.get(fmt.Sprintf("late-%d", i)))
	}
	v.assertNoFailure(n)
}

// A job with no worker yet goes back to the end of its queue after a moment: the jobs behind
// it run (here on a node with one slot), and it runs once its worker comes.
func TestAJobWithoutItsWorkerYetGoesBackBehindTheOthers(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.push("default", `{"class":"Reg.Later","args":[],"queue":"default","jid":"first","retry":3}`)
	v.push("default", `{"class":"Reg.Now","args":[],"queue":"default","jid":"second","retry":3}`)
	var ran jidCounter
	e := v.start(Options{Queues: []Queue{{Name: "default", Concurrency: 1}},
		Workers: map[string]Worker{"Reg.Now": WorkerFunc(func(_ context.Context, job *Job) error { ran.add(job.JID); return nil })}})
	testutil.WaitFor(t, "the job behind ran", func() bool { return ran.get("second") == 1 })
	assert.Zero(t, ran.get("first"))
	require.NoError(t, e.Register("Reg.Later", WorkerFunc(func(_ context.Context, job *Job) error { ran.add(job.JID); return nil })))
	testutil.WaitFor(t, "the put-back job ran", func() bool { return ran.get("first") == 1 })
	v.assertNoFailure(2)
}

// A node that never gets the worker fails the job as an unknown class once registration is
// over (the grace has passed, or the application said so), using one retry, not one per fetch.
func TestAJobWhoseWorkerNeverComesFailsOnceRegistrationIsOver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		grace time.Duration
		done  bool // the application calls RegistrationDone
	}{
		// The grace runs from Start, and the job must be fetched before it ends: a loaded root
		// run once took about 2 s from newEnv to the wait (the subtest failed after 21.98 s with
		// no put-back), so 1.5 s could pass before the first fetch.
		{"the grace passes", 5 * time.Second, false},
		{"the application says it is done", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			v.push("default", `{"class":"Reg.Never","args":[],"queue":"default","jid":"never","retry":3}`)
			began := time.Now()
			e := v.start(Options{RegisterGrace: tc.grace, DisableScheduler: true})
			testutil.WaitFor(t, "the job went back to its queue", func() bool { return e.registry.PutBacks.Load() >= 1 })
			assert.Zero(t, v.zcard(v.keys.Retry()), "not a failure while registering")
			if tc.done {
				e.RegistrationDone()
			}
			testutil.WaitFor(t, "the job failed", func() bool { return v.zcard(v.keys.Retry()) == 1 })
			if !tc.done {
				assert.GreaterOrEqual(t, time.Since(began), tc.grace)
			}
			m := decode(t, v.zset(v.keys.Retry())[0].Member.(string))
			assert.Equal(t, "exq.UnknownClass", m["error_class"])
			assert.Equal(t, "1", fmt.Sprint(m["retry_count"]), "one failure, one retry used")
			assert.Empty(t, v.list(v.keys.Queue("default")))
			assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
		})
	}
}

func TestRegisteringAClassTwiceIsAnError(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	w := WorkerFunc(func(context.Context, *Job) error { return nil })
	fn := func(context.Context, *Job, regSignup) error { return nil }
	e := v.start(Options{Workers: map[string]Worker{"Reg.A": w}, Register: []Registration{WorkerFor(fn)}})
	assert.ErrorIs(t, e.Register("Reg.A", w), ErrAlreadyRegistered)
	assert.ErrorIs(t, AddWorker(e, fn), ErrAlreadyRegistered)
	require.NoError(t, e.Register("Reg.B", w))
	assert.ErrorIs(t, e.Register("Reg.B", w), ErrAlreadyRegistered)

	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"twice in Register", Options{Register: []Registration{WorkerFor(fn), WorkerFor(fn)}}, `Register[1]: exq: a worker is already registered for class: "Reg.Signup" is Register[0] too`},
		{"in Register and Workers", Options{Workers: map[string]Worker{"Reg.Signup": w}, Register: []Registration{WorkerFor(fn)}}, `Register[0]: exq: a worker is already registered for class: "Reg.Signup" is in Workers too`},
		{"a nil func", Options{Register: []Registration{WorkerFor[regSignup](nil)}}, `Register[0]: the func for "Reg.Signup" is nil`},
		{"no class", Options{Register: []Registration{{Worker: w}}}, `Register[0]: class is empty`},
		{"no worker", Options{Register: []Registration{{Class: "X"}}}, `Register[0]: class "X" has a nil worker`},
		{"a negative grace", Options{RegisterGrace: -time.Second}, `RegisterGrace: must be NoRegisterGrace or not negative, got -1s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.o.withDefaults(testHooks{})
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Equal(t, "exq: invalid options: "+tc.want, err.Error())
		})
	}
}
