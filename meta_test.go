package exq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

type ctxKey struct{}

func TestEnqueueHooksAddMetaThatTheJobReadsAndItsRetryKeeps(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var mu sync.Mutex
	var done []string
	hook := EnqueueHook(func(ctx context.Context, job *OutgoingJob) func(string, error) {
		job.SetMeta("traceparent", ctx.Value(ctxKey{}).(string))
		return func(jid string, err error) {
			mu.Lock()
			done = append(done, jid)
			mu.Unlock()
		}
	})
	seen := make(chan string, 2)
	fail := WorkerFunc(func(ctx context.Context, job *Job) error {
		tp, _ := job.Meta("traceparent")
		seen <- tp
		require.NoError(t, job.SetMeta("first_run", "span-1"))
		return errors.New("once")
	})
	e := v.start(Options{Queues: []Queue{{Name: "m"}}, Workers: map[string]Worker{"W": fail}, EnqueueHooks: []EnqueueHook{hook}})
	ctx := context.WithValue(context.Background(), ctxKey{}, "00-abc-def-01")
	jid, err := e.Enqueue(ctx, "m", "W", nil, Meta("tenant", "acme"))
	require.NoError(t, err)
	assert.Equal(t, "00-abc-def-01", <-seen, "the run reads what the hook set")
	testutil.WaitFor(t, "the retry is stored", func() bool { return v.zcard(v.keys.Retry()) == 1 })
	doc := decode(t, v.zset(v.keys.Retry())[0].Member.(string))
	assert.Equal(t, "00-abc-def-01", doc["traceparent"], "the retry keeps the hook's field")
	assert.Equal(t, "acme", doc["tenant"], "and the option's")
	assert.Equal(t, "span-1", doc["first_run"], "and what the run set")
	mu.Lock()
	assert.Equal(t, []string{jid}, done, "the hook heard the write's result")
	mu.Unlock()
}

func TestMetaRefusesTheJobsOwnFields(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	en := v.enqueuer(time.Now)
	for _, key := range []string{"", "class", "retry_count", "jid", "error_message"} {
		_, err := en.enqueue(context.Background(), "m", "W", nil, []EnqueueOption{Meta(key, "x")})
		assert.ErrorIs(t, err, ErrInvalidJob, "key %q", key)
	}
	assert.Empty(t, v.list(v.keys.Queue("m")), "nothing written")
	job := &Job{JID: "j"}
	assert.Error(t, job.SetMeta("args", "x"))
}
