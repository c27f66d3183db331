package apply

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/render"
)

// defaultKinds must name every kind the default templates render, or pruning
// would miss the last object of a kind once no tenant renders it.
func TestDefaultKindsCoverDefaultTemplates(t *testing.T) {
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	for i := range cfg.Offerings {
		cfg.Offerings[i].TemplatesDir = "" // default templates only
	}
	res := exampletest.Render(t, cfg.Config, st)
	backend := map[string]string{}
	for _, o := range cfg.Offerings {
		backend[o.Name] = o.BackendType
	}
	seen := map[string]bool{}
	for _, tn := range res.Tenants {
		bt := backend[tn.Offering]
		seen[bt] = true
		for _, o := range tn.Objects {
			gvk := schema.FromAPIVersionAndKind(o.APIVersion(), o.Kind())
			if !slices.Contains(defaultKinds[bt][tenantTarget(tn)], gvk) {
				t.Errorf("%s renders %s to %s, which defaultKinds lacks", bt, gvk, tenantTarget(tn))
			}
		}
	}
	if len(seen) != len(config.BackendTypes) {
		t.Errorf("the example covers backend types %v, want all of %v", seen, config.BackendTypes)
	}
}

func TestTemplateKinds(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"networkpolicy.yaml": "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: x\n  namespace: \"{{ .Namespace }}\"\n",
		"two.yml": "x-render:\n  target: management\n  when: \"{{ .X }}\"\napiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w}\n" +
			"---\napiVersion: v1\nkind: \"{{ .Kind }}\"\nmetadata: {name: templated}\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"README.md": "kind: NotATemplate\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := templateKinds(dir, render.TargetDownstream)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]schema.GroupVersionKind{
		render.TargetDownstream: {{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}, {Version: "v1", Kind: "ConfigMap"}},
		render.TargetManagement: {{Group: "example.org", Version: "v1", Kind: "Widget"}},
	}
	for target, kinds := range want {
		for _, k := range kinds {
			if !slices.Contains(got[target], k) {
				t.Errorf("%s: %s missing from %v", target, k, got[target])
			}
		}
		if len(got[target]) != len(kinds) {
			t.Errorf("%s: got %v, want %v", target, got[target], kinds)
		}
	}
}

// Which kubeconfig and context each offering target uses.
func TestSourceFor(t *testing.T) {
	const head = "offerings:\n  - {name: r, waldur_api_url: \"https://w.example.org\", waldur_offering_uuid: 41e0012c52dd79ad2bebfde833ef9fe7, backend_type: rancher, backend_settings: "
	cases := []struct {
		name       string
		settings   string
		flag       string
		management source
		downstream source
	}{
		{name: "client-go defaults", settings: "{cluster_id: c-1}"},
		{name: "one cluster", settings: "{cluster_id: c-1, kubeconfig_path: /k, kubeconfig_context: a}",
			management: source{Path: "/k", Context: "a"}, downstream: source{Path: "/k", Context: "a"}},
		{name: "management elsewhere", settings: "{cluster_id: c-1, kubeconfig_path: /k, kubeconfig_context: a, management_kubeconfig_path: /m}",
			management: source{Path: "/m", Context: ""}, downstream: source{Path: "/k", Context: "a"}},
		{name: "management context only", settings: "{cluster_id: c-1, kubeconfig_path: /k, management_kubeconfig_context: local}",
			management: source{Path: "/k", Context: "local"}, downstream: source{Path: "/k", Context: ""}},
		{name: "the flag replaces every key", settings: "{cluster_id: c-1, kubeconfig_path: /k, kubeconfig_context: a, management_kubeconfig_path: /m}",
			flag: "/flag", management: source{Path: "/flag", Context: ""}, downstream: source{Path: "/flag", Context: ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := config.Parse([]byte(head+tc.settings+"}\n"), "/etc/waldur-gitops/config.yaml")
			if err != nil {
				t.Fatal(err)
			}
			o := Options{Kubeconfig: tc.flag}
			off := &l.Offerings[0]
			if got := o.sourceFor(off, render.TargetManagement); got != tc.management {
				t.Errorf("management: %+v, want %+v", got, tc.management)
			}
			if got := o.sourceFor(off, render.TargetDownstream); got != tc.downstream {
				t.Errorf("downstream: %+v, want %+v", got, tc.downstream)
			}
		})
	}
}

// A kubeconfig that does not exist is an error naming it, not a silent
// fallback to another cluster.
func TestMissingKubeconfig(t *testing.T) {
	_, err := source{Path: filepath.Join(t.TempDir(), "absent")}.RESTConfig()
	if err == nil {
		t.Fatal("no error for a missing kubeconfig")
	}
}

// A cluster that cannot be reached fails every tenant on it, reported per
// object, and the run: nothing is half-known.
func TestUnreachableCluster(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	text := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}\n" +
		"users:\n- name: u\n  user: {token: x}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	res := exampletest.Render(t, cfg.Config, st)
	for _, validate := range []bool{false, true} {
		run := Apply
		if validate {
			run = ValidateServer
		}
		got, err := run(context.Background(), cfg.Config, res, Options{Kubeconfig: kc})
		if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Fatalf("validate=%v: want an error naming the cluster, got %v", validate, err)
		}
		for _, e := range got.Changes.Entries {
			if e.Action != changeset.Skip || !strings.Contains(e.Reason, "cluster unreachable") {
				t.Errorf("%s: %s %q", e.Subject, e.Action, e.Reason)
			}
		}
		if len(got.Changes.Entries) == 0 || got.Calls["apply"] != 0 {
			t.Errorf("validate=%v: %d entries, calls %v", validate, len(got.Changes.Entries), got.Calls)
		}
	}
}
