//go:build !linux

package testproc

import "os/exec"

// Detach does nothing off Linux: stopping the server is the only way its
// children end.
func Detach(*exec.Cmd) {}
