package config_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
)

func TestKeycloakDefaults(t *testing.T) {
	l := mustParse(t, oneOffering("rancher", "      cluster_id: c-m-1\n      keycloak_enabled: true\n      keycloak: {keycloak_url: https://sso.example.org}\n", ""))
	c := l.Offerings[0].Settings.Common()
	k := c.Keycloak
	equal(t, "requests_per_second", *k.RequestsPerSecond, 0.0)
	equal(t, "concurrency", *k.Concurrency, 16)
	equal(t, "page_size", *k.PageSize, 100)
	equal(t, "verify_every", k.VerifyInterval(), 12*time.Hour)
	equal(t, "timeout_seconds", *k.TimeoutSeconds, 30)
	equal(t, "max_retries", *k.MaxRetries, 5)
	equal(t, "ssl verify", k.VerifiesSSL(), true)
	equal(t, "use user id", c.UseUserID(), true)
	equal(t, "target", c.KeycloakTarget(), "https://sso.example.org realm waldur")
	g := c.KeycloakGroups
	equal(t, "preset", g.Preset, "site-agent")
	equal(t, "namespace", g.Namespace, "ns_{slug}_{role}")
	equal(t, "parent", g.Parent, "c_{cluster_id_short}")
	equal(t, "child", g.Child, "project_{project_slug}_{role}")
	equal(t, "adopt", g.AdoptExisting, false)
}

func TestKeycloakGroupPresets(t *testing.T) {
	tests := []struct {
		name, settings       string
		parent, child, uuid  string
		namespacePatternWant string
	}{
		{"mastermind", "      keycloak_groups: {preset: mastermind, cluster_uuid: 0A1B2C3D-0000-4000-8000-00000000000F}\n",
			"c_{cluster_uuid}", "p_{project_uuid}_{role}", "0a1b2c3d00004000800000000000000f", "ns_{slug}_{role}"},
		{"mastermind with own child", "      keycloak_groups: {preset: mastermind, child: 'x_{project_slug}', cluster_uuid: 0a1b2c3d00004000800000000000000f}\n",
			"c_{cluster_uuid}", "x_{project_slug}", "0a1b2c3d00004000800000000000000f", "ns_{slug}_{role}"},
		{"own parent", "      keycloak_groups: {parent: 'cluster-{cluster_id}'}\n",
			"cluster-{cluster_id}", "project_{project_slug}_{role}", "", "ns_{slug}_{role}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := mustParse(t, oneOffering("rancher", "      cluster_id: c-m-1\n"+tc.settings, ""))
			g := l.Offerings[0].Settings.Common().KeycloakGroups
			equal(t, "parent", g.Parent, tc.parent)
			equal(t, "child", g.Child, tc.child)
			equal(t, "cluster_uuid", g.ClusterUUID, tc.uuid)
			equal(t, "namespace", g.Namespace, tc.namespacePatternWant)
		})
	}
}

