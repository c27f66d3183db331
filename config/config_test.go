package config_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
)

var (
	defaultNSRoles      = map[string]string{"manager": "admin", "admin": "admin", "member": "readwrite", "service_account": "readwrite", "course_account": "readonly"}
	defaultDownscaled   = map[string]int64{"cpu": 1, "ram": 1, "memory": 1, "storage": 1}
	defaultK8sUTQuota   = map[string]string{"cpu": "cpu", "ram": "memory", "storage": "storage", "gpu": "gpu"}
	defaultNSQuota      = map[string]string{"cpu": "limits.cpu", "ram": "limits.memory", "storage": "requests.storage", "gpu": "requests.nvidia.com/gpu"}
	defaultClusterRoles = map[string]string{"admin": "admin", "readwrite": "edit", "readonly": "view"}
	defaultOKDRoles     = map[string]string{"owner": "admin", "manager": "edit", "admin": "edit", "member": "view", "observer": "view", "service_account": "edit", "course_account": "view"}
)

func equalMap[V comparable](t *testing.T, what string, got, want map[string]V) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func equal[V comparable](t *testing.T, what string, got, want V) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// The shipped example must load cleanly, and every profile must come out with the
// documented defaults where the example leaves a key out.
func TestExampleConfig(t *testing.T) {
	const path = "../examples/config.yaml"
	l := mustLoad(t, path)
	if len(l.Warnings) != 0 {
		t.Errorf("warnings: %v", l.Warnings)
	}
	equal(t, "Path", l.Path, path)
	equal(t, "timezone", l.Timezone, "UTC")
	equal(t, "log_level", l.LogLevel, "info")
	equal(t, "git.branch", l.Git.Branch, "main")
	equal(t, "git.path", l.Git.Path, "waldur")
	equal(t, "git.author_email", l.Git.AuthorEmail, "waldur-gitops@example.org")
	if len(l.Offerings) != 4 {
		t.Fatalf("got %d offerings, want 4", len(l.Offerings))
	}
	byName := map[string]*config.Offering{}
	for i := range l.Offerings {
		o := &l.Offerings[i]
		byName[o.Name] = o
		if !o.VerifiesSSL() {
			t.Errorf("%s: verify_ssl defaults to true", o.Name)
		}
		if len(o.WaldurOfferingUUID) != 32 || strings.Contains(o.WaldurOfferingUUID, "-") {
			t.Errorf("%s: uuid %q not normalised to 32 hex digits", o.Name, o.WaldurOfferingUUID)
		}
		c := o.Settings.Common()
		equalMap(t, o.Name+" downscaled_limits", c.DownscaledLimits, defaultDownscaled)
		if c.PausedLimits != nil {
			t.Errorf("%s: paused_limits = %v, want unset (all 0)", o.Name, c.PausedLimits)
		}
		for k, comp := range o.BackendComponents {
			equal(t, o.Name+" "+k+" unit_factor", comp.UnitFactor, 1.0)
		}
	}

	t.Run("k8s-ut-namespace", func(t *testing.T) {
		o := byName["UT namespaces"]
		s := o.Settings.K8sUT
		if s == nil || o.Settings.Namespace != nil || o.Settings.OKD != nil || o.Settings.Rancher != nil {
			t.Fatalf("settings = %+v, want only K8sUT", o.Settings)
		}
		equal(t, "uuid", o.WaldurOfferingUUID, "41e0012c52dd79ad2bebfde833ef9fe7")
		equal(t, "token file (absolute, kept)", o.WaldurAPITokenFile, "/var/run/secrets/waldur/token")
		equal(t, "cr_namespace", s.CRNamespace, "waldur-system")
		equal(t, "namespace_prefix", s.NamespacePrefix, "waldur-")
		equal(t, "default_role", s.DefaultRole, "readwrite")
		equalMap(t, "role_mapping", s.RoleMapping, defaultNSRoles)
		equalMap(t, "component_quota_mapping", s.ComponentQuotaMapping, defaultK8sUTQuota)
		equal(t, "sync_users_to_cr", s.SyncUsersToCR, true)
		equal(t, "cr_user_identity_field", s.CRUserIdentityField, "email")
		equalMap(t, "namespace_labels", s.NamespaceLabels, map[string]string{"tier": "research"})
		equal(t, "keycloak_enabled", s.KeycloakEnabled, true)
		equal(t, "keycloak_url", s.Keycloak.URL, "https://keycloak.example.org/auth/")
		equal(t, "keycloak_realm (set)", s.Keycloak.Realm, "hpc")
		equal(t, "keycloak_user_realm (default)", s.Keycloak.UserRealm, "master")
		equal(t, "client_id (default)", s.Keycloak.ClientID, "admin-cli")
		equal(t, "keycloak_username", s.Keycloak.Username, "waldur-gitops")
	})
	t.Run("namespace", func(t *testing.T) {
		o := byName["Plain namespaces"]
		s := o.Settings.Namespace
		if s == nil {
			t.Fatalf("settings = %+v, want Namespace", o.Settings)
		}
		equal(t, "templates_dir", o.TemplatesDir, filepath.Join("..", "examples", "site-templates"))
		equal(t, "component type of gpu_a100", o.ComponentType("gpu_a100"), "gpu")
		equal(t, "component type of cpu (key)", o.ComponentType("cpu"), "cpu")
		equal(t, "namespace_prefix", s.NamespacePrefix, "tenant-")
		equal(t, "default_role", s.DefaultRole, "readwrite")
		equalMap(t, "role_mapping", s.RoleMapping, defaultNSRoles)
		equalMap(t, "cluster_roles", s.ClusterRoles, defaultClusterRoles)
		equalMap(t, "component_quota_mapping", s.ComponentQuotaMapping, defaultNSQuota)
		equal(t, "quota_name", s.QuotaName, "waldur-quota")
		equal(t, "bind_groups (follows keycloak_enabled)", *s.BindGroups, true)
		equal(t, "bind_users", *s.BindUsers, true)
		equal(t, "group_prefix", s.GroupPrefix, "oidc:")
		equal(t, "user_identity_field", s.UserIdentityField, "username")
		equal(t, "keycloak_realm (default)", s.Keycloak.Realm, "waldur")
	})
	t.Run("okd", func(t *testing.T) {
		s := byName["OKD projects"].Settings.OKD
		if s == nil {
			t.Fatal("want OKD settings")
		}
		equal(t, "namespace_prefix", s.NamespacePrefix, "okd-")
		equal(t, "allocation_prefix (explicitly empty)", s.AllocationPrefix, "")
		equal(t, "customer_prefix", s.CustomerPrefix, "org-")
		equal(t, "project_prefix", s.ProjectPrefix, "proj-")
		equal(t, "default_role (default: least privilege)", s.DefaultRole, "view")
		equalMap(t, "role_mapping", s.RoleMapping, defaultOKDRoles)
	})
	t.Run("rancher", func(t *testing.T) {
		s := byName["Rancher GPU"].Settings.Rancher
		if s == nil {
			t.Fatal("want Rancher settings")
		}
		equal(t, "cluster_id", s.ClusterID, "c-m-4xk2p9q7")
		equal(t, "project_prefix", s.ProjectPrefix, "gpu-")
		equal(t, "default_role", s.DefaultRole, "workloads-manage")
		equal(t, "binding_namespace", s.BindingNamespace, "backing")
		equal(t, "quota_name", s.QuotaName, "custom-resource-quota")
		equal(t, "keycloak client_id", s.Keycloak.ClientID, "admin-cli")
	})
}

