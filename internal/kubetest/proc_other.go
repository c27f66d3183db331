//go:build !linux

package kubetest

import "os/exec"

// detach does nothing off Linux: Stop is the only way the children end.
func detach(*exec.Cmd) {}
