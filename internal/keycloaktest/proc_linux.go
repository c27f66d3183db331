//go:build linux

package keycloaktest

import (
	"os/exec"
	"syscall"
)

// detach makes the kernel kill the JVM when the test process dies without
// stopping it (a panic, a timeout, kill -9), so that no Keycloak outlives the
// tests. The JVM is started directly, not under kc.sh, for this to reach it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
