//go:build !linux

package testproc

import (
	"os/exec"
	"syscall"
)

// Detach does nothing off Linux: stopping the server is the only way its
// children end.
func Detach(*exec.Cmd) {}

// DetachGroup puts the child in a process group of its own; off Linux
// nothing stops it when the test process dies.
func DetachGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