// A config that sets only what is required gets every default.
func TestDefaults(t *testing.T) {
	t.Run("top level", func(t *testing.T) {
		l := mustParse(t, oneOffering("namespace", "", ""))
		equal(t, "timezone", l.Timezone, "UTC")
		equal(t, "log_level", l.LogLevel, "info")
		equal(t, "git.branch", l.Git.Branch, "main")
		equal(t, "git.path", l.Git.Path, "waldur")
		equal(t, "git.author_name", l.Git.AuthorName, "waldur-gitops")
		equal(t, "git.author_email", l.Git.AuthorEmail, "waldur-gitops@localhost")
		equal(t, "git.url", l.Git.URL, "")
		o := l.Offerings[0]
		equal(t, "verify_ssl", o.VerifiesSSL(), true)
		equal(t, "templates_dir", o.TemplatesDir, "")
	})

	tests := []struct {
		backend  string
		settings string
		check    func(t *testing.T, s config.Settings)
	}{
		{"k8s-ut-namespace", "", func(t *testing.T, s config.Settings) {
			k := s.K8sUT
			equal(t, "cr_namespace", k.CRNamespace, "waldur-system")
			equal(t, "namespace_prefix", k.NamespacePrefix, "waldur-")
			equal(t, "default_role", k.DefaultRole, "readwrite")
			equalMap(t, "role_mapping", k.RoleMapping, defaultNSRoles)
			equalMap(t, "component_quota_mapping", k.ComponentQuotaMapping, defaultK8sUTQuota)
			equal(t, "sync_users_to_cr", k.SyncUsersToCR, false)
			equal(t, "cr_user_identity_field", k.CRUserIdentityField, "email")
			equal(t, "cr_user_identity_lowercase", k.CRUserIdentityLowercase, false)
		}},
		{"namespace", "", func(t *testing.T, s config.Settings) {
			n := s.Namespace
			equal(t, "namespace_prefix", n.NamespacePrefix, "waldur-")
			equal(t, "default_role", n.DefaultRole, "readwrite")
			equalMap(t, "role_mapping", n.RoleMapping, defaultNSRoles)
			equalMap(t, "cluster_roles", n.ClusterRoles, defaultClusterRoles)
			equalMap(t, "component_quota_mapping", n.ComponentQuotaMapping, defaultNSQuota)
			equal(t, "quota_name", n.QuotaName, "waldur-quota")
			equal(t, "bind_groups (keycloak off)", *n.BindGroups, false)
			equal(t, "bind_users", *n.BindUsers, true)
			equal(t, "group_prefix", n.GroupPrefix, "")
			equal(t, "user_prefix", n.UserPrefix, "")
			equal(t, "user_identity_field", n.UserIdentityField, "username")
		}},
		{"okd", "", func(t *testing.T, s config.Settings) {
			o := s.OKD
			equal(t, "namespace_prefix", o.NamespacePrefix, "waldur-")
			equal(t, "allocation_prefix", o.AllocationPrefix, "alloc-")
			equal(t, "customer_prefix", o.CustomerPrefix, "org-")
			equal(t, "project_prefix", o.ProjectPrefix, "proj-")
			equal(t, "default_role", o.DefaultRole, "view")
			equalMap(t, "role_mapping", o.RoleMapping, defaultOKDRoles)
		}},
		{"rancher", "      cluster_id: c-m-abc123\n", func(t *testing.T, s config.Settings) {
			r := s.Rancher
			equal(t, "project_prefix", r.ProjectPrefix, "waldur-")
			equal(t, "default_role", r.DefaultRole, "workloads-manage")
			equal(t, "quota_name", r.QuotaName, "custom-resource-quota")
			equal(t, "binding_namespace", r.BindingNamespace, "backing")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.backend, func(t *testing.T) {
			s := mustParse(t, oneOffering(tc.backend, tc.settings, "")).Offerings[0].Settings
			set := 0
			for _, p := range []bool{s.K8sUT != nil, s.Namespace != nil, s.OKD != nil, s.Rancher != nil} {
				if p {
					set++
				}
			}
			if set != 1 {
				t.Fatalf("%d profile settings set, want exactly 1: %+v", set, s)
			}
			tc.check(t, s)
			c := s.Common()
			equalMap(t, "downscaled_limits", c.DownscaledLimits, defaultDownscaled)
			equal(t, "paused_limits unset", c.PausedLimits == nil, true)
			equal(t, "keycloak_enabled", c.KeycloakEnabled, false)
			equal(t, "keycloak_use_user_id unset (true)", c.KeycloakUseUserID == nil, true)
			equal(t, "keycloak_url", c.Keycloak.URL, "")
			equal(t, "keycloak_realm", c.Keycloak.Realm, "waldur")
			equal(t, "keycloak_user_realm", c.Keycloak.UserRealm, "master")
			equal(t, "client_id", c.Keycloak.ClientID, "admin-cli")
		})
	}
}

// backend_type is matched case-insensitively, as the site agent lower-cases it.
func TestBackendTypeCase(t *testing.T) {
	o := mustParse(t, oneOffering(" Rancher ", "      cluster_id: c-m-abc123\n", "")).Offerings[0]
	equal(t, "backend_type", o.BackendType, config.BackendRancher)
	if o.Settings.Rancher == nil {
		t.Fatal("rancher settings not decoded")
	}
}

// downscaled_limits replaces the default set as a whole; paused_limits has none.
func TestLimitSets(t *testing.T) {
	tests := []struct {
		name      string
		settings  string
		paused    map[string]int64
		downscale map[string]int64
	}{
		{"defaults", "", nil, defaultDownscaled},
		{"null keeps the default", "      downscaled_limits: null\n", nil, defaultDownscaled},
		{"replaced, not merged", "      downscaled_limits: {cpu: 2, gpu: 0}\n      paused_limits: {storage: 5}\n",
			map[string]int64{"storage": 5}, map[string]int64{"cpu": 2, "gpu": 0}},
		{"empty mapping means all 0", "      downscaled_limits: {}\n", nil, map[string]int64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, oneOffering("namespace", tc.settings, "")).Offerings[0].Settings.Common()
			equalMap(t, "paused_limits", c.PausedLimits, tc.paused)
			equalMap(t, "downscaled_limits", c.DownscaledLimits, tc.downscale)
			if tc.downscale != nil && len(tc.downscale) == 0 && c.DownscaledLimits == nil {
				t.Error("downscaled_limits: {} came back nil, so the defaults would apply")
			}
		})
	}
}

