package exq

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: Stop must end everything
// it started.
func TestMain(m *testing.M) {
	if os.Getenv(childNodeEnv) != "" {
		runChildNode() // this process is a node that a test kills
		return
	}
	goleak.VerifyTestMain(m)
}
