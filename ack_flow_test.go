package exq

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
)

// scriptCounter is a go-redis hook that counts the script calls a client sends, by script
// hash.
type scriptCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *scriptCounter) add(cmd redis.Cmder) {
	// EVALSHA only: the EVAL that follows a NOSCRIPT is the same call sent again.
	if args := cmd.Args(); len(args) > 1 && strings.EqualFold(fmt.Sprint(args[0]), "evalsha") {
		c.mu.Lock()
		c.counts[fmt.Sprint(args[1])]++
		c.mu.Unlock()
	}
}

func (c *scriptCounter) count(s *redis.Script) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[s.Hash()]
}

// A job of a batch or workflow that succeeds records its batch's or workflow's transition in
// its acknowledgement's own script call, atomic with the LREM that takes it off its backup
// list: no outcome script of its own runs, and every transition is recorded (the callbacks
// fire once, the dependents are released, nothing is left in a backup list).
func TestASuccessfulJobOfABatchOrWorkflowRecordsItsTransitionInItsAcknowledgement(t *testing.T) {
	t.Parallel()
	rdb, ns := testutil.Redis(t)
	calls := &scriptCounter{counts: map[string]int{}}
	rdb.AddHook(calls)
	v := &env{t: t, rdb: rdb, ns: ns, keys: keysFor(ns), client: rdb}
	var ran atomic.Int64
	e := v.start(Options{Queues: []Queue{{Name: "q", Concurrency: 5}, {Name: "cb", Concurrency: 1}},
		Workers: map[string]Worker{"W": WorkerFunc(func(context.Context, *Job) error {
			ran.Add(1)
			return nil
		})}})
	runs := newRunCounter()
	callbackRecorder(t, e, runs)
	ctx := context.Background()
	bid, _, err := e.NewBatch(ctx, callbackSpecs(), batchSpecs(20, "W"))
	require.NoError(t, err)
	wf, err := e.EnqueueWorkflow(ctx, WorkflowOptions{}, []WorkflowJob{
		{Name: "a", Queue: "q", Class: "W"},
		{Name: "b", Queue: "q", Class: "W", DependsOn: []string{"a"}},
		{Name: "c", Queue: "q", Class: "W", DependsOn: []string{"a"}},
		{Name: "d", Queue: "q", Class: "W", DependsOn: []string{"b", "c"}},
	})
	require.NoError(t, err)
	api := e.API()
	testutil.WaitFor(t, "the batch's success and complete callbacks and the whole workflow", func() bool {
		st, err := api.Workflow(ctx, wf.ID)
		return err == nil && st.Succeeded == 4 && runs.total() == 2
	})
	st, err := api.Batch(ctx, bid)
	require.NoError(t, err)
	assert.Zero(t, st.Pending)
	assert.EqualValues(t, 24, ran.Load())
	testutil.WaitFor(t, "every job off its backup list", func() bool {
		return v.rdb.LLen(ctx, v.keys.Backup(e.jq.Node(), "q")).Val() == 0
	})
	assert.Zero(t, calls.count(scripts.BatchSettle)+calls.count(scripts.WorkflowSettle)+calls.count(scripts.SettleGroup),
		"no outcome script of its own")
}
