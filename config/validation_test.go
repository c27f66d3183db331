package config_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
)

// One load of a file with many mistakes returns one error that lists every one of
// them, each under its key path and, where the decoder knows it, its line.
func TestEveryProblemAtOnce(t *testing.T) {
	const bs0 = "offerings[0].backend_settings."
	want := []struct {
		path    string
		line    int
		message string
	}{
		{"timezone", 2, `unknown time zone "Mars/Olympus_Mons"`},
		{"colour", 3, "unknown key"},
		{"git.path", 6, "must be a relative path inside the repository"},
		{"offerings[0].waldur_api_url", 9, "must be an http or https URL"},
		{"offerings[0].waldur_offering_uuid", 11, `invalid uuid "not-a-uuid"`},
		{bs0 + "namespace_prefix", 14, "not RFC 1123 labels"},
		{bs0 + "cr_namespace", 15, `"Waldur_System" is not a valid namespace name`},
		{bs0 + "role_mapping.manager", 17, `must be one of admin, readwrite, readonly, got "superuser"`},
		{bs0 + "default_role", 18, `must be one of admin, readwrite, readonly, got "owner"`},
		{bs0 + "paused_limits.cpu", 20, "must not be negative"},
		{bs0 + "paused_limits.ram", 21, `expected a whole number, got string "2"`},
		{bs0 + "namespace_labels.bad key!", 23, "not a valid label or annotation key"},
		{bs0 + "sync_users_to_cr", 24, `expected true or false, got string "yes"`},
		{bs0 + "quota_nmae", 25, "unknown key"},
		{"offerings[1].name", 26, `"alpha!" collides with offerings[0].name "Alpha"`},
		// A missing key is located at the start of the mapping that lacks it.
		{"offerings[1].waldur_offering_uuid", 26, "required"},
		{"offerings[1].backend_type", 28, `unknown backend type "mainframe"`},
		{"offerings[2].waldur_api_url", 29, "required"},
		{"offerings[2].backend_settings.cluster_id", 32, "required"},
		{"offerings[2].backend_settings.default_role", 33, "expected a string, got a list"},
		{"offerings[3].backend_settings.namespace_prefix", 40, "is 64 characters"},
		{"offerings[4].name", 41, `"GAMMA" collides with offerings[2].name "Gamma"`},
	}

	const file = "testdata/many-problems.yaml"
	_, err := config.Load(filepath.FromSlash(file))
	ve, problems := validationError(t, err)
	if len(problems) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(problems), len(want), listProblems(problems))
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, fmt.Sprintf("invalid config %s: %d problem(s)", ve.File, len(problems))) {
		t.Errorf("error does not start with the file and count: %q", msg)
	}
	for _, w := range want {
		t.Run(w.path, func(t *testing.T) {
			p := findProblem(t, problems, w.path)
			if p.Line != w.line {
				t.Errorf("line = %d, want %d", p.Line, w.line)
			}
			if !strings.Contains(p.Message, w.message) {
				t.Errorf("message %q does not contain %q", p.Message, w.message)
			}
			if !strings.Contains(msg, "\n  "+p.String()) {
				t.Errorf("the error text does not list %q", p.String())
			}
		})
	}
	for i := 1; i < len(problems); i++ {
		if problems[i].Line < problems[i-1].Line {
			t.Errorf("problems not in file order: %q before %q", problems[i-1], problems[i])
		}
	}
	if strings.Contains(msg, "many-problems-token-31f7") {
		t.Error("the error quotes the offering's token")
	}
	// The CLI relies on this to exit with code 2.
	if !config.IsValidation(fmt.Errorf("render: %w", err)) {
		t.Error("IsValidation is false for the wrapped error")
	}
}

