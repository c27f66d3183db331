// Package registrytest serves go-containerregistry's in-process OCI
// distribution registry to tests, the registry the Flux OCI layout pushes
// its shard artifacts to.
package registrytest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Start serves a registry on loopback until the test ends and returns its
// host, "127.0.0.1:<port>" (plain HTTP). wrap, when set, wraps its handler:
// to ask for credentials (BasicAuth), refuse writes, or watch the requests.
func Start(t testing.TB, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// BasicAuth makes a registry answer every request without the user and
// password as registries do: 401 with a Basic challenge and an UNAUTHORIZED
// error.
func BasicAuth(user, password string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
