package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

var pvcsGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}

// TestQuotaShrinkHoldsOnARealCluster: a real kube-apiserver with
// kube-controller-manager, whose resourcequota controller counts a Pending
// PersistentVolumeClaim (no provisioner needed) toward requests.storage.
// Three profiles: the namespace profile's own ResourceQuota (applied from the
// render), and the quotas the ManagedNamespace operator and Rancher would
// make in the tenant namespace (created here as they would be, with their
// own names and, for the ManagedNamespace, the ResourceQuota keys of its
// spec.quota keys). An Update order cuts storage from 10Gi to 4Gi while a
// claim uses 6Gi: under the default quota_shrink (hold) each tenant keeps
// 10Gi and its order stays executing with the reason; once the claim is
// gone, the next run renders 4Gi and the order is done.
func TestQuotaShrinkHoldsOnARealCluster(t *testing.T) {
	c := kubetest.StartForTest(t, kubetest.Options{ControllerManager: true, Log: os.Stderr})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}

	type tenant struct {
		backend, settings, offering, slug, namespace string
		// liveQuota is the ResourceQuota another controller makes ("": the
		// render's own is applied); file the rendered file with the quota
		// and held/cut what it says before and after.
		liveQuota, file, held, cut string
		resource, order            waldur.UUID
	}
	tenants := []*tenant{
		{backend: "namespace", offering: "0ff00000000040008000000000000051", slug: "plain", namespace: "waldur-plain",
			file: "plain/cluster/waldur-plain/resourcequota-waldur-quota.yaml", held: "requests.storage: 10Gi", cut: "requests.storage: 4Gi"},
		{backend: "k8s-ut-namespace", offering: "0ff00000000040008000000000000052", slug: "managed", namespace: "waldur-managed", liveQuota: "managed-quota",
			file: "managed/cluster/waldur-managed/managednamespace-waldur-managed.yaml", held: "storage: 10Gi", cut: "storage: 4Gi"},
		{backend: "rancher", settings: "    backend_settings: {cluster_id: c-m-1}\n", offering: "0ff00000000040008000000000000053", slug: "ranch", namespace: "waldur-ranch", liveQuota: "default-quota",
			file: "ranch/management/waldur-ranch/", held: "requestsStorage: 10Gi", cut: "requestsStorage: 4096Mi"},
	}
	srv := waldurtest.New(t)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	text := "offerings:\n"
	for _, tn := range tenants {
		tn.resource = srv.AddResource(waldur.Resource{OfferingUUID: waldur.UUID(tn.offering), Slug: tn.slug, CustomerSlug: "cust", ProjectSlug: "proj", State: waldur.ResourceOK, Limits: waldur.Limits{"cpu": "2", "storage": "10"}})
		text += "- name: " + strings.Split(tn.file, "/")[0] + "\n  waldur_api_url: " + srv.URL() + "\n  waldur_offering_uuid: " + tn.offering +
			"\n  backend_type: " + tn.backend + "\n  backend_components:\n    cpu: {accounting_type: limit}\n    storage: {accounting_type: limit}\n" +
			strings.ReplaceAll(tn.settings, "backend_settings: {", "backend_settings: {kubeconfig_path: "+c.KubeconfigPath(kubetest.Admin)+", ")
		if tn.settings == "" {
			text += "  backend_settings: {kubeconfig_path: " + c.KubeconfigPath(kubetest.Admin) + "}\n"
		}
	}
	text = strings.ReplaceAll(text, "\n    backend_settings", "\n  backend_settings")
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	out := t.TempDir()
	e, err := engine.FromConfig(l.Config, engine.Options{Publish: engine.Directory, Dir: out, Orders: true})
	if err != nil {
		t.Fatal(err)
	}
	run := func(what string) *engine.Outcome {
		t.Helper()
		o := e.Run(ctx, engine.Request{Command: "sync"})
		if o.Err != nil {
			t.Fatalf("%s: %v\n%v", what, o.Err, o.Report.Changes)
		}
		return o
	}

	// The tenants as they are: in place, each with a claim of 6Gi.
	first := run("first run")
	for _, tn := range tenants {
		if tn.liveQuota == "" {
			applyTenant(ctx, t, c, first.Result, tn.resource)
		} else {
			createQuota(ctx, t, dyn, tn.namespace, tn.liveQuota, map[string]any{"limits.cpu": "2", "requests.storage": "10Gi"})
		}
		claim := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "data"},
			"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "6Gi"}}}}
		waitUsed(ctx, t, dyn, tn.namespace, "0") // the controller has counted the empty namespace
		if _, err := dyn.Resource(pvcsGVR).Namespace(tn.namespace).Create(ctx, &unstructured.Unstructured{Object: claim}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim in %s: %v", tn.namespace, err)
		}
		waitUsed(ctx, t, dyn, tn.namespace, "6Gi")
	}

	// The cut below usage is held.
	for _, tn := range tenants {
		tn.order = srv.AddOrder(waldur.UUID(tn.offering), waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting,
			MarketplaceResourceUUID: tn.resource, Limits: waldur.Limits{"cpu": "2", "storage": "4"}})
	}
	// A dry run shows every cut below usage and changes nothing.
	dry := e.Run(ctx, engine.Request{Command: "sync", DryRun: true})
	for _, tn := range tenants {
		if e := findEntry(dry.Report.Changes, "quota", string(tn.resource)); e == nil || !strings.Contains(e.Reason, "requests.storage used 6Gi, new 4Gi") {
			t.Errorf("%s: dry-run quota entry %+v", tn.backend, e)
		}
		if o, _ := srv.Order(tn.order); o.State != waldur.OrderExecuting {
			t.Errorf("%s: order %s after a dry run", tn.backend, o.State)
		}
	}
	held := run("held")
	for _, tn := range tenants {
		assertFile(t, out, tn.file, tn.held)
		if o, _ := srv.Order(tn.order); o.State != waldur.OrderExecuting {
			t.Errorf("%s: order %s while usage is above the cut", tn.backend, o.State)
		}
		e := findEntry(held.Report.Changes, "quota", string(tn.resource))
		if e == nil || e.Action != changeset.Skip || !strings.Contains(e.Reason, "requests.storage used 6Gi, new 4Gi, in place 10Gi") {
			t.Errorf("%s: quota entry %+v", tn.backend, e)
		}
		if e := findEntry(held.Report.Changes, "orders", string(tn.resource)); e == nil || !strings.Contains(e.Reason, "waiting for usage to drop below the new quota") {
			t.Errorf("%s: order entry %+v", tn.backend, e)
		}
	}

	// Usage drops: the cut is made and the order done.
	for _, tn := range tenants {
		// No pvc-protection controller runs: drop its finalizer, or the
		// claim stays Terminating and counted.
		if _, err := dyn.Resource(pvcsGVR).Namespace(tn.namespace).Patch(ctx, "data", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := dyn.Resource(pvcsGVR).Namespace(tn.namespace).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUsed(ctx, t, dyn, tn.namespace, "0")
	}
	done := run("done")
	for _, tn := range tenants {
		assertFile(t, out, tn.file, tn.cut)
		if o, _ := srv.Order(tn.order); o.State != waldur.OrderDone {
			t.Errorf("%s: order %s once usage fits; report %v", tn.backend, o.State, done.Report.Changes)
		}
		if e := findEntry(done.Report.Changes, "quota", string(tn.resource)); e != nil {
			t.Errorf("%s: quota entry once usage fits: %+v", tn.backend, e)
		}
	}
}

