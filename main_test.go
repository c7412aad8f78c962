package exq

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: Stop must end everything
// it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
