package testproc

import (
	"sync"
	"testing"
)

// Shared is one server of type T for the tests of a package: the first test
// that needs it starts it, and the package's TestMain calls Stop when the
// tests are done. A run that selects no such test starts nothing.
type Shared[T any] struct {
	once sync.Once
	v    T
	stop func()
	err  error
}

// Need returns the server, starting it with start on first use; start
// returns how to stop it (nil: nothing to stop), also alongside an error for
// what it left behind. With -short the test is skipped; a server that cannot
// be had fails this test and every later one with the same error, without a
// second try. what names the server in those messages.
func (sh *Shared[T]) Need(t testing.TB, what string, start func() (T, func(), error)) T {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs a real %s; skipped with -short", what)
	}
	sh.once.Do(func() { sh.v, sh.stop, sh.err = start() })
	if sh.err != nil {
		t.Fatalf("this test needs a real %s (go test -short skips it): %v", what, sh.err)
	}
	return sh.v
}

// Stop stops the server, if one was started.
func (sh *Shared[T]) Stop() {
	if sh.stop != nil {
		sh.stop()
	}
}