// Each check on its own, with the key path it reports.
func TestSingleProblems(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		path    string
		message string
	}{
		{"no offerings key", "git: {branch: main}\n", "offerings", "required"},
		{"empty offerings", "offerings: []\n", "offerings", "required"},
		{"offerings not a list", "offerings: {a: 1}\n", "offerings", "expected a list, got a mapping"},
		{"bad log level", "log_level: verbose\n" + oneOffering("namespace", "", ""), "log_level", `got "verbose"`},
		{"absolute git path", "git: {path: /srv/repo}\n" + oneOffering("namespace", "", ""), "git.path", "must be a relative path"},
		{"git path that is just ..", "git: {path: a/../..}\n" + oneOffering("namespace", "", ""), "git.path", "must be a relative path"},
		{"missing name", strings.Replace(oneOffering("okd", "", ""), "name: Test offering", "name: '  '", 1), "offerings[0].name", "required"},
		{"name without letters", strings.Replace(oneOffering("okd", "", ""), "name: Test offering", "name: '***'", 1), "offerings[0].name", "no letters or digits"},
		{"exact duplicate name", oneOffering("okd", "", "") + oneOffering("okd", "", "")[len("offerings:\n"):], "offerings[1].name", "collides with offerings[0].name"},
		{"URL without host", strings.Replace(oneOffering("okd", "", ""), "https://waldur.example.org/api/", "https:///api", 1), "offerings[0].waldur_api_url", "http or https URL"},
		{"URL without scheme", strings.Replace(oneOffering("okd", "", ""), "https://waldur.example.org/api/", "waldur.example.org", 1), "offerings[0].waldur_api_url", "http or https URL"},
		{"uuid with a non-hex digit", strings.Replace(oneOffering("okd", "", ""), validUUID, "x"+validUUID[1:], 1), "offerings[0].waldur_offering_uuid", "not a hex digit"},
		{"missing backend_type", strings.Replace(oneOffering("okd", "", ""), "backend_type: okd", "", 1), "offerings[0].backend_type", "required: one of k8s-ut-namespace, namespace, okd, rancher"},
		{"verify_ssl as a string", oneOffering("okd", "", "    verify_ssl: 'false'\n"), "offerings[0].verify_ssl", "expected true or false"},
		{"bad accounting_type", oneOffering("okd", "", "    backend_components:\n      cpu: {accounting_type: monthly}\n"), "offerings[0].backend_components.cpu.accounting_type", "must be usage, limit or one"},
		{"negative unit_factor", oneOffering("okd", "", "    backend_components:\n      cpu: {unit_factor: -2}\n"), "offerings[0].backend_components.cpu.unit_factor", "must be positive"},
		{"unknown component key", oneOffering("okd", "", "    backend_components:\n      cpu: {unit: cores}\n"), "offerings[0].backend_components.cpu.unit", "unknown key"},
		{"backend_settings not a mapping", oneOffering("okd", "      - a\n", ""), "offerings[0].backend_settings", "expected a mapping, got a list"},
		{"keycloak without URL", oneOffering("okd", "      keycloak_enabled: true\n", ""), "offerings[0].backend_settings.keycloak.keycloak_url", "required when keycloak_enabled is true"},
		{"unknown keycloak key", oneOffering("okd", "      keycloak: {realm: x}\n", ""), "offerings[0].backend_settings.keycloak.realm", "unknown key"},
		{"keycloak_ssl_verify as a string", oneOffering("okd", "      keycloak: {keycloak_ssl_verify: 'no'}\n", ""), "offerings[0].backend_settings.keycloak.keycloak_ssl_verify", "expected true or false"},
		{"fractional limit", oneOffering("okd", "      downscaled_limits: {cpu: 0.5}\n", ""), "offerings[0].backend_settings.downscaled_limits.cpu", "expected a whole number"},
		{"negative downscaled limit", oneOffering("okd", "      downscaled_limits: {cpu: -3}\n", ""), "offerings[0].backend_settings.downscaled_limits.cpu", "must not be negative"},
		{"label value not a string", oneOffering("okd", "      namespace_labels: {team: [a]}\n", ""), "offerings[0].backend_settings.namespace_labels.team", "expected a string"},
		{"bad annotation key", oneOffering("okd", "      namespace_annotations: {-x: y}\n", ""), "offerings[0].backend_settings.namespace_annotations.-x", "not a valid label or annotation key"},
		{"okd empty default_role", oneOffering("okd", "      default_role: ''\n", ""), "offerings[0].backend_settings.default_role", "must not be empty"},
		{"okd bad prefix", oneOffering("okd", "      allocation_prefix: Alloc_\n", ""), "offerings[0].backend_settings.allocation_prefix", "not RFC 1123 labels"},
		{"label value invalid", oneOffering("okd", "      namespace_labels: {tier: \"has space\"}\n", ""), "offerings[0].backend_settings.namespace_labels.tier", "not a valid label value"},
		{"k8s-ut bad identity field", oneOffering("k8s-ut-namespace", "      cr_user_identity_field: uid\n", ""), "offerings[0].backend_settings.cr_user_identity_field", "must be one of email, username"},
		{"k8s-ut empty cr_namespace", oneOffering("k8s-ut-namespace", "      cr_namespace: ''\n", ""), "offerings[0].backend_settings.cr_namespace", "not a valid namespace name"},
		{"namespace bad cluster_roles key", oneOffering("namespace", "      cluster_roles: {owner: admin}\n", ""), "offerings[0].backend_settings.cluster_roles.owner", "must be one of admin, readwrite, readonly"},
		{"namespace bad quota_name", oneOffering("namespace", "      quota_name: Quota\n", ""), "offerings[0].backend_settings.quota_name", "not a valid object name"},
		{"namespace bad user_identity_field", oneOffering("namespace", "      user_identity_field: uid\n", ""), "offerings[0].backend_settings.user_identity_field", "must be one of"},
		{"namespace role_mapping target", oneOffering("namespace", "      role_mapping: {member: edit}\n", ""), "offerings[0].backend_settings.role_mapping.member", `got "edit"`},
		{"namespace user_prefix reserved", oneOffering("namespace", "      user_prefix: 'system:'\n", ""), "offerings[0].backend_settings.user_prefix", "reserves"},
		{"namespace group_prefix reserved", oneOffering("namespace", "      group_prefix: 'Kube:x-'\n", ""), "offerings[0].backend_settings.group_prefix", "reserves"},
		{"namespace bind_users as a string", oneOffering("namespace", "      bind_users: 'true'\n", ""), "offerings[0].backend_settings.bind_users", "expected true or false"},
		{"rancher bad cluster_id", oneOffering("rancher", "      cluster_id: local:c-1\n", ""), "offerings[0].backend_settings.cluster_id", "not a Rancher cluster id"},
		{"rancher empty default_role", oneOffering("rancher", "      cluster_id: c-1\n      default_role: ''\n", ""), "offerings[0].backend_settings.default_role", "must not be empty"},
		{"rancher bad binding_namespace", oneOffering("rancher", "      cluster_id: c-1\n      binding_namespace: cluster\n", ""), "offerings[0].backend_settings.binding_namespace", "must be one of backing, project"},
		{"rancher bad project_prefix", oneOffering("rancher", "      cluster_id: c-1\n      project_prefix: -x\n", ""), "offerings[0].backend_settings.project_prefix", "not RFC 1123 labels"},
		{"rancher bad quota_name", oneOffering("rancher", "      cluster_id: c-1\n      quota_name: q_1\n", ""), "offerings[0].backend_settings.quota_name", "not a valid object name"},
		{"rancher key of another profile", oneOffering("rancher", "      cluster_id: c-1\n      cr_namespace: x\n", ""), "offerings[0].backend_settings.cr_namespace", "unknown key"},
		{"keycloak_state a directory", "keycloak_state: /\n" + oneOffering("okd", "", ""), "keycloak_state", "not a regular file"},
		{"keycloak_state_namespace not a name", "keycloak_state_namespace: Waldur_GitOps\n" + oneOffering("okd", "", ""), "keycloak_state_namespace", "not a valid namespace name"},
		{"duplicate key", "timezone: UTC\ntimezone: UTC\n" + oneOffering("okd", "", ""), "timezone", "duplicate key"},
		{"duplicate map key", oneOffering("okd", "      namespace_labels: {a: x, a: y}\n", ""), "offerings[0].backend_settings.namespace_labels.a", "duplicate key"},
		{"non-string map key", oneOffering("okd", "      namespace_labels: {[a]: x}\n", ""), "offerings[0].backend_settings.namespace_labels", "mapping keys must be strings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := mustFail(t, tc.text)
			if len(problems) != 1 {
				t.Errorf("got %d problems, want 1:\n%s", len(problems), listProblems(problems))
			}
			p := findProblem(t, problems, tc.path)
			if !strings.Contains(p.Message, tc.message) {
				t.Errorf("message %q does not contain %q", p.Message, tc.message)
			}
		})
	}
}

