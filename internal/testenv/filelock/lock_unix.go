//go:build unix

// Package filelock serialises work between processes with a lock file: the
// test tooling builds the control plane and unpacks Keycloak once per cache
// while several test binaries ask for them at once.
package filelock

import (
	"os"
	"syscall"
)

// Lock takes an exclusive lock on path, waiting for it, and returns the unlock.
func Lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
