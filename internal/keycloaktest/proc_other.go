//go:build !linux

package keycloaktest

import "os/exec"

// detach does nothing off Linux: Stop is the only way the JVM ends.
func detach(*exec.Cmd) {}