// Role mapping keys may use Waldur's long role names; they are stored under the
// short names the renderer looks up.
func TestRoleMappingSpellings(t *testing.T) {
	tests := []struct {
		backend, settings string
		want              map[string]string
	}{
		{"k8s-ut-namespace", "{PROJECT.MANAGER: readonly, project.member: admin, CUSTOMER.OWNER: readwrite}",
			map[string]string{"manager": "readonly", "admin": "admin", "member": "admin", "owner": "readwrite", "service_account": "readwrite", "course_account": "readonly"}},
		{"namespace", "{PROJECT.ADMIN: readonly, ' Project.Member ': readonly}",
			map[string]string{"manager": "admin", "admin": "readonly", "member": "readonly", "service_account": "readwrite", "course_account": "readonly"}},
		{"okd", "{PROJECT.MEMBER: edit, CUSTOMER.MANAGER: view, guest: view}",
			map[string]string{"owner": "admin", "manager": "edit", "admin": "edit", "member": "edit", "observer": "view", "service_manager": "view", "guest": "view", "service_account": "edit", "course_account": "view"}},
	}
	for _, tc := range tests {
		t.Run(tc.backend, func(t *testing.T) {
			s := mustParse(t, oneOffering(tc.backend, "      role_mapping: "+tc.settings+"\n", "")).Offerings[0].Settings
			var got map[string]string
			switch {
			case s.K8sUT != nil:
				got = s.K8sUT.RoleMapping
			case s.Namespace != nil:
				got = s.Namespace.RoleMapping
			case s.OKD != nil:
				got = s.OKD.RoleMapping
			}
			equalMap(t, "role_mapping", got, tc.want)
		})
	}
	// Two spellings of one role would leave the result to map iteration order.
	for _, backend := range []string{"k8s-ut-namespace", "okd"} {
		t.Run(backend+" same role twice", func(t *testing.T) {
			_, problems := mustFail(t, oneOffering(backend, "      role_mapping: {manager: admin, PROJECT.MANAGER: admin}\n", ""))
			p := findProblem(t, problems, "offerings[0].backend_settings.role_mapping.manager")
			if !strings.Contains(p.Message, `"PROJECT.MANAGER" and "manager" both name the role "manager"`) {
				t.Errorf("message %q", p.Message)
			}
		})
	}
}

