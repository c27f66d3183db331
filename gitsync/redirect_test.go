package gitsync

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
)

// TestRedirectToAnotherHostIsRefused: a git.url that answers with a redirect
// to another host, from its first request or only at the push, gets neither
// the password nor the commit there: the sync fails naming git.url and both
// URLs, and the configured branch does not move.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	for _, code := range redirecttest.Codes {
		for _, at := range []string{"fetch", "push"} {
			t.Run(http.StatusText(code)+"/"+at, func(t *testing.T) {
				srv, _, dir := httpRepo(t)
				seed := gittest.Commit(t, dir, "main", map[string]string{"README.md": "hello\n"}, "seed")
				rec := redirecttest.NewRecorder(t)
				front := redirectingFront(t, srv.URL(), rec.URL, code, at == "fetch")
				r := open(t, front.URL+"/tenants.git", "waldur", auth(srv))

				_, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), "add a\n"), 1)
				redirecttest.AssertRefused(t, err, "git.url", front.URL, rec.URL, srv.Password())
				rec.AssertUntouched(t)
				if got := gittest.Head(t, dir, "main"); got != seed {
					t.Errorf("the branch moved to %s", got)
				}
			})
		}
	}
}

// redirectingFront serves the git server at backend, except that it answers
// every request (all) or those of the push (receive-pack) with a redirect to
// target.
func redirectingFront(t *testing.T, backend, target string, code int, all bool) *httptest.Server {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if all || strings.Contains(r.URL.RequestURI(), "receive-pack") {
			w.Header().Set("Location", target+r.URL.RequestURI())
			w.WriteHeader(code)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front
}

// TestSameHostRedirectIsFollowed: smart HTTP servers redirect within their
// host (a renamed repository); the fetch and the push follow.
func TestSameHostRedirectIsFollowed(t *testing.T) {
	srv, _, dir := httpRepo(t)
	gittest.Commit(t, dir, "main", map[string]string{"README.md": "hello\n"}, "seed")
	u, _ := url.Parse(srv.URL())
	proxy := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/old.git/"); ok {
			http.Redirect(w, r, "/tenants.git/"+rest+"?"+r.URL.RawQuery, http.StatusMovedPermanently)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	r := open(t, front.URL+"/old.git", "waldur", auth(srv))
	res, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), "add a\n"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := gittest.Head(t, dir, "main"); got != res.Commit {
		t.Errorf("branch at %s, want the pushed %s", got, res.Commit)
	}
}
