// Package testproc holds what the test tooling's real servers share: free
// loopback ports, a start retried when a port was taken in between, and
// children that die with the test process (internal/testenv/kubetest starts
// etcd and kube-apiserver with it, internal/testenv/keycloaktest the Keycloak
// JVM).
package testproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// CacheDir is where the tooling keeps what it builds or downloads once:
// $env when set, else <user cache dir>/waldur-gitops/<name>.
func CacheDir(env, name string) (string, error) {
	if d := os.Getenv(env); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set $%s: %w", env, err)
	}
	return filepath.Join(base, "waldur-gitops", name), nil
}

// ErrAddrInUse is what a start returns (wrapped) when a child could not bind
// a port that was free a moment before.
var ErrAddrInUse = errors.New("address already in use")

// FreePorts returns n distinct loopback ports that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// Retry runs start up to attempts times while it fails with ErrAddrInUse: a
// port picked free can be taken by someone else before the child binds it.
func Retry[T any](ctx context.Context, attempts int, start func() (T, error)) (T, error) {
	var v T
	var err error
	for range attempts {
		if v, err = start(); err == nil || ctx.Err() != nil || !errors.Is(err, ErrAddrInUse) {
			return v, err
		}
	}
	return v, err
}

// Executable reports whether path is a regular file someone may execute: a
// program already built or unpacked into a cache.
func Executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// TailBuffer keeps the last 8 KiB written to it: a long-running command's
// output, whose end goes into the error when it fails.
type TailBuffer struct{ b []byte }

// Write appends p, dropping what lies more than 8 KiB back.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 8<<10 {
		t.b = t.b[len(t.b)-8<<10:]
	}
	return len(p), nil
}

// String returns what is kept.
func (t *TailBuffer) String() string { return string(t.b) }
