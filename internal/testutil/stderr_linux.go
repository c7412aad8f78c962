package testutil

import (
	"os"
	"syscall"
)

// The pidfd system calls (the same numbers on every Linux architecture).
const (
	sysPidfdOpen  = 434
	sysPidfdGetfd = 438
)

// stderrShared duplicates process pid's file descriptor 2 into this process (pidfd_getfd,
// Linux 5.6): the same open file description, offset included. nil where the kernel is older
// or refuses (ptrace rules).
func stderrShared(pid int) *os.File {
	pidfd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return nil
	}
	defer syscall.Close(int(pidfd))
	fd, _, errno := syscall.Syscall(sysPidfdGetfd, pidfd, 2, 0)
	if errno != 0 {
		return nil
	}
	syscall.CloseOnExec(int(fd))
	return os.NewFile(fd, "stderr of the go command")
}
