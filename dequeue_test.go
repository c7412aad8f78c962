package exq

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// limitTwo lets at most two jobs of each queue be fetched at a time and counts its calls.
type limitTwo struct {
	mu       sync.Mutex
	inFlight map[string]int
	fetched  atomic.Int64
	finished atomic.Int64
	stopped  atomic.Int64
	bad      atomic.Value // a broken invariant, if any
}

func (d *limitTwo) Available(q string, free int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return min(free, 2-d.inFlight[q])
}

func (d *limitTwo) Fetched(q string, n int) {
	d.mu.Lock()
	d.inFlight[q] += n
	if d.inFlight[q] > 2 {
		d.bad.Store("more than 2 fetched")
	}
	d.mu.Unlock()
	d.fetched.Add(int64(n))
}

func (d *limitTwo) Finished(q string) {
	d.mu.Lock()
	d.inFlight[q]--
	if d.inFlight[q] < 0 {
		d.bad.Store("Finished before Fetched")
	}
	d.mu.Unlock()
	d.finished.Add(1)
}

func (d *limitTwo) Stopped() { d.stopped.Add(1) }

func TestDequeuerLimitsAQueueAndHearsEveryJob(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	d := &limitTwo{inFlight: map[string]int{}}
	var running, most atomic.Int64
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
		running.Add(-1)
		return nil
	})
	e := v.start(Options{Queues: []Queue{{Name: "lim", Concurrency: 10}}, Workers: map[string]Worker{"W": w}, Dequeuer: d})
	for i := range 40 {
		_, err := e.Enqueue(ctx, "lim", "W", []any{i})
		require.NoError(t, err)
	}
	testutil.WaitFor(t, "every job ran", func() bool { return d.finished.Load() == 40 })
	assert.LessOrEqual(t, most.Load(), int64(2))
	assert.Equal(t, int64(2), most.Load(), "the limit was never reached")
	assert.Equal(t, int64(40), d.fetched.Load())
	assert.Nil(t, d.bad.Load())
	assert.Zero(t, d.stopped.Load())
	require.NoError(t, e.Stop(ctx))
	assert.Equal(t, int64(1), d.stopped.Load())
}

func TestDequeuerAnswersAreClamped(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, free, want int }{{-3, 5, 0}, {0, 5, 0}, {3, 5, 3}, {9, 5, 5}} {
		assert.Equal(t, c.want, clampAvailable(c.n, c.free), "%d of %d", c.n, c.free)
	}
}