func TestKeycloakValidation(t *testing.T) {
	const gp = "offerings[0].backend_settings.keycloak_groups."
	const kp = "offerings[0].backend_settings.keycloak."
	tests := []struct {
		name, backend, settings string
		path, message           string
	}{
		{"negative rate", "okd", "      keycloak: {requests_per_second: -1}\n", kp + "requests_per_second", "must not be negative"},
		{"rate as a string", "okd", "      keycloak: {requests_per_second: fast}\n", kp + "requests_per_second", "expected a number"},
		{"zero concurrency", "okd", "      keycloak: {concurrency: 0}\n", kp + "concurrency", "between 1 and 64"},
		{"huge page", "okd", "      keycloak: {page_size: 5000}\n", kp + "page_size", "between 1 and 1000"},
		{"verify_every not a duration", "okd", "      keycloak: {verify_every: often}\n", kp + "verify_every", "must be a duration such as 6h"},
		{"negative verify_every", "okd", "      keycloak: {verify_every: -1h}\n", kp + "verify_every", "must be a duration such as 6h"},
		{"zero timeout", "okd", "      keycloak: {timeout_seconds: 0}\n", kp + "timeout_seconds", "between 1 and 600"},
		{"negative retries", "okd", "      keycloak: {max_retries: -1}\n", kp + "max_retries", "between 0 and 20"},
		{"password without user", "okd", "      keycloak: {keycloak_password: pw-1}\n", kp + "keycloak_password", "set keycloak_username"},
		{"password file without user", "okd", "      keycloak: {keycloak_password_file: pw}\n", kp + "keycloak_password_file", "set keycloak_username"},
		{"password inline and from a file", "okd", "      keycloak: {keycloak_username: u, keycloak_password: pw-1, keycloak_password_file: pw}\n", kp + "keycloak_password_file", "set only one of keycloak_password, keycloak_password_file and keycloak_password_env (also set: keycloak_password)"},
		{"password env not a name", "okd", "      keycloak: {keycloak_username: u, keycloak_password_env: 'not a-var'}\n", kp + "keycloak_password_env", "\"not a-var\" is not an environment variable name"},
		{"client secret env not a name", "okd", "      keycloak: {client_secret_env: '1X'}\n", kp + "client_secret_env", "is not an environment variable name"},
		{"client secret file and env", "okd", "      keycloak: {client_secret_file: cs, client_secret_env: KC_SECRET}\n", kp + "client_secret_env", "set only one of client_secret, client_secret_file and client_secret_env (also set: client_secret_file)"},
		{"unknown preset", "namespace", "      keycloak_groups: {preset: agent}\n", gp + "preset", "must be one of site-agent, mastermind"},
		{"namespace pattern without role", "namespace", "      keycloak_groups: {namespace: 'ns_{slug}'}\n", gp + "namespace", "must contain {role}"},
		{"namespace pattern without tenant", "k8s-ut-namespace", "      keycloak_groups: {namespace: 'ns_{role}'}\n", gp + "namespace", "must contain one of {slug}"},
		{"unknown variable", "namespace", "      keycloak_groups: {namespace: 'ns_{name}_{role}'}\n", gp + "namespace", "refers to {name}"},
		{"slash", "namespace", "      keycloak_groups: {namespace: 'ns/{slug}_{role}'}\n", gp + "namespace", "must not contain '/'"},
		{"space", "namespace", "      keycloak_groups: {namespace: 'ns {slug}_{role}'}\n", gp + "namespace", "white space"},
		{"open brace", "namespace", "      keycloak_groups: {namespace: 'ns_{slug_{role}'}\n", gp + "namespace", "refers to {slug_{role}"},
		{"unclosed brace", "namespace", "      keycloak_groups: {namespace: 'ns_{role}_{slug'}\n", gp + "namespace", "without a '}'"},
		{"stray close brace", "namespace", "      keycloak_groups: {namespace: 'ns_}{slug}_{role}'}\n", gp + "namespace", "without a '{'"},
		{"rancher variable on namespace", "namespace", "      keycloak_groups: {namespace: 'ns_{cluster_id}_{slug}_{role}'}\n", gp + "namespace", "only known for backend type rancher"},
		{"parent on namespace", "namespace", "      keycloak_groups: {parent: 'c_x'}\n", gp + "parent", "has no effect for backend type namespace"},
		{"namespace on rancher", "rancher", "      cluster_id: c-1\n      keycloak_groups: {namespace: 'ns_{slug}_{role}'}\n", gp + "namespace", "has no effect for backend type rancher"},
		{"child on okd", "okd", "      keycloak_groups: {child: 'p_{project_slug}'}\n", gp + "child", "has no effect for backend type okd"},
		{"shared child", "rancher", "      cluster_id: c-1\n      keycloak_groups: {child: 'everyone_{role}'}\n", gp + "child", "unrelated tenants share the group"},
		{"empty parent", "rancher", "      cluster_id: c-1\n      keycloak_groups: {parent: 'c_{cluster_id}', child: '{}'}\n", gp + "child", "refers to {}"},
		{"mastermind without uuid", "rancher", "      cluster_id: c-1\n      keycloak_groups: {preset: mastermind}\n", gp + "cluster_uuid", "required: the parent pattern"},
		{"bad cluster uuid", "rancher", "      cluster_id: c-1\n      keycloak_groups: {cluster_uuid: nope}\n", gp + "cluster_uuid", "invalid uuid"},
		{"adopt as a string", "namespace", "      keycloak_groups: {adopt_existing: 'yes'}\n", gp + "adopt_existing", "expected true or false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := mustFail(t, oneOffering(tc.backend, tc.settings, ""))
			p := findProblem(t, problems, tc.path)
			if !strings.Contains(p.Message, tc.message) {
				t.Errorf("problem %q, want it to say %q", p.Message, tc.message)
			}
			if len(problems) != 1 {
				t.Errorf("%d problems, want 1:\n%s", len(problems), listProblems(problems))
			}
		})
	}
}

func TestGroupPatternExpand(t *testing.T) {
	vars := map[string]string{"slug": "alpha", "role": "admin", "project_uuid": "0a1b", "empty": ""}
	tests := []struct {
		pattern, want, err string
	}{
		{"ns_{slug}_{role}", "ns_alpha_admin", ""},
		{"p_{project_uuid}_{role}", "p_0a1b_admin", ""},
		{"{slug}{slug}", "alphaalpha", ""},
		{"fixed", "fixed", ""},
		{"ns_{customer_slug}_{role}", "", "{customer_slug} is empty"},
		{"ns_{bogus}", "", "refers to {bogus}"},
		{"x_{slug}_" + strings.Repeat("y", 260), "", "longer than 255"},
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			got, err := config.GroupPattern(tc.pattern).Expand(vars)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Expand: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Expand error %v, want %q", err, tc.err)
			}
			equal(t, "name", got, tc.want)
		})
	}
	if _, err := config.GroupPattern("g_{slug}").Expand(map[string]string{"slug": "a/b"}); err == nil || !strings.Contains(err.Error(), "contains '/'") {
		t.Errorf("a value with '/' expanded: %v", err)
	}
}