// A problem found after decoding carries the line of its key, or of the nearest
// enclosing key when the key itself is missing.
func TestProblemLines(t *testing.T) {
	text := oneOffering("rancher", "      keycloak_enabled: true\n      binding_namespace: nowhere\n", "")
	// line 1 offerings, 2 name, 3 url, 4 uuid, 5 backend_type, 6 backend_settings,
	// 7 keycloak_enabled, 8 binding_namespace
	_, problems := mustFail(t, text)
	for path, line := range map[string]int{
		"offerings[0].backend_settings.binding_namespace":     8,
		"offerings[0].backend_settings.cluster_id":            6,
		"offerings[0].backend_settings.keycloak.keycloak_url": 6,
	} {
		if p := findProblem(t, problems, path); p.Line != line {
			t.Errorf("%s: line %d, want %d", path, p.Line, line)
		}
	}
	equal(t, "with a line", config.Problem{Path: "a.b", Line: 7, Message: "bad"}.String(), "a.b (line 7): bad")
	equal(t, "without a line", config.Problem{Path: "a.b", Message: "bad"}.String(), "a.b: bad")
}

func TestToken(t *testing.T) {
	const name = "Token offering"
	offering := func(extra string) string {
		return strings.Replace(oneOffering("okd", "", extra), "Test offering", name, 1)
	}
	tests := []struct {
		name  string
		extra string            // offering keys
		files map[string]string // written next to the config
		env   string
		want  string
		err   string
	}{
		{name: "inline, ahead of the environment", extra: "    waldur_api_token: inline-tok-1\n", env: "env-tok-0", want: "inline-tok-1"},
		{name: "file relative to the config, trimmed, ahead of the environment", extra: "    waldur_api_token_file: token\n",
			files: map[string]string{"token": "  file-tok-2\n\n"}, env: "env-tok-0", want: "file-tok-2"},
		{name: "file in a subdirectory", extra: "    waldur_api_token_file: secrets/waldur\n",
			files: map[string]string{"secrets/waldur": "file-tok-3"}, want: "file-tok-3"},
		{name: "empty file", extra: "    waldur_api_token_file: token\n", files: map[string]string{"token": " \n"},
			err: "offering " + name + ": waldur_api_token_file "},
		{name: "missing file", extra: "    waldur_api_token_file: absent\n", err: "offering " + name + ": read waldur_api_token_file"},
		{name: "environment", env: "  env-tok-4\n", want: "env-tok-4"},
		{name: "nothing", err: "offering " + name + ": no Waldur token: set waldur_api_token, waldur_api_token_file or $WALDUR_API_TOKEN"},
		{name: "blank environment", env: " ", err: "offering " + name + ": no Waldur token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.TokenEnv, tc.env)
			path := writeConfig(t, offering(tc.extra))
			for f, content := range tc.files {
				writeFile(t, filepath.Join(filepath.Dir(path), f), content)
			}
			l := mustLoad(t, path)
			tok, err := l.Offerings[0].Token()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Token() = %v, %v; want an error containing %q", tok, err, tc.err)
				}
				if tc.name == "empty file" && !strings.HasSuffix(err.Error(), "is empty") {
					t.Errorf("error %q does not say the file is empty", err)
				}
				return
			}
			if err != nil || tok.Reveal() != tc.want {
				t.Fatalf("Token() = %q, %v; want %q", tok.Reveal(), err, tc.want)
			}
		})
	}
	t.Run("token and token file", func(t *testing.T) {
		_, problems := mustFail(t, offering("    waldur_api_token: a\n    waldur_api_token_file: b\n"))
		p := findProblem(t, problems, "offerings[0].waldur_api_token_file")
		if !strings.Contains(p.Message, "not both") {
			t.Errorf("message %q", p.Message)
		}
	})
	t.Run("the file is resolved against the config's directory, not the working directory", func(t *testing.T) {
		path := writeConfig(t, offering("    waldur_api_token_file: tok\n"))
		l := mustLoad(t, path)
		equal(t, "waldur_api_token_file", l.Offerings[0].WaldurAPITokenFile, filepath.Join(filepath.Dir(path), "tok"))
	})
}

