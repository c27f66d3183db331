package forge_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/forge"
	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
)

// TestRedirectToAnotherHostIsRefused: an API root that redirects to another
// host gets no token there (GitLab's PRIVATE-TOKEN is a header net/http keeps
// across hosts), and the error names review.forge.api_url and both URLs.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	const token = "forge-token-s3cret"
	for _, typ := range []string{config.ForgeGitHub, config.ForgeGitea, config.ForgeGitLab} {
		for _, code := range redirecttest.Codes {
			t.Run(typ+"/"+http.StatusText(code), func(t *testing.T) {
				rec := redirecttest.NewRecorder(t)
				from := redirecttest.Redirect(t, code, rec.URL)
				c := forge.New(config.Forge{Type: typ, APIURL: from.URL, Repository: "site/tenants"}, token, nil)
				_, _, err := c.Ensure(t.Context(), forge.Request{Branch: "review/x", Base: "main", Title: "t", Body: "b"})
				redirecttest.AssertRefused(t, err, forge.APIURLKey, from.URL, rec.URL, token)
				rec.AssertUntouched(t)
			})
		}
	}
}

// TestSameHostRedirectIsFollowed: GitHub answers a renamed repository with
// a redirect within api.github.com, which is followed.
func TestSameHostRedirectIsFollowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/repos/old/") {
			http.Redirect(w, r, "/repos/site/"+strings.TrimPrefix(r.URL.Path, "/repos/old/")+"?"+r.URL.RawQuery, http.StatusTemporaryRedirect)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok3n-value" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`[{"html_url": "https://example/pr/1", "head": {"ref": "review/x"}}]`))
	}))
	defer srv.Close()
	c := forge.New(config.Forge{Type: config.ForgeGitHub, APIURL: srv.URL, Repository: "old/tenants"}, "tok3n-value", nil)
	u, created, err := c.Ensure(t.Context(), forge.Request{Branch: "review/x", Base: "main"})
	if err != nil || created || u != "https://example/pr/1" {
		t.Errorf("Ensure = %q, %v, %v; want the open request found", u, created, err)
	}
}
