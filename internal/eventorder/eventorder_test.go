package eventorder

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// waits runs o.Wait(jid, maxWait) on a goroutine and reports when it returns.
func waits(o *Order, jid string, maxWait time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		o.Wait(jid, maxWait)
		close(done)
	}()
	return done
}

func returned(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestWaitReturnsAtOnceForAJIDNobodyHolds(t *testing.T) {
	t.Parallel()
	var o Order
	<-waits(&o, "j", time.Hour)
	var none *Order
	none.Hold("j")()
	<-waits(none, "j", time.Hour)
	o.Hold()() // no jids: nothing held
	<-waits(&o, "j", time.Hour)
}

func TestWaitReturnsWhenTheLastWriteOfTheJIDIsReleased(t *testing.T) {
	t.Parallel()
	var o Order
	r1 := o.Hold("a", "b")
	r2 := o.Hold("a")
	waitA, waitB := waits(&o, "a", time.Hour), waits(&o, "b", time.Hour)

	r1()
	<-waitB
	assert.False(t, returned(waitA), "a is still held by the second write")
	r1() // a release runs once
	assert.False(t, returned(waitA))
	r2()
	<-waitA

	o.mu.Lock()
	assert.Empty(t, o.held, "nothing left behind")
	o.mu.Unlock()
}

func TestWaitGivesUpAfterMaxWait(t *testing.T) {
	t.Parallel()
	var o Order
	release := o.Hold("stuck")
	defer release()
	<-waits(&o, "stuck", time.Millisecond) // returns although the write hangs
}