// Site-agent configs for the three plugins load unchanged; every site-agent key
// this tool does not use is reported as a warning naming its key path, and no
// key it does use is.
func TestSiteAgentConfigs(t *testing.T) {
	o0 := func(keys ...string) []string {
		for i, k := range keys {
			keys[i] = "offerings[0]." + k
		}
		return keys
	}
	tests := []struct {
		file     string
		backend  string
		warnings []string
		check    func(t *testing.T, l *config.Loaded)
	}{
		{
			file:    "site-agent-k8s-ut.yaml",
			backend: config.BackendK8sUTNamespace,
			warnings: append([]string{"sentry_dsn", "reporting_periods", "log_shipping"}, o0(
				"order_processing_backend", "membership_sync_backend", "reporting_backend",
				"backend_components.storage.description", "backend_components.gpu.min_value", "backend_components.gpu.max_value",
				"backend_settings.check_backend_id_uniqueness")...),
			check: func(t *testing.T, l *config.Loaded) {
				equal(t, "timezone", l.Timezone, "Europe/Tallinn")
				equal(t, "log_level", l.LogLevel, "INFO")
				s := l.Offerings[0].Settings.K8sUT
				equal(t, "kubeconfig_path", s.KubeconfigPath, "/etc/waldur/kubeconfig")
				equal(t, "namespace_prefix", s.NamespacePrefix, "ut-")
				equal(t, "default_role", s.DefaultRole, "readonly")
				equalMap(t, "role_mapping (long spellings normalised)", s.RoleMapping,
					map[string]string{"manager": "admin", "admin": "readwrite", "member": "readonly", "service_account": "readwrite", "course_account": "readonly"})
				equalMap(t, "component_quota_mapping (merged)", s.ComponentQuotaMapping,
					map[string]string{"cpu": "cpu", "ram": "memory", "storage": "storage", "gpu": "requests.nvidia.com/gpu"})
				equal(t, "keycloak_use_user_id", *s.KeycloakUseUserID, false)
				equal(t, "keycloak_url (slash added)", s.Keycloak.URL, "https://keycloak.example.org/auth/")
				equal(t, "keycloak_realm", s.Keycloak.Realm, "research")
				equal(t, "keycloak_username", s.Keycloak.Username, "site-agent")
				equal(t, "keycloak_password", s.Keycloak.Password.Reveal(), "k8sut-kc-password-41d8")
				equal(t, "keycloak_ssl_verify", *s.Keycloak.SSLVerify, true)
				equal(t, "cr_user_identity_field", s.CRUserIdentityField, "username")
				equal(t, "cr_user_identity_lowercase", s.CRUserIdentityLowercase, true)
				equalMap(t, "namespace_annotations", s.NamespaceAnnotations, map[string]string{"example.org/contact": "hpc-support"})
			},
		},
		{
			file:    "site-agent-rancher.yaml",
			backend: config.BackendRancher,
			warnings: append([]string{"sentry_dsn"}, o0(
				"order_processing_backend", "membership_sync_backend", "reporting_backend",
				"backend_settings.backend_url", "backend_settings.username", "backend_settings.password", "backend_settings.verify_cert")...),
			check: func(t *testing.T, l *config.Loaded) {
				equal(t, "log_level", l.LogLevel, "DEBUG")
				o := l.Offerings[0]
				equal(t, "uuid", o.WaldurOfferingUUID, "9f8e7d6c5b4a439281706f5e4d3c2b1a")
				equal(t, "gpu_h100 k8s_resource", o.BackendComponents["gpu_h100"].K8sResource, "nvidia.com/gpu-h100")
				equal(t, "gpu_h100 type", o.ComponentType("gpu_h100"), "gpu")
				s := o.Settings.Rancher
				equal(t, "cluster_id", s.ClusterID, "c-m-7hq2xw9d")
				equal(t, "default_role", s.DefaultRole, "project-member")
				equal(t, "binding_namespace (default)", s.BindingNamespace, "backing")
				equal(t, "keycloak_enabled", s.KeycloakEnabled, true)
				equal(t, "keycloak client_id (default)", s.Keycloak.ClientID, "admin-cli")
				equal(t, "keycloak_url", s.Keycloak.URL, "https://sso.example.org/")
			},
		},
		{
			file:    "site-agent-okd.yaml",
			backend: config.BackendOKD,
			warnings: append([]string{"sentry_dsn"}, o0(
				"order_processing_backend", "membership_sync_backend", "reporting_backend",
				"backend_settings.api_url", "backend_settings.token", "backend_settings.verify_cert", "backend_settings.token_config")...),
			check: func(t *testing.T, l *config.Loaded) {
				o := l.Offerings[0]
				// The site agent's web-STOMP keys are read (serve's events).
				equal(t, "stomp_enabled", o.StompEnabled, true)
				equal(t, "stomp_ws_host", o.StompWSHost, "waldur.internal")
				equal(t, "stomp_ws_port", o.StompWSPort, 15674)
				equal(t, "stomp_ws_path", o.StompWSPath, "/rmqws-stomp")
				equal(t, "verify_ssl", o.VerifiesSSL(), false)
				s := o.Settings.OKD
				equal(t, "allocation_prefix", s.AllocationPrefix, "alloc-")
				equalMap(t, "role_mapping", s.RoleMapping, map[string]string{"owner": "admin", "manager": "admin", "admin": "edit", "member": "view", "observer": "view", "service_account": "edit", "course_account": "view"})
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			l := mustLoad(t, filepath.Join("testdata", tc.file))
			if len(l.Offerings) != 1 {
				t.Fatalf("got %d offerings", len(l.Offerings))
			}
			equal(t, "backend_type", l.Offerings[0].BackendType, tc.backend)
			tok, err := l.Offerings[0].Token()
			if err != nil || tok == "" {
				t.Errorf("Token() = %v, %v; want the inline token", tok, err)
			}
			want := slices.Sorted(slices.Values(tc.warnings))
			if got := warningPaths(l.Warnings); !slices.Equal(got, want) {
				t.Errorf("warned about\n  %v\nwant\n  %v", got, want)
			}
			for _, w := range l.Warnings {
				if !strings.HasSuffix(w, "ignored by waldur-gitops") {
					t.Errorf("warning %q does not say the key is ignored", w)
				}
			}
			tc.check(t, l)
		})
	}
}