// TestUnknownKeySuggestions: a typo gets the nearest known key; the list of
// known keys leaves out the site-agent keys the tool ignores; a key far from
// every known one gets no guess.
func TestUnknownKeySuggestions(t *testing.T) {
	for _, tc := range []struct {
		key, want, notWant string
	}{
		{"waldur_api_ur", "did you mean waldur_api_url?", ""},
		{"Backend_Type2", "did you mean backend_type?", ""},
		{"zzzzqq", "unknown key (known keys:", "did you mean"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			text := "offerings:\n- name: X\n  waldur_api_url: https://w.example.org/api/\n  waldur_offering_uuid: 0f0f0f0f0f0f4f0f8f0f0f0f0f0f0001\n  backend_type: namespace\n  " + tc.key + ": 1\n"
			_, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.notWant != "" && strings.Contains(err.Error(), tc.notWant)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	// The known keys of backend_settings do not list the ignored ones.
	text := "offerings:\n- name: X\n  waldur_api_url: https://w.example.org/api/\n  waldur_offering_uuid: 0f0f0f0f0f0f4f0f8f0f0f0f0f0f0001\n  backend_type: namespace\n  backend_settings:\n    nonsense_key: 1\n"
	_, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
	if err == nil || !strings.Contains(err.Error(), "namespace_prefix") {
		t.Fatalf("error %v", err)
	}
	for _, ignored := range []string{"customer_prefix", "soft_delete", "default_account", "check_all_offerings"} {
		if strings.Contains(err.Error(), " "+ignored+",") || strings.Contains(err.Error(), " "+ignored+")") {
			t.Errorf("the known keys list the ignored site-agent key %s: %v", ignored, err)
		}
	}
}
