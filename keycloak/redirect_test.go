package keycloak

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
)

// TestRedirectToAnotherHostIsRefused: a keycloak_url that redirects to
// another host, at the login (which carries the password) or at an admin
// call (the token), sends nothing there, is not retried, and says so naming
// keycloak_url and both URLs.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	const password, token = "kc-password-s3cret", "kc-token-s3cret"
	for _, code := range redirecttest.Codes {
		for _, at := range []string{"login", "admin call"} {
			t.Run(http.StatusText(code)+"/"+at, func(t *testing.T) {
				rec := redirecttest.NewRecorder(t)
				var requests atomic.Int32
				front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					requests.Add(1)
					if at != "login" && strings.HasSuffix(r.URL.Path, "/openid-connect/token") {
						w.Header().Set("Content-Type", "application/json")
						w.Write([]byte(`{"access_token":"` + token + `","expires_in":300,"token_type":"Bearer"}`))
						return
					}
					w.Header().Set("Location", rec.URL+r.URL.RequestURI())
					w.WriteHeader(code)
				}))
				defer front.Close()
				retries := 3
				c, err := NewClient(Target{URL: front.URL, Realm: "tenants", Settings: config.KeycloakSettings{
					URL: front.URL, Realm: "tenants", UserRealm: "master", ClientID: "admin-cli",
					Username: "bot", Password: config.Secret(password), MaxRetries: &retries,
				}}, ClientOptions{Backoff: time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.topGroups(t.Context())
				redirecttest.AssertRefused(t, err, "keycloak_url", front.URL, rec.URL, password, token)
				rec.AssertUntouched(t)
				if want := map[string]int32{"login": 1, "admin call": 2}[at]; requests.Load() != want {
					t.Errorf("keycloak_url got %d requests, want %d (no retry)", requests.Load(), want)
				}
			})
		}
	}
}
