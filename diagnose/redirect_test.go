package diagnose_test

import (
	"net/http"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
)

// TestKeycloakRefusesRedirects: diagnose's Keycloak login, redirected to
// another host, sends the password nowhere and names keycloak_url and both
// URLs.
func TestKeycloakRefusesRedirects(t *testing.T) {
	const password = "kc-password-s3cret"
	for _, code := range redirecttest.Codes {
		t.Run(http.StatusText(code), func(t *testing.T) {
			rec := redirecttest.NewRecorder(t)
			from := redirecttest.Redirect(t, code, rec.URL)
			c, err := diagnose.NewKeycloak(config.KeycloakSettings{URL: from.URL, Realm: "hpc", UserRealm: "master",
				ClientID: "admin-cli", Username: "admin", Password: config.Secret(password)}, 0)
			if err != nil {
				t.Fatal(err)
			}
			redirecttest.AssertNamed(t, c.Login(t.Context()), "keycloak_url", from.URL, rec.URL, password)
			rec.AssertUntouched(t)
		})
	}
}
