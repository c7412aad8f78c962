package testutil

import (
	"testing"
	"time"
)

// WaitTimeout bounds every wait in the tests. It is generous on purpose: tests wait for a
// condition, never for an amount of time, so a slow shared machine makes them slower, not red.
const WaitTimeout = 20 * time.Second

// WaitFor polls cond until it holds, failing the test with msg if it does not within WaitTimeout.
func WaitFor(t testing.TB, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", WaitTimeout, msg)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
