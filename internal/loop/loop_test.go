package loop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A loop runs until its context ends, and Wait returns only after it has returned.
func TestWaitWaitsForEveryLoopToReturn(t *testing.T) {
	var g Group
	ctx, cancel := context.WithCancel(context.Background())
	var ended atomic.Int32
	for _, name := range []string{"acker", "stats"} {
		g.Go(ctx, name, func(ctx context.Context) {
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond) // a loop that finishes its last step after the end
			ended.Add(1)
		})
	}
	assert.ElementsMatch(t, []string{"acker", "stats"}, g.Running())
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while the loops run")
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	<-waited
	assert.EqualValues(t, 2, ended.Load(), "both loops returned before Wait did")
	assert.Empty(t, g.Running(), "a loop that returned is not running")
}

// Wait on a group that started nothing returns at once.
func TestWaitWithoutLoopsReturns(t *testing.T) {
	var g Group
	g.Wait()
	assert.Empty(t, g.Running())
}

// A loop starts once: a second start of the same name panics before running anything.
func TestALoopStartsOnce(t *testing.T) {
	var g Group
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int32
	run := func(ctx context.Context) { runs.Add(1); <-ctx.Done() }
	g.Go(ctx, "manager", run)
	assert.PanicsWithValue(t, `loop: "manager" started twice`, func() { g.Go(ctx, "manager", run) })
	cancel()
	g.Wait()
	assert.EqualValues(t, 1, runs.Load())
}

// Sleep waits its time, or less when its context ends first, and says which.
func TestSleepEndsEarlyWhenItsContextEnds(t *testing.T) {
	assert.True(t, Sleep(context.Background(), time.Millisecond), "slept its time")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	began := time.Now()
	assert.False(t, Sleep(ctx, time.Hour), "cut short")
	assert.Less(t, time.Since(began), time.Minute)
}
