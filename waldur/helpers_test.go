package waldur_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// Fixtures in testdata/ are the invented example payloads of the shared Waldur
// API notes (real field names, made-up values).

const (
	offering = waldur.UUID("7d1f3b2c9a4e4c0f8b6a5e2d1c0b9a87")
	projectA = waldur.UUID("a0b1c2d3e4f5461788990a1b2c3d4e5f")
)

// fast makes retries wait about a millisecond.
func fast(o *waldur.ClientOptions) {
	o.RetryWaitMin, o.RetryWaitMax = time.Millisecond, 2*time.Millisecond
}

// newClient builds a client for baseURL with fast retries and the given changes.
func newClient(t testing.TB, baseURL, token string, mods ...func(*waldur.ClientOptions)) *waldur.Client {
	t.Helper()
	opts := waldur.DefaultClientOptions()
	opts.BaseURL, opts.Token = baseURL, token
	fast(&opts)
	for _, m := range mods {
		m(&opts)
	}
	c, err := waldur.NewClient(opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// clientFor builds a client for a fake server.
func clientFor(t testing.TB, srv *waldurtest.Server, mods ...func(*waldur.ClientOptions)) *waldur.Client {
	t.Helper()
	return newClient(t, srv.URL(), srv.Token(), mods...)
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pageSize(n int) func(*waldur.ClientOptions) {
	return func(o *waldur.ClientOptions) { o.PageSize = n }
}
