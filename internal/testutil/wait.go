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

// Within polls cond until it holds or WaitTimeout passes, and reports whether it held. Use it
// where a test has more to say on a timeout than WaitFor's message (where the missing jobs are),
// and always check its result.
func Within(cond func() bool) bool {
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}