// The client secret is a credential like the password: it never prints.
func TestClientSecretNeverPrints(t *testing.T) {
	const secret = "kc-client-secret-8d1c"
	l := mustParse(t, oneOffering("namespace", "      keycloak:\n        client_secret: "+secret+"\n", ""))
	kc := l.Offerings[0].Settings.Common().Keycloak
	equal(t, "revealed", kc.ClientSecret.Reveal(), secret)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		assertNoSecret(t, "settings printed with "+verb, fmt.Sprintf(verb, l.Offerings[0]), secret)
		assertNoSecret(t, "keycloak settings printed with "+verb, fmt.Sprintf(verb, kc), secret)
	}
	b, _ := json.Marshal(kc)
	assertNoSecret(t, "keycloak settings as JSON", string(b), secret)
	ve, _ := mustFail(t, oneOffering("namespace", "      keycloak:\n        client_secret: ["+secret+"]\n", ""))
	assertNoSecret(t, "validation error", ve.Error(), secret)
}

// The password and client secret can come from files (relative to the config
// file) or environment variables; they are read when asked for, not at load.
func TestKeycloakCredentialSources(t *testing.T) {
	const pw, cs = "kc-file-password-5e2a", "kc-env-secret-77b0"
	t.Setenv("WALDUR_GITOPS_TEST_KC_SECRET", "  "+cs+"\n")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	text := oneOffering("namespace", "      keycloak:\n        keycloak_username: gitops\n        keycloak_password_file: secrets/kc-password\n        client_secret_env: WALDUR_GITOPS_TEST_KC_SECRET\n", "")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	l := mustLoad(t, cfg)
	kc := l.Offerings[0].Settings.Common().Keycloak
	equal(t, "password file", kc.PasswordFile, filepath.Join(dir, "secrets", "kc-password"))
	if kc.Password != "" || kc.ClientSecret != "" {
		t.Fatal("secrets were read at load time")
	}
	// The file does not exist yet: the error names the key, not a secret.
	_, err := kc.WithCredentials()
	if err == nil || !strings.Contains(err.Error(), "keycloak.keycloak_password_file") {
		t.Fatalf("missing password file: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc.PasswordFile, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := kc.WithCredentials()
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "password", got.Password.Reveal(), pw)
	equal(t, "client secret", got.ClientSecret.Reveal(), cs)
	if !kc.HasClientSecret() {
		t.Error("HasClientSecret is false with client_secret_env set")
	}
	// A rotated file is read again.
	if err := os.WriteFile(kc.PasswordFile, []byte("rotated-pw-91"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ = kc.WithCredentials()
	equal(t, "rotated password", got.Password.Reveal(), "rotated-pw-91")
	t.Setenv("WALDUR_GITOPS_TEST_KC_SECRET", "")
	if _, err := kc.WithCredentials(); err == nil || !strings.Contains(err.Error(), "WALDUR_GITOPS_TEST_KC_SECRET is not set or empty") {
		t.Errorf("empty client secret variable: %v", err)
	}
}

// TestKeycloakStateKey: keycloak_state is a file relative to the config, or
// "off", which is no file; keycloak_state_namespace is kept as written.
func TestKeycloakStateKey(t *testing.T) {
	for _, tc := range []struct {
		name, text, want, ns string
	}{
		{"unset", "", "", ""},
		{"a file", "keycloak_state: kc.json\n", "kc.json", ""},
		{"off", "keycloak_state: off\n", config.KeycloakStateOff, ""},
		{"namespace", "keycloak_state_namespace: waldur-gitops\n", "", "waldur-gitops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustParse(t, tc.text+oneOffering("okd", "", ""))
			got := l.KeycloakState
			if tc.want == "kc.json" {
				if filepath.Base(got) != "kc.json" || !filepath.IsAbs(got) {
					t.Errorf("keycloak_state = %q, want kc.json beside the config", got)
				}
			} else if got != tc.want {
				t.Errorf("keycloak_state = %q, want %q", got, tc.want)
			}
			if l.KeycloakStateNamespace != tc.ns {
				t.Errorf("keycloak_state_namespace = %q, want %q", l.KeycloakStateNamespace, tc.ns)
			}
		})
	}
}
