//go:build linux

package kubetest

import (
	"os/exec"
	"syscall"
)

// detach makes the kernel kill the child when the test process dies without
// stopping the cluster (a panic, a timeout, kill -9), so that no etcd or
// kube-apiserver outlives the tests.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
