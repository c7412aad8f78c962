package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/exqgo/exq/internal/wire"
)

// The scheduler wakes for an announcement only when the job is due before it looks next, or
// while it works; any payload it cannot read wakes it.
func TestSchedulerWakesOnlyForEarlierJobs(t *testing.T) {
	s := &Scheduler{wake: make(chan struct{}, 1)}
	woke := func() bool {
		select {
		case <-s.wake:
			return true
		default:
			return false
		}
	}
	now := time.Now()
	s.Due(DueWakePrefix + wire.FormatTime(now.Add(time.Hour)))
	assert.True(t, woke(), "while it works, every announcement counts")
	s.armed.Store(now.Add(time.Second).UnixMicro())
	s.Due(DueWakePrefix + wire.FormatTime(now.Add(2*time.Second)))
	assert.False(t, woke(), "due after it looks anyway")
	s.Due(DueWakePrefix + wire.FormatTime(now.Add(500*time.Millisecond)))
	assert.True(t, woke(), "due before it looks")
	s.Due(DueWakePrefix + "garbage")
	assert.True(t, woke(), "unreadable")
}
