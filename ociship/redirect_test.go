package ociship_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
	"github.com/waldur/waldur-gitops/internal/testenv/registrytest"
	"github.com/waldur/waldur-gitops/ociship"
)

// TestRedirectToAnotherHostIsRefused: a registry that redirects to another
// host, from its first answer or only when the artifact is uploaded, gets
// neither the credentials nor the artifact there; Publish and Check fail
// naming git.flux_oci_repository and both URLs.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	const user, pw = "bot", "s3cret-registry-pass"
	for _, code := range redirecttest.Codes {
		for _, at := range []string{"everything", "uploads"} {
			t.Run(http.StatusText(code)+"/"+at, func(t *testing.T) {
				rec := redirecttest.NewRecorder(t)
				backend := registrytest.Start(t, registrytest.BasicAuth(user, pw))
				front := registryFront(t, backend, rec.URL, code, at == "everything")
				reg := ociship.Registry{Repository: strings.TrimPrefix(front.URL, "http://") + "/w", Insecure: true, Username: user, Password: pw}
				r := reg.Publish(context.Background(), site(), shards[:1], "c1", "")[0]
				if r.Pushed || r.Digest != "" {
					t.Errorf("published: %+v", r)
				}
				redirecttest.AssertRefused(t, r.Err, ociship.RepositoryKey, front.URL, rec.URL, pw)
				_, err := reg.Check(context.Background(), shards[0].Name)
				redirecttest.AssertRefused(t, err, ociship.RepositoryKey, front.URL, rec.URL, pw)
				rec.AssertUntouched(t)
			})
		}
	}
}

// registryFront serves the registry at host, except that it answers every
// request (all) or every write with a redirect to target.
func registryFront(t *testing.T, host, target string, code int, all bool) *httptest.Server {
	t.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if all || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			w.Header().Set("Location", target+r.URL.RequestURI())
			w.WriteHeader(code)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front
}
