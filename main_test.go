package exq

import (
	"os"
	"testing"

	"github.com/exqgo/exq/internal/testutil"
)

// TestMain fails the package if any test leaves a goroutine behind: Stop must end everything
// it started. testutil.MainLeak also stops the private redis-server the tests may have started
// and reports any test skipped for a missing Redis.
func TestMain(m *testing.M) {
	if os.Getenv(childNodeEnv) != "" {
		runChildNode() // this process is a node that a test kills
		return
	}
	if os.Getenv(runNodeEnv) != "" {
		runRunNode() // this process is a node a test kills or pauses
		return
	}
	if os.Getenv(flowNodeEnv) != "" {
		runFlowNode() // this process is a node of the batch and workflow fault test
		return
	}
	if os.Getenv(stepNodeEnv) != "" {
		runStepNode() // this process is a node killed inside a job of durable steps
		return
	}
	if os.Getenv(iterNodeEnv) != "" {
		runIterNode() // this process is one node of an iteration's fleet (iteration_fleet_test.go)
		return
	}
	if os.Getenv(fleetNodeEnv) != "" {
		runFleetNode() // this process is one node of a fleet a test starts
		return
	}
	// Many of this package's parallel tests wait for seconds (a fleet's periodic ticks, an
	// idle node's caps, an out-of-memory server): with testutil.Parallel (8) slots they held
	// most of them while the short tests queued and the machine idled (docs/development.md).
	testutil.SetParallel(rootParallel)
	testutil.MainLeak(m)
}

// rootParallel is how many of this package's parallel tests run at once.
const rootParallel = 16