// Files that are not a config at all get one clear problem, not a cascade.
func TestNotAConfig(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		message    string
	}{
		{"empty", "", 0, "the file is empty"},
		{"only comments", "# nothing here\n\n", 0, "the file is empty"},
		{"only a document marker", "---\n", 0, "the file is empty"},
		{"not YAML", "offerings:\n  - name: x\n   waldur_api_url: [oops\n", 0, "not valid YAML"},
		{"tab indentation", "offerings:\n\t- name: x\n", 0, "not valid YAML"},
		{"top level is a list", "- name: x\n  backend_type: okd\n", 1, "the top level must be a mapping of keys (offerings, git, …), got a list"},
		{"top level is a string", "\n\ntop-level-token-4ae1\n", 3, "got a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ve, problems := mustFail(t, tc.text)
			if len(problems) != 1 {
				t.Fatalf("got %d problems, want 1:\n%s", len(problems), listProblems(problems))
			}
			p := problems[0]
			equal(t, "path", p.Path, "(file)")
			equal(t, "line", p.Line, tc.line)
			if !strings.Contains(p.Message, tc.message) {
				t.Errorf("message %q does not contain %q", p.Message, tc.message)
			}
			if strings.Contains(ve.Error(), "top-level-token-4ae1") {
				t.Errorf("the error quotes the file's content: %v", ve)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := config.Load(filepath.Join(t.TempDir(), "nope.yaml"))
		if err == nil || !strings.Contains(err.Error(), "read config") {
			t.Fatalf("err = %v, want a read error", err)
		}
		if config.IsValidation(err) {
			t.Error("a missing file is not a validation error")
		}
	})
}

