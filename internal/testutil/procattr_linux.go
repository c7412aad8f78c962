package testutil

import "syscall"

// diesWithParent makes the kernel send SIGKILL to a child when the thread that started it
// exits, so a test binary that dies abruptly leaves no redis-server behind. (Go does not end
// its threads while the process runs, except one that a goroutine locked and left locked.)
func diesWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
