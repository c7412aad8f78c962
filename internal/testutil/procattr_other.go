//go:build !linux

package testutil

import "syscall"

// diesWithParent has no equivalent outside Linux: Main stops the server by pid.
func diesWithParent() *syscall.SysProcAttr { return nil }