// applyTenant applies a rendered tenant's files to the cluster, namespace first.
func applyTenant(ctx context.Context, t *testing.T, c *kubetest.Cluster, res *render.Result, id waldur.UUID) {
	t.Helper()
	for _, tn := range res.Tenants {
		if tn.Resource != id {
			continue
		}
		dir := t.TempDir()
		var files []string
		for _, f := range tn.Files {
			if f.Name == render.KustomizationFile {
				continue
			}
			p := filepath.Join(dir, f.Name)
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(f.Name, "namespace-") {
				files = append([]string{p}, files...)
			} else {
				files = append(files, p)
			}
		}
		if _, err := c.ApplyFiles(ctx, files...); err != nil {
			t.Fatalf("apply %s: %v", tn.Dir, err)
		}
	}
}

// createQuota makes a namespace and a ResourceQuota in it, as an operator would.
func createQuota(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns, name string, hard map[string]any) {
	t.Helper()
	if _, err := dyn.Resource(kube.NamespacesGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	q := map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": map[string]any{"name": name}, "spec": map[string]any{"hard": hard}}
	if _, err := dyn.Resource(kube.ResourceQuotasGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: q}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitUsed waits until every quota of ns reports want as requests.storage used.
func waitUsed(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns, want string) {
	t.Helper()
	for {
		l, err := dyn.Resource(kube.ResourceQuotasGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		ok := err == nil && len(l.Items) > 0
		for _, q := range l.Items {
			used, _, _ := unstructured.NestedString(q.Object, "status", "used", "requests.storage")
			ok = ok && used == want
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s to use %s of requests.storage: %v %v", ns, want, err, l)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// assertFile checks that the file at rel (or, for a prefix ending in /, the
// one file of that directory starting with project-) contains want.
func assertFile(t *testing.T, dir, rel, want string) {
	t.Helper()
	if strings.HasSuffix(rel, "/") {
		m, _ := filepath.Glob(filepath.Join(dir, rel, "project-*.yaml"))
		if len(m) != 1 {
			t.Fatalf("project files in %s: %v", rel, m)
		}
		rel = strings.TrimPrefix(m[0], dir+"/")
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), want) {
		t.Errorf("%s lacks %q:\n%s", rel, want, b)
	}
}

func findEntry(es []changeset.Entry, stage, resource string) *changeset.Entry {
	for i := range es {
		if es[i].Stage == stage && es[i].Resource == resource {
			return &es[i]
		}
	}
	return nil
}
