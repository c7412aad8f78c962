// Package reliability_test holds exq's failure tests: processes killed with SIGKILL, Redis
// restarted, cut off, slowed down and failed over, poison input, leaks. Each test is bounded
// in time and jobs, and runs against private redis-server processes and a loopback proxy.
package reliability_test

import (
	"os"
	"testing"

	"github.com/exqgo/exq/internal/testutil"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		runChild() // this process is a worker node that a test kills and restarts
		return
	}
	testutil.MainLeak(m)
}
