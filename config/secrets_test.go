package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
)

// The credentials written in the site-agent testdata files. Each is distinctive so
// that finding it in any output means it leaked.
var testdataSecrets = []string{
	"k8sut-api-token-7f3a9c", "k8sut-kc-password-41d8", // site-agent-k8s-ut.yaml
	"rancher-api-token-c2e810", "rancher-secret-key-55be", "rancher-kc-password-9e01", // site-agent-rancher.yaml
	"okd-api-token-60b4ad", "sha256~okd-cluster-token-d00d", // site-agent-okd.yaml
}

func assertNoSecret(t *testing.T, what, out string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%s contains the secret %q:\n%s", what, s, out)
		}
	}
}

// No way of printing, logging or serialising a loaded config shows a credential.
func TestSecretsNeverPrint(t *testing.T) {
	for _, file := range []string{"site-agent-k8s-ut.yaml", "site-agent-rancher.yaml", "site-agent-okd.yaml"} {
		t.Run(file, func(t *testing.T) {
			l := mustLoad(t, filepath.Join("testdata", file))
			o := l.Offerings[0]
			kc := o.Settings.Common().Keycloak
			// Guard against a vacuous pass: the token really was loaded.
			if tok, err := o.Token(); err != nil || !strings.Contains(strings.Join(testdataSecrets, " "), tok.Reveal()) {
				t.Fatalf("Token() = %v, %v", tok, err)
			}

			values := map[string]any{
				"loaded": l, "config": *l.Config, "offering": o, "offering pointer": &o,
				"settings": o.Settings, "common settings": *o.Settings.Common(),
				"keycloak settings": kc, "token": o.WaldurAPIToken, "keycloak password": kc.Password,
			}
			switch {
			case o.Settings.K8sUT != nil:
				values["profile settings"] = *o.Settings.K8sUT
			case o.Settings.Rancher != nil:
				values["profile settings"] = *o.Settings.Rancher
			case o.Settings.OKD != nil:
				values["profile settings"] = *o.Settings.OKD
			}
			for name, v := range values {
				for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
					assertNoSecret(t, fmt.Sprintf("%s printed with %s", name, verb), fmt.Sprintf(verb, v), testdataSecrets...)
				}
				assertNoSecret(t, name+" with fmt.Sprint", fmt.Sprint(v), testdataSecrets...)
				assertNoSecret(t, name+" with fmt.Sprintln", fmt.Sprintln(v), testdataSecrets...)
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatalf("json.Marshal(%s): %v", name, err)
				}
				assertNoSecret(t, name+" as JSON", string(b), testdataSecrets...)
			}

			for _, handler := range []string{"text", "json"} {
				var buf bytes.Buffer
				var h slog.Handler = slog.NewTextHandler(&buf, nil)
				if handler == "json" {
					h = slog.NewJSONHandler(&buf, nil)
				}
				log := slog.New(h)
				log.Info("loaded", "config", l.Config, "offering", o, "token", o.WaldurAPIToken, "keycloak", kc,
					slog.Any("password", kc.Password), slog.Group("settings", "common", o.Settings.Common()))
				log.Info("token", "value", o.WaldurAPIToken)
				assertNoSecret(t, "slog "+handler+" output", buf.String(), testdataSecrets...)
				if !strings.Contains(buf.String(), "[redacted]") {
					t.Errorf("slog %s output does not show the secrets as [redacted]:\n%s", handler, buf.String())
				}
			}
		})
	}
}

func TestSecretFormatting(t *testing.T) {
	s := config.Secret("hunter2-secret-9")
	tests := []struct{ name, got, want string }{
		{"String", s.String(), "[redacted]"},
		{"%v", fmt.Sprintf("%v", s), "[redacted]"},
		{"%#v", fmt.Sprintf("%#v", s), `config.Secret("[redacted]")`},
		{"empty", fmt.Sprint(config.Secret("")), ""},
		{"Reveal", s.Reveal(), "hunter2-secret-9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { equal(t, tc.name, tc.got, tc.want) })
	}
	b, _ := json.Marshal(map[string]config.Secret{"token": s})
	equal(t, "JSON", string(b), `{"token":"[redacted]"}`)
}

// A credential under the wrong type, or in a file that is not a config, is not
// quoted in the validation error.
func TestValidationErrorHidesSecrets(t *testing.T) {
	tests := []struct {
		name, text string
		secret     string
		path       string
	}{
		{"token as a list", oneOffering("okd", "", "    waldur_api_token: [list-token-5b2]\n"), "list-token-5b2", "offerings[0].waldur_api_token"},
		{"token as a mapping", oneOffering("okd", "", "    waldur_api_token: {map-token-77e: x}\n"), "map-token-77e", "offerings[0].waldur_api_token"},
		{"token as a boolean", oneOffering("okd", "", "    waldur_api_token: TRUE\n"), "TRUE", "offerings[0].waldur_api_token"},
		{"keycloak password as a list", oneOffering("okd", "      keycloak:\n        keycloak_password: [kc-list-pw-13]\n", ""), "kc-list-pw-13", "offerings[0].backend_settings.keycloak.keycloak_password"},
		{"keycloak password as a boolean", oneOffering("okd", "      keycloak:\n        keycloak_password: False\n", ""), "False", "offerings[0].backend_settings.keycloak.keycloak_password"},
		// Keys the tool ignores are never decoded, whatever their type.
		{"ignored rancher password beside a problem", oneOffering("rancher", "      password: {ignored-pw-6d0: 1}\n", ""), "ignored-pw-6d0", "offerings[0].backend_settings.cluster_id"},
		{"ignored oidc secret beside a problem", oneOffering("okd", "", "    oidc_client_secret: oidc-secret-a11\n    verify_ssl: 'x'\n"), "oidc-secret-a11", "offerings[0].verify_ssl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ve, _ := mustFail(t, tc.text)
			findProblem(t, ve.Problems, tc.path)
			assertNoSecret(t, "the validation error", ve.Error(), tc.secret)
		})
	}
}