func TestIsValidation(t *testing.T) {
	_, err := config.Load(writeConfig(t, "offerings: []\n"))
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"validation error", err, true},
		{"wrapped", fmt.Errorf("load: %w", err), true},
		{"other error", fmt.Errorf("read config: boom"), false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			equal(t, "IsValidation", config.IsValidation(tc.err), tc.want)
		})
	}
}

// Anchors, aliases and merge keys, as PyYAML accepts them, share settings between
// offerings.
func TestAnchorsAndAliases(t *testing.T) {
	const text = `
offerings:
  - name: first
    waldur_api_url: &api https://waldur.example.org/api/
    waldur_offering_uuid: 11111111111111111111111111111111
    backend_type: k8s-ut-namespace
    backend_components: &components
      cpu: {measured_unit: cores, accounting_type: limit, label: CPU}
      ram: {measured_unit: GiB, accounting_type: limit, label: RAM}
    backend_settings: &common
      namespace_prefix: shared-
      keycloak_enabled: true
      keycloak: &kc
        keycloak_url: https://kc.example.org/
        keycloak_realm: shared
      namespace_labels: &labels
        site: north
  - name: second
    waldur_api_url: *api
    waldur_offering_uuid: 22222222222222222222222222222222
    backend_type: k8s-ut-namespace
    backend_components: *components
    backend_settings: *common
  - name: third
    waldur_api_url: *api
    waldur_offering_uuid: 33333333333333333333333333333333
    backend_type: k8s-ut-namespace
    backend_settings:
      <<: *common
      namespace_prefix: third-
      keycloak:
        <<: *kc
        keycloak_realm: own
  - name: fourth
    waldur_api_url: *api
    waldur_offering_uuid: 44444444444444444444444444444444
    backend_type: namespace
    backend_settings:
      <<: [{quota_name: first-wins, namespace_prefix: a-}, {quota_name: second, group_prefix: "g:"}]
      namespace_labels:
        <<: *labels
        extra: "yes"
`
	l := mustParse(t, text)
	o := l.Offerings
	for i := range 3 {
		equal(t, o[i].Name+" url", o[i].WaldurAPIURL, "https://waldur.example.org/api/")
	}
	equal(t, "second: components from the alias", len(o[1].BackendComponents), 2)
	equal(t, "second: cpu label", o[1].BackendComponents["cpu"].Label, "CPU")
	s1, s2, s3 := o[0].Settings.K8sUT, o[1].Settings.K8sUT, o[2].Settings.K8sUT
	equal(t, "second: namespace_prefix", s2.NamespacePrefix, "shared-")
	equal(t, "second: keycloak_realm", s2.Keycloak.Realm, "shared")
	equalMap(t, "second: labels", s2.NamespaceLabels, map[string]string{"site": "north"})
	if s1 == s2 {
		t.Error("offerings sharing an anchor share one settings value")
	}
	equal(t, "third: namespace_prefix (own key wins)", s3.NamespacePrefix, "third-")
	equal(t, "third: keycloak_enabled (merged)", s3.KeycloakEnabled, true)
	equal(t, "third: keycloak_realm (own key wins)", s3.Keycloak.Realm, "own")
	equal(t, "third: keycloak_url (merged)", s3.Keycloak.URL, "https://kc.example.org/")
	s4 := o[3].Settings.Namespace
	equal(t, "fourth: quota_name (earlier merge wins)", s4.QuotaName, "first-wins")
	equal(t, "fourth: namespace_prefix", s4.NamespacePrefix, "a-")
	equal(t, "fourth: group_prefix", s4.GroupPrefix, "g:")
	equalMap(t, "fourth: labels", s4.NamespaceLabels, map[string]string{"site": "north", "extra": "yes"})

	t.Run("merged keys are still checked", func(t *testing.T) {
		_, problems := mustFail(t, oneOffering("namespace", "      <<: {namespace_prefix: Bad_, typo_key: 1}\n", ""))
		findProblem(t, problems, "offerings[0].backend_settings.namespace_prefix")
		findProblem(t, problems, "offerings[0].backend_settings.typo_key")
	})
	t.Run("merge of a non-mapping", func(t *testing.T) {
		_, problems := mustFail(t, oneOffering("namespace", "      <<: [1, 2]\n", ""))
		p := findProblem(t, problems, "offerings[0].backend_settings")
		if !strings.Contains(p.Message, "merge key") {
			t.Errorf("message %q", p.Message)
		}
	})
	// An anchor that contains its own alias is reported, not recursed into forever.
	t.Run("self-referencing alias", func(t *testing.T) {
		_, problems := mustFail(t, "offerings: &o [*o]\n")
		findProblem(t, problems, "offerings[0]")
	})
	t.Run("self-referencing merge key", func(t *testing.T) {
		_, problems := mustFail(t, "git: &g {<<: *g, branch: main}\n"+oneOffering("namespace", "", ""))
		p := findProblem(t, problems, "git")
		if !strings.Contains(p.Message, "refers to the value that contains it") {
			t.Errorf("message %q", p.Message)
		}
	})
}
