package apply_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
)

// backingNamespaces are the Rancher project namespaces of the example, which
// Rancher creates once a Project exists.
var backingNamespaces = []string{"c-m-4xk2p9q7-p-7hd2k", "c-m-4xk2p9q7-p-66c12061a482", "c-m-4xk2p9q7-p-9e161e6c11cb"}

// withSiteTemplate gives the "Plain namespaces" offering one more site
// template, next to the example's own.
func withSiteTemplate(t *testing.T, cfg *config.Config, name, text string) {
	t.Helper()
	dir := t.TempDir()
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		if o.Name != "Plain namespaces" {
			continue
		}
		entries, err := os.ReadDir(o.TemplatesDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(o.TemplatesDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		o.TemplatesDir = dir
	}
}

// A LimitRange no API server takes: "lots" is no quantity.
const badLimitRange = `apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
  namespace: "{{ .Namespace }}"
spec:
  limits:
    - type: Container
      default:
        cpu: lots
`

// ValidateServer dry-runs every rendered object: what the API server rejects is
// an error carrying its message; objects in namespaces that do not exist yet
// are validated all the same; nothing is stored; conflicts do not count.
func TestValidateServer(t *testing.T) {
	c := startCluster(t, []string{crdManagedNamespace, crdRancher})
	cfg, st := loadExample(t)
	// The backing namespaces are left out: Rancher would make them later.
	c.prepareNamespaces(renderState(t, cfg.Config, st), backingNamespaces...)
	admin := apply.Options{Kubeconfig: c.KubeconfigPath(kubetest.Admin)}

	t.Run("rejected objects carry the API server's message", func(t *testing.T) {
		cfg, st := loadExample(t)
		withSiteTemplate(t, cfg.Config, "limitrange.yaml", badLimitRange)
		res := renderState(t, cfg.Config, st)
		got, err := apply.ValidateServer(context.Background(), cfg.Config, res, admin)
		rejected := map[string]bool{}
		for _, e := range unjoin(err) {
			var oe *apply.ObjectError
			if !errors.As(e, &oe) || oe.Conflict {
				t.Errorf("unexpected error: %v", e)
				continue
			}
			rejected[oe.Subject] = true
			if !strings.Contains(e.Error(), "quantities must match the regular expression") {
				t.Errorf("the API server's message is missing: %v", e)
			}
		}
		want := map[string]changeset.Action{}
		for _, ns := range []string{"tenant-genome-portal", "tenant-ml-inference", "tenant-restricted-staging"} {
			s := "LimitRange/" + ns + "/defaults"
			want[s] = changeset.Skip
			if !rejected[s] {
				t.Errorf("%s not rejected", s)
			}
		}
		// Everything else would be created: the cluster has none of it yet.
		checkActions(t, got.Changes, want, changeset.Create)
		for _, e := range got.Changes.Entries {
			if e.Stage != apply.StageValidate {
				t.Errorf("%s: stage %q", e.Subject, e.Stage)
			}
		}
		if got.Calls["create"] == 0 {
			t.Error("no object was validated in the surrogate namespace")
		}
		for _, ns := range []string{"tenant-genome-portal", "okd-climate-dashboards", "gpu-llm-finetune"} {
			if c.get(gvrNamespace, "", ns) != nil {
				t.Errorf("validation created namespace %s", ns)
			}
		}
		if c.get(gvrProject, "c-m-4xk2p9q7", "p-7hd2k") != nil || c.get(gvrManagedNS, "waldur-system", "waldur-genomics-pipeline") != nil {
			t.Error("validation stored a custom resource")
		}
	})

	t.Run("after an apply everything validates unchanged, conflicts aside", func(t *testing.T) {
		cfg, st := loadExample(t)
		res := renderState(t, cfg.Config, st)
		c.prepareNamespaces(res)
		opts := admin
		opts.Guard = guard.DefaultOptions()
		if _, err := apply.Apply(context.Background(), cfg.Config, res, opts); err != nil {
			t.Fatal(err)
		}
		c.ssa(gvrQuota, "argocd-controller", map[string]any{
			"apiVersion": "v1", "kind": "ResourceQuota",
			"metadata": map[string]any{"name": "waldur-quota", "namespace": "tenant-genome-portal"},
			"spec":     map[string]any{"hard": map[string]any{"limits.cpu": "3"}},
		})
		got, err := apply.ValidateServer(context.Background(), cfg.Config, res, admin)
		if err != nil {
			t.Fatalf("a field owned by another manager failed validation: %v", err)
		}
		checkActions(t, got.Changes, map[string]changeset.Action{"ResourceQuota/tenant-genome-portal/waldur-quota": changeset.Update}, changeset.Unchanged)
		if got.Calls["delete"] != 0 {
			t.Error("validation deleted something")
		}
	})
}

// Objects in a namespace that neither exists nor is rendered wait for it: the
// ProjectRoleTemplateBinding goes into the backing namespace Rancher creates
// after the Project. A namespace nobody creates is reported by name.
func TestNamespaceMadeByAController(t *testing.T) {
	c := startCluster(t, []string{crdManagedNamespace, crdRancher})
	cfg, st := loadExample(t)
	res := renderState(t, cfg.Config, st)
	c.prepareNamespaces(res, backingNamespaces...)

	// Play Rancher: a project's backing namespace appears once the Project does.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rancher := make(chan error, 1)
	go func() { rancher <- playRancher(ctx, c) }()

	opts := apply.Options{Kubeconfig: c.KubeconfigPath(kubetest.Admin), Guard: guard.DefaultOptions()}
	got, err := apply.Apply(context.Background(), cfg.Config, res, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkActions(t, got.Changes, nil, changeset.Create)
	cancel()
	if err := <-rancher; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}

	// The k8s-ut offering pointed at a cr_namespace that does not exist.
	for i := range cfg.Offerings {
		if s := cfg.Offerings[i].Settings.K8sUT; s != nil {
			s.CRNamespace = "waldur-absent"
		}
	}
	opts.NamespaceWait = 1 // the shortest wait: one look
	got, err = apply.Apply(context.Background(), cfg.Config, renderState(t, cfg.Config, st), opts)
	if err == nil || !strings.Contains(err.Error(), `namespace "waldur-absent" does not exist`) {
		t.Fatalf("want the missing namespace named, got %v", err)
	}
	for _, e := range got.Changes.Entries {
		switch {
		case e.Offering != "UT namespaces":
			if e.Action != changeset.Unchanged {
				t.Errorf("%s: %s", e.Subject, e.Action)
			}
		case strings.HasPrefix(e.Subject, "ManagedNamespace/waldur-absent/"):
			if e.Action != changeset.Skip {
				t.Errorf("%s: %s", e.Subject, e.Action)
			}
		default: // the ones in waldur-system: their tenants failed, so they are kept
			if e.Action != changeset.Skip || !strings.HasPrefix(e.Reason, "kept:") {
				t.Errorf("%s: %s %q, want kept", e.Subject, e.Action, e.Reason)
			}
		}
	}
	if c.get(gvrManagedNS, "waldur-system", "waldur-genomics-pipeline") == nil {
		t.Error("the ManagedNamespace of a failed tenant was pruned")
	}
}

// playRancher creates the backing namespace of every Project that appears.
func playRancher(ctx context.Context, c *testCluster) error {
	made := map[string]bool{}
	for len(made) < len(backingNamespaces) {
		l, err := c.resource(gvrProject, "").List(ctx, listAll)
		if err != nil {
			return err
		}
		for _, p := range l.Items {
			ns := p.GetNamespace() + "-" + p.GetName()
			if made[ns] {
				continue
			}
			if _, err := c.resource(gvrNamespace, "").Create(ctx, namespace(ns), createOpts); err != nil {
				return err
			}
			made[ns] = true
		}
		if err := sleep(ctx); err != nil {
			return err
		}
	}
	return nil
}
