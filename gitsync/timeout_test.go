package gitsync

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/unreachabletest"
	"github.com/waldur/waldur-gitops/internal/unreachable"
)

// TestFetchTimeout: a Git server that accepts the connection and never
// answers costs git.timeout, with an error that names it, and the host is
// not tried again in the run.
func TestFetchTimeout(t *testing.T) {
	srv := unreachabletest.NewSilent(t)
	r := open(t, srv.URL()+"/tenants.git", "waldur", nil, func(o *Options) { o.Timeout = 300 * time.Millisecond })
	ctx := unreachable.Track(context.Background())
	start := time.Now()
	err := r.Fetch(ctx)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Op != "fetch" || !strings.Contains(err.Error(), "no answer within 300ms (git.timeout)") {
		t.Fatalf("Fetch = %v, want a git.timeout error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the fetch took %s", d)
	}
	if err := r.Fetch(ctx); !errors.As(err, new(*unreachable.Error)) {
		t.Errorf("the second fetch of the run: %v, want it refused as unreachable", err)
	}
}

// TestPushTimeout: a server that serves the fetch but hangs on the push
// costs git.timeout for the push, and the push's error says so.
func TestPushTimeout(t *testing.T) {
	srv, repoURL, _ := httpRepo(t)
	target, _ := url.Parse(srv.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path+"?"+req.URL.RawQuery, "git-receive-pack") {
			<-req.Context().Done() // never answers the push
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(hang.Close)
	// The fetch before the push must fit in the timeout on a loaded machine
	// too: the push alone is to run out of it.
	r := open(t, strings.Replace(repoURL, srv.URL(), hang.URL, 1), "waldur", auth(srv), func(o *Options) { o.Timeout = 3 * time.Second })
	ctx := context.Background()
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, tenantTree("v1", "o/cluster/t1"), "first\n"); err != nil {
		t.Fatal(err)
	}
	err := r.Push(ctx)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Op != "push" {
		t.Fatalf("Push = %v, want a git.timeout error", err)
	}
	if strings.Contains(err.Error(), srv.Password()) {
		t.Errorf("the error carries the password: %v", err)
	}
}
