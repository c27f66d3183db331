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

// DetachGroup puts the child in a process group of its own, so that a signal
// to the group reaches what it starts too, and sends it SIGTERM when the test
// process dies, so that it can stop what it started.
func DetachGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
