package apply_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// notesType is the fifth, test-only backend: a namespace per tenant,
// annotated with a note from its settings, and a ConfigMap of notes about the
// tenant. Its whole registration is registerNotes.
const notesType = "namespace-notes"

var kindConfigMap = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// notesSettings are the notes backend's backend_settings.
type notesSettings struct {
	config.CommonSettings `yaml:",inline"`
	NamespacePrefix       string `yaml:"namespace_prefix"`
	Note                  string `yaml:"note"`
}

func (s *notesSettings) Common() *config.CommonSettings { return &s.CommonSettings }

// notesProfile names each tenant's namespace <namespace_prefix><slug> and
// annotates it with the note.
type notesProfile struct{}

func (notesProfile) Fill(o *config.Offering, r *waldur.Resource, d *render.TenantData) error {
	s := o.Settings.Custom.(*notesSettings)
	if r.Slug == "" {
		return errors.New("resource has no slug: its namespace cannot be named")
	}
	d.Name = s.NamespacePrefix + r.Slug
	d.NamespaceAnnotations = map[string]string{"example.org/note": s.Note}
	return nil
}

func (notesProfile) Claims(d *render.TenantData) []string { return []string{d.Name} }

// registerNotes registers the notes backend for the length of the test: its
// settings and their checks, its render profile, templates, target and
// kinds, and a diagnose row checking its cluster serves ConfigMaps.
func registerNotes(t *testing.T) {
	t.Helper()
	backend.Register(backend.Backend{
		Type:     notesType,
		Order:    50,
		Settings: func() any { return &notesSettings{NamespacePrefix: "notes-"} },
		CheckSettings: func(s any, problem func(key, msg string)) {
			if s.(*notesSettings).Note == "" {
				problem("note", "required: the note every namespace is annotated with")
			}
		},
		Render: notesProfile{},
		Templates: fstest.MapFS{
			notesType + "/namespace.yaml": {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: \"{{ .Name }}\"\n  annotations: \"{{ optional .NamespaceAnnotations }}\"\n")},
			notesType + "/notes.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: waldur-notes\n  namespace: \"{{ .Name }}\"\n" +
				"data:\n  offering: \"{{ .Offering.Name }}\"\n  resource: \"{{ .Resource.UUID }}\"\n")},
		},
		DefaultTarget: backend.TargetCluster,
		Targets:       []string{backend.TargetCluster},
		Kinds:         map[string][]schema.GroupVersionKind{backend.TargetCluster: {backend.KindNamespace, kindConfigMap}},
		Diagnose: func(o backend.Offering) []backend.Row {
			return []backend.Row{{Name: "notes configmaps", Target: o.Kubeconfig, Run: func(ctx context.Context) (string, error) {
				return configMapsServed(o)
			}}}
		},
	})
	t.Cleanup(func() { backend.Unregister(notesType) })
}

// configMapsServed is the notes backend's diagnose row: the offering's
// cluster serves ConfigMaps.
func configMapsServed(o backend.Offering) (string, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.KubeconfigContext}).ClientConfig()
	if err != nil {
		return "", err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return "", err
	}
	rl, err := dc.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return "", err
	}
	for _, r := range rl.APIResources {
		if r.Name == "configmaps" {
			return "configmaps served", nil
		}
	}
	return "", errors.New("the cluster serves no configmaps")
}

// notesConfig writes a config with one offering of the notes backend (the
// example's plain-namespace offering, so the example snapshot covers it) on
// the cluster of kubeconfig, with the given note, and loads it.
func notesConfig(t *testing.T, kubeconfig, note string) (*config.Loaded, error) {
	t.Helper()
	y := `git: {url: https://git.example.org/platform/tenants.git, branch: main, path: waldur, author_name: waldur-gitops, author_email: waldur-gitops@example.org}
offerings:
  - name: Team notes
    waldur_api_url: https://waldur.example.org
    waldur_offering_uuid: 66c0217f031fec833da0e057be1c007e
    backend_type: ` + notesType + `
    backend_components:
      cpu: {measured_unit: cores, accounting_type: limit, label: CPU}
      ram: {measured_unit: GiB, accounting_type: limit, label: RAM}
    backend_settings:
      note: "` + note + `"
      kubeconfig_path: ` + kubeconfig + "\n"
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Load(p)
}

