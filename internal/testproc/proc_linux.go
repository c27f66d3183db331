//go:build linux

package testproc

import (
	"os/exec"
	"syscall"
)

// Detach makes the kernel kill the child when the test process dies without
// stopping it (a panic, a timeout, kill -9), so that no server outlives the
// tests.
func Detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
