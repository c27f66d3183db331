package apply_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/waldur"
)

var (
	gvrClusterRoleBinding = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	gvrAccessReview       = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}
)

// Each mode runs as a user bound to nothing but its ClusterRole from
// examples/rbac, which proves the role is enough; before the binding the same
// run is forbidden, which proves the check means something.
func TestExampleRBACIsEnough(t *testing.T) {
	c := startCluster(t, []string{crdManagedNamespace, crdRancher}, "applier", "validator", "reporter")
	files, err := filepath.Glob("../examples/rbac/*.yaml")
	if err != nil || len(files) != 4 {
		t.Fatalf("want the four example roles (apply, validate-server, report, capacity), got %v %v", files, err)
	}
	if _, err := c.ApplyFiles(context.Background(), files...); err != nil {
		t.Fatal(err)
	}
	// bind binds user to role and waits until the authorizer has seen it
	// (it learns of new bindings asynchronously): until verb on
	// resourcequotas is allowed.
	bind := func(user, role, verb string) {
		c.create(gvrClusterRoleBinding, map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": map[string]any{"name": user},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			review := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
				"spec": map[string]any{"user": user, "resourceAttributes": map[string]any{"verb": verb, "resource": "resourcequotas"}},
			}}
			got, err := c.resource(gvrAccessReview, "").Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ok, _, _ := unstructured.NestedBool(got.Object, "status", "allowed"); ok {
				return
			}
			if err := sleep(ctx); err != nil {
				t.Fatalf("%s is still not allowed to %s resourcequotas", user, verb)
			}
		}
	}
	cfg, st := loadExample(t)
	for i := range cfg.Offerings {
		cfg.Offerings[i].TemplatesDir = "" // the roles cover the default templates
	}
	res := renderState(t, cfg.Config, st)
	c.prepareNamespaces(res)
	as := func(user string) apply.Options {
		return apply.Options{Kubeconfig: c.KubeconfigPath(user), Guard: guard.DefaultOptions()}
	}
	forbidden := func(t *testing.T, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Fatalf("want forbidden before the binding, got %v", err)
		}
	}

	t.Run("validate-server", func(t *testing.T) {
		_, err := apply.ValidateServer(context.Background(), cfg.Config, res, as("validator"))
		forbidden(t, err)
		bind("validator", "waldur-gitops-validate-server", "patch")
		got, err := apply.ValidateServer(context.Background(), cfg.Config, res, as("validator"))
		if err != nil {
			t.Fatal(err)
		}
		checkActions(t, got.Changes, nil, changeset.Create)
	})

	t.Run("apply", func(t *testing.T) {
		_, err := apply.Apply(context.Background(), cfg.Config, res, as("applier"))
		forbidden(t, err)
		bind("applier", "waldur-gitops-apply", "delete")
		got, err := apply.Apply(context.Background(), cfg.Config, res, as("applier"))
		if err != nil {
			t.Fatal(err)
		}
		checkActions(t, got.Changes, nil, changeset.Create)
		// Pruning: a tenant of every profile terminated at once.
		cfg2, st2 := loadExample(t)
		for i := range cfg2.Offerings {
			cfg2.Offerings[i].TemplatesDir = ""
		}
		for i, name := range []string{"Genome portal", "Climate dashboards", "Genomics pipeline", "LLM fine-tuning"} {
			terminate(name, terminateOrder[:31]+waldur.UUID(rune('a'+i)))(t, st2)
		}
		got, err = apply.Apply(context.Background(), cfg2.Config, renderState(t, cfg2.Config, st2), as("applier"))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(got.Changes.ByAction(changeset.Delete)); n < 4*2 {
			t.Errorf("only %d deletions: %v", n, subjects(got.Changes, changeset.Delete))
		}
		if got.Changes.Counts()[changeset.Skip] != 0 {
			t.Errorf("skipped: %v", subjects(got.Changes, changeset.Skip))
		}
	})

	// The report command (and diagnose, and the applied check of orders)
	// read the cluster through kube.Reader: namespaces and quotas, status
	// included.
	t.Run("report", func(t *testing.T) {
		reader, err := kube.Open(kube.Source{Path: c.KubeconfigPath("reporter")})
		if err != nil {
			t.Fatal(err)
		}
		forbidden(t, reader.CanList(context.Background()))
		bind("reporter", "waldur-gitops-report", "list")
		// The quota controller is not running here: write a status as it would.
		q := c.get(gvrQuota, "tenant-ml-inference", "waldur-quota")
		hard, _, _ := unstructured.NestedStringMap(q.Object, "spec", "hard")
		used := map[string]any{}
		for k := range hard {
			used[k] = "1"
		}
		q.Object["status"] = map[string]any{"hard": toAny(hard), "used": used}
		if _, err := c.resource(gvrQuota, "tenant-ml-inference").UpdateStatus(context.Background(), q, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := reader.CanList(context.Background()); err != nil {
			t.Fatal(err)
		}
		nss, err := reader.Namespaces(context.Background(), manifest.LabelResourceUUID)
		if err != nil {
			t.Fatal(err)
		}
		if len(nss) < 5 {
			t.Errorf("read %d tenant namespaces: %+v", len(nss), nss)
		}
		if ns, err := reader.Namespace(context.Background(), "tenant-ml-inference"); err != nil || ns == nil {
			t.Errorf("read the namespace: %v %v", ns, err)
		}
		quotas, err := reader.Quotas(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, q := range quotas {
			if q.Namespace == "tenant-ml-inference" {
				found = true
				if u := q.Used["limits.cpu"]; u.String() != "1" {
					t.Errorf("status.used read as %v", q.Used)
				}
			}
		}
		if !found {
			t.Errorf("the tenant's quota was not read: %+v", quotas)
		}
	})
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
