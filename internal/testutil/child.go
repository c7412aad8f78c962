package testutil

import (
	"os"
	"os/exec"
)

// ChildNode is the command that runs this test binary again as a child process (a node the
// test kills, with -test.run=^$ so that it runs no test, its TestMain dispatching on an env
// variable). On Linux the child gets SIGKILL when the test binary dies, so a test that times
// out or panics leaves no node running behind it.
func ChildNode() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.SysProcAttr = diesWithParent()
	return cmd
}
