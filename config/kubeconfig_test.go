package config_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// The kubeconfig keys of backend_settings: relative paths are resolved against
// the config file like every other path, and the Rancher management keys exist
// only for rancher offerings.
func TestKubeconfigKeys(t *testing.T) {
	const head = "offerings:\n  - {name: a, waldur_api_url: \"https://w.example.org\", waldur_offering_uuid: " + validUUID + ", "
	cases := []struct {
		name     string
		settings string
		backend  string
		wantPath string // relative to the config's directory; "" for none
		wantMgmt string
		wantCtx  string
		problem  string
	}{
		{name: "relative path", backend: "namespace", settings: "{kubeconfig_path: kube/site.yaml, kubeconfig_context: prod}",
			wantPath: "kube/site.yaml", wantCtx: "prod"},
		{name: "absolute path kept", backend: "okd", settings: "{kubeconfig_path: /etc/kube/config}", wantPath: "/etc/kube/config"},
		{name: "rancher management", backend: "rancher",
			settings: "{cluster_id: c-1, kubeconfig_path: downstream.yaml, management_kubeconfig_path: local.yaml, management_kubeconfig_context: local}",
			wantPath: "downstream.yaml", wantMgmt: "local.yaml"},
		{name: "management keys are rancher only", backend: "namespace", settings: "{management_kubeconfig_path: local.yaml}",
			problem: "management_kubeconfig_path"},
		{name: "padded context", backend: "k8s-ut-namespace", settings: "{kubeconfig_context: \" prod\"}",
			problem: "kubeconfig_context"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := head + "backend_type: " + tc.backend + ", backend_settings: " + tc.settings + "}\n"
			if tc.problem != "" {
				_, problems := mustFail(t, text)
				for _, p := range problems {
					if strings.HasSuffix(p.Path, tc.problem) {
						return
					}
				}
				t.Fatalf("no problem at %s: %v", tc.problem, problems)
			}
			path := writeConfig(t, text)
			l := mustLoad(t, path)
			dir := filepath.Dir(path)
			abs := func(p string) string {
				if p == "" || filepath.IsAbs(p) {
					return p
				}
				return filepath.Join(dir, p)
			}
			c := l.Offerings[0].Settings.Common()
			equal(t, "kubeconfig_path", c.KubeconfigPath, abs(tc.wantPath))
			equal(t, "kubeconfig_context", c.KubeconfigContext, tc.wantCtx)
			if r := l.Offerings[0].Settings.Rancher; r != nil {
				equal(t, "management_kubeconfig_path", r.ManagementKubeconfigPath, abs(tc.wantMgmt))
			}
		})
	}
}
