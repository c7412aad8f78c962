package testutil

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parallelChildEnv makes TestParallelIsTheDefaultUnlessGiven's child print -test.parallel.
const parallelChildEnv = "EXQ_TESTUTIL_PARALLEL_CHILD"

// Main and MainLeak run Parallel tests at once by default, or what the package's TestMain set
// with SetParallel, and a -parallel on the command line wins. Each case runs this test binary again, which goes through raiseParallel as Main does.
func TestParallelIsTheDefaultUnlessGiven(t *testing.T) {
	if v := os.Getenv(parallelChildEnv); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			SetParallel(n)
		}
		raiseParallel()
		fmt.Printf("parallel=%s\n", flag.Lookup("test.parallel").Value)
		return
	}
	for _, tc := range []struct {
		name string
		set  string // the SetParallel of the child's TestMain; "-" for none
		args []string
		want string
	}{
		{"not given", "-", nil, fmt.Sprint(Parallel)},
		{"given", "-", []string{"-test.parallel=3"}, "3"},
		{"set by the package", "16", nil, "16"},
		{"set by the package, given", "16", []string{"-test.parallel=3"}, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-test.run=^TestParallelIsTheDefaultUnlessGiven$"}, tc.args...)
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), parallelChildEnv+"="+tc.set)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.True(t, strings.Contains(string(out), "parallel="+tc.want+"\n"), "%s", out)
		})
	}
}
