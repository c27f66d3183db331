package config_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// TestURLsRefuseUserInfo: every URL key refuses credentials embedded in the
// URL, naming the key and never showing the password.
func TestURLsRefuseUserInfo(t *testing.T) {
	const pw = "url-pa55word-8c1e"
	waldurURL := func(u string) string {
		return strings.Replace(oneOffering("namespace", "", ""), "https://waldur.example.org/api/", u, 1)
	}
	kc := func(u string) string {
		return oneOffering("okd", "      keycloak_enabled: true\n      keycloak: {keycloak_url: '"+u+"'}\n", "")
	}
	tests := []struct {
		name, text, path, message string
	}{
		{"waldur_api_url with user and password", waldurURL("https://ana:" + pw + "@waldur.example.org/api/"), "offerings[0].waldur_api_url", "must not contain user information"},
		{"waldur_api_url with a token as user", waldurURL("https://" + pw + "@waldur.example.org/api/"), "offerings[0].waldur_api_url", "waldur_api_token"},
		{"waldur_api_url not http", waldurURL("ftp://ana:" + pw + "@waldur.example.org/"), "offerings[0].waldur_api_url", "must be an http or https URL"},
		{"keycloak_url with a password", kc("https://admin:" + pw + "@sso.example.org/"), "offerings[0].backend_settings.keycloak.keycloak_url", "must not contain user information"},
		{"keycloak_url not a URL", kc("sso.example.org"), "offerings[0].backend_settings.keycloak.keycloak_url", "must be an http or https URL"},
		{"pushgateway_url with a password", "metrics: {pushgateway_url: 'http://p:" + pw + "@pg:9091'}\n" + oneOffering("namespace", "", ""), "metrics.pushgateway_url", "must not contain user information"},
		{"git https URL with a token as user", "git: {url: 'https://" + pw + "@git.example.org/t.git'}\n" + oneOffering("namespace", "", ""), "git.url", "must not contain user information"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ve, problems := mustFail(t, tt.text)
			p := findProblem(t, problems, tt.path)
			if !strings.Contains(p.Message, tt.message) {
				t.Errorf("%s: %q, want %q", tt.path, p.Message, tt.message)
			}
			if strings.Contains(ve.Error(), pw) {
				t.Errorf("the error shows the password: %v", ve)
			}
		})
	}
	// ssh URLs carry the user name by design.
	mustParse(t, "git: {url: 'ssh://git@h/t.git', ssh_key_file: id, known_hosts_file: kh}\n"+oneOffering("namespace", "", ""))
}

// TestLoadRegistersSecrets: every credential a config names, inline, in a
// file or in the environment, is masked by the process-wide redactor after
// Load, in its raw, URL-encoded and Basic-auth forms.
func TestLoadRegistersSecrets(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"waldur.token": "waldur-file-token-0b7c", "kc.pw": "kc-file-password-5d21",
		"git.token": "git-file-token-a9e3", "pg.pw": "pg-file-password-77f0",
		"oci.pw": "oci-file-password-61c2",
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CS_ENV", "client-env-secret-3e88")
	text := `git: {url: 'https://git.example.org/t.git', username: bot, token_file: git.token,
  flux_shards: 2, flux_oci_repository: registry.example.org/site/tenants, flux_oci_username: pusher, flux_oci_password_file: oci.pw}
metrics: {pushgateway_url: 'http://pg:9091', username: pusher, password_file: pg.pw}
offerings:
  - name: a
    waldur_api_url: https://waldur.example.org/api/
    waldur_offering_uuid: ` + validUUID + `
    waldur_api_token_file: waldur.token
    backend_type: okd
    backend_settings:
      keycloak_enabled: true
      keycloak: {keycloak_url: 'https://sso.example.org/', keycloak_username: admin, keycloak_password_file: kc.pw, client_secret_env: CS_ENV}
  - name: b
    waldur_api_url: https://waldur.example.org/api/
    waldur_offering_uuid: ` + validUUID + `
    waldur_api_token: inline-waldur-token-4410
    backend_type: namespace
`
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"inline-waldur-token-4410", "client-env-secret-3e88"}
	for _, v := range files {
		secrets = append(secrets, v)
	}
	for _, s := range secrets {
		for _, form := range []string{s, "x=" + s + "&y", base64.StdEncoding.EncodeToString([]byte("someone:" + s))} {
			if got := redact.String("echo " + form); strings.Contains(got, s) || got == "echo "+form {
				t.Errorf("%q is not masked after Load: %q", form, got)
			}
		}
	}
	basic := base64.StdEncoding.EncodeToString([]byte("bot:git-file-token-a9e3"))
	if got := redact.String("Authorization: Basic " + basic); got != "Authorization: Basic "+redact.Mask {
		t.Errorf("the Git Basic header is not masked whole: %q", got)
	}
	oci := base64.StdEncoding.EncodeToString([]byte("pusher:oci-file-password-61c2"))
	if got := redact.String("Authorization: Basic " + oci); got != "Authorization: Basic "+redact.Mask {
		t.Errorf("the registry's Basic header is not masked whole: %q", got)
	}
}
