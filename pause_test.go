package exq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// starts records when every job of a queue started.
type starts struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (s *starts) worker(d time.Duration) WorkerFunc {
	return func(ctx context.Context, job *Job) error {
		s.mu.Lock()
		if s.at == nil {
			s.at = map[string][]time.Time{}
		}
		s.at[job.Queue] = append(s.at[job.Queue], time.Now())
		s.mu.Unlock()
		time.Sleep(d)
		return nil
	}
}

func (s *starts) count(q string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at[q])
}

// after counts the jobs of q that started after t.
func (s *starts) after(q string, t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.at[q] {
		if at.After(t) {
			n++
		}
	}
	return n
}

func TestPauseQueueStopsEveryNodeAndResumeRestoresFlow(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	rec := &starts{}
	queues := []Queue{{Name: "pq", Concurrency: 5}, {Name: "other", Concurrency: 5}}
	var nodes []*Exq
	for range 3 {
		nodes = append(nodes, v.start(Options{Queues: queues, Workers: map[string]Worker{"W": rec.worker(5 * time.Millisecond)}}))
	}
	// Load: jobs keep arriving on both queues for the whole test.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			_, err := nodes[i%3].Enqueue(ctx, "pq", "W", []any{i})
			assert.NoError(t, err)
			_, err = nodes[i%3].Enqueue(ctx, "other", "W", []any{i})
			assert.NoError(t, err)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	testutil.WaitFor(t, "jobs of pq run", func() bool { return rec.count("pq") >= 30 })

	api := nodes[0].API()
	require.NoError(t, api.PauseQueue(ctx, "pq"))
	paused := time.Now()
	p, err := api.PausedQueues(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"pq"}, p)

	// Enqueues keep landing, other queues keep flowing, and pq starts nothing 1 s after the pause.
	// The counts are waited for, not expected within a time: a loaded machine enqueues fewer
	// jobs a second, and the test is about what runs, not how fast.
	otherBefore := rec.count("other")
	testutil.WaitFor(t, "2 s after the pause, 100 more jobs of other ran and 100 of pq wait", func() bool {
		return time.Since(paused) > 2*time.Second && rec.count("other") > otherBefore+100 &&
			v.rdb.LLen(ctx, v.keys.Queue("pq")).Val() > 100
	})
	assert.Zero(t, rec.after("pq", paused.Add(time.Second)), "jobs of pq started more than 1 s after the pause")
	waiting := v.rdb.LLen(ctx, v.keys.Queue("pq")).Val()
	for _, e := range nodes {
		assert.Zero(t, v.rdb.LLen(ctx, v.keys.Backup(e.NodeID(), "pq")).Val(), "a paused queue's jobs still in flight")
	}

	require.NoError(t, api.ResumeQueue(ctx, "pq"))
	resumed := time.Now()
	testutil.WaitFor(t, "pq flows again", func() bool { return rec.after("pq", resumed) >= int(waiting) })
	p, err = api.PausedQueues(ctx)
	require.NoError(t, err)
	assert.Empty(t, p)
}

func TestNodeStartedAfterPauseDoesNotFetchThePausedQueue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	api, err := NewAPI(ctx, ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	require.NoError(t, api.PauseQueue(ctx, "pq"))
	for i := range 10 {
		v.push("pq", `{"class":"W","args":[`+string(rune('0'+i))+`],"jid":"j`+string(rune('0'+i))+`","queue":"pq","retry":0}`)
	}
	rec := &recorder{}
	e := v.start(Options{Queues: []Queue{{Name: "pq", Concurrency: 5}}, Workers: map[string]Worker{"W": rec}})
	polls := e.mgr.polls.Load()
	testutil.WaitFor(t, "the node polls the queue", func() bool { return e.mgr.polls.Load() >= polls+10 })
	assert.Zero(t, rec.count())
	assert.Equal(t, int64(10), v.rdb.LLen(ctx, v.keys.Queue("pq")).Val())

	require.NoError(t, api.ResumeQueue(ctx, "pq"))
	testutil.WaitFor(t, "the jobs run after resume", func() bool { return rec.count() == 10 })
}

func TestPauseQueueRefusesBadNames(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	api, err := NewAPI(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns})
	require.NoError(t, err)
	for _, q := range []string{"", "a::b", ":x"} {
		assert.ErrorIs(t, api.PauseQueue(context.Background(), q), ErrInvalidQueue, q)
		assert.ErrorIs(t, api.ResumeQueue(context.Background(), q), ErrInvalidQueue, q)
	}
	assert.Zero(t, v.rdb.Exists(context.Background(), v.keys.Paused()).Val())
}