// TestFifthBackend registers a backend in one place and shows config
// accepting it, render filling its templates, apply creating and inventorying
// its objects on a real kube-apiserver, and diagnose running its row.
func TestFifthBackend(t *testing.T) {
	registerNotes(t)
	if !slices.Contains(backend.Types(), notesType) {
		t.Fatalf("types %v lack %s", backend.Types(), notesType)
	}
	c := startCluster(t, nil)
	admin := c.KubeconfigPath(kubetest.Admin)
	if _, err := notesConfig(t, admin, ""); err == nil || !strings.Contains(err.Error(), "backend_settings.note") || !strings.Contains(err.Error(), "required: the note") {
		t.Fatalf("a config without a note: %v, want the backend's check to refuse it", err)
	}
	cfg, err := notesConfig(t, admin, "kept by the notes backend")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := cfg.Offerings[0].Settings.Custom.(*notesSettings); !ok || s.NamespacePrefix != "notes-" || s.Common().KubeconfigPath != admin {
		t.Fatalf("settings %+v, want the notes backend's with their default prefix", cfg.Offerings[0].Settings)
	}
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	st := &waldur.State{}
	for _, o := range snap.State.Offerings {
		if o.Name == "Plain namespaces" {
			o.Name = "Team notes"
			st.Offerings = append(st.Offerings, o)
		}
	}
	res := renderState(t, cfg.Config, st)
	var notes []string
	for _, tn := range res.Tenants {
		if !strings.HasPrefix(tn.Dir, "team-notes/cluster/notes-") {
			t.Errorf("tenant directory %s, want team-notes/cluster/notes-…", tn.Dir)
		}
		for _, o := range tn.Objects {
			switch o.Kind() {
			case "ConfigMap":
				notes = append(notes, o.Namespace())
			case "Namespace":
				if a, _ := o.Metadata()["annotations"].(map[string]any); a["example.org/note"] != "kept by the notes backend" {
					t.Errorf("namespace %s annotations %v, want the note", o.Name(), a)
				}
			}
		}
	}
	if len(notes) == 0 || len(notes) != len(res.Tenants) {
		t.Fatalf("%d ConfigMaps for %d tenants", len(notes), len(res.Tenants))
	}

	applyNotes(t, c, cfg.Config, res, notes)
	diagnoseNotes(t, cfg.Config, admin)
}

// applyNotes applies the notes tenants twice (create, then unchanged) and
// then without one tenant, whose ConfigMap is pruned: the registered kinds
// are inventoried.
func applyNotes(t *testing.T, c *testCluster, cfg *config.Config, res *render.Result, notes []string) {
	t.Helper()
	ctx := context.Background()
	opts := apply.Options{Guard: guard.DefaultOptions()}
	for i, want := range []changeset.Action{changeset.Create, changeset.Unchanged} {
		got, err := apply.Apply(ctx, cfg, res, opts)
		if err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
		for _, e := range got.Changes.Entries {
			if e.Action != want {
				t.Errorf("apply %d: %s %s, want %s", i, e.Subject, e.Action, want)
			}
		}
	}
	for _, ns := range notes {
		if cm := c.get(gvrConfigMap, ns, "waldur-notes"); cm == nil || cm.Object["data"].(map[string]any)["offering"] != "Team notes" {
			t.Errorf("ConfigMap %s/waldur-notes: %v", ns, cm)
		}
	}
	gone := res.Tenants[len(res.Tenants)-1]
	fewer := *res
	fewer.Tenants = res.Tenants[:len(res.Tenants)-1]
	got, err := apply.Apply(ctx, cfg, &fewer, opts)
	if err != nil {
		t.Fatalf("apply without %s: %v", gone.Name, err)
	}
	pruned := subjects(got.Changes, changeset.Delete)
	if !slices.Contains(pruned, "ConfigMap/"+gone.Name+"/waldur-notes") {
		t.Errorf("pruned %v, want the ConfigMap of %s among them", pruned, gone.Name)
	}
}

// diagnoseNotes runs diagnose over the notes config and finds the backend's
// row passing against the cluster.
func diagnoseNotes(t *testing.T, cfg *config.Config, kubeconfig string) {
	t.Helper()
	offline := errors.New("offline in this test")
	checks := diagnose.Checks(cfg, "", diagnose.Deps{
		Waldur:   func(*config.Offering) (diagnose.WaldurAPI, error) { return nil, offline },
		Git:      func(config.Git) (diagnose.GitRemote, error) { return nil, offline },
		Keycloak: func(config.KeycloakSettings) (diagnose.Keycloak, error) { return nil, offline },
		Cluster:  func(s kube.Source) (diagnose.ClusterAPI, error) { return diagnose.NewCluster(s, 10*time.Second) },
	})
	rs := diagnose.Run(context.Background(), checks, diagnose.Options{})
	i := slices.IndexFunc(rs, func(r diagnose.Result) bool { return r.Name == "notes configmaps" })
	if i < 0 {
		t.Fatalf("no notes row in %+v", rs)
	}
	if r := rs[i]; !r.OK || r.Detail != "configmaps served" || r.Target != kubeconfig || !slices.Equal(r.Offerings, []string{"Team notes"}) {
		t.Errorf("notes row %+v", r)
	}
}
