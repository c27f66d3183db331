package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestNamespacePodWithoutResourcesIsAdmitted applies a namespace-profile tenant
// to a real kube-apiserver with kube-controller-manager (which fills the quota's
// status) and creates a Pod that sets no resources: the tenant's LimitRange
// gives it defaults, so admission lets it in under the quota on limits.cpu and
// limits.memory. The same tenant without its LimitRange refuses the Pod — the
// reason the LimitRange is there. Nothing schedules the Pod; creation is what
// admission decides.
func TestNamespacePodWithoutResourcesIsAdmitted(t *testing.T) {
	c := kubetest.StartForTest(t, kubetest.Options{ControllerManager: true, Log: os.Stderr})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustConfig(t, "namespace", "", "")
	res := mustRender(t, cfg, state([]waldur.Resource{
		resource(1, "with-defaults", limits("cpu", 2, "ram", 4, "storage", 10)),
		resource(2, "without-defaults", limits("cpu", 2, "ram", 4, "storage", 10)),
	}, nil, member("alice", "PROJECT.MANAGER")))
	if len(res.Tenants) != 2 {
		t.Fatalf("tenants %d, skipped %v", len(res.Tenants), res.Skipped)
	}
	for _, tn := range res.Tenants {
		dir := t.TempDir()
		var files []string
		for _, f := range tn.Files {
			if f.Name == KustomizationFile || (strings.HasPrefix(f.Name, "limitrange-") && strings.Contains(tn.Name, "without")) {
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
	quotas := schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	sas := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, ns := range []string{"waldur-with-defaults", "waldur-without-defaults"} {
		// The controller manager fills the quota status and makes the default
		// service account; admission needs both.
		waitFor(ctx, t, ns+" quota status and default service account", func() bool {
			q, err := dyn.Resource(quotas).Namespace(ns).Get(ctx, "waldur-quota", metav1.GetOptions{})
			if err != nil {
				return false
			}
			hard, _, _ := unstructured.NestedStringMap(q.Object, "status", "hard")
			_, err = dyn.Resource(sas).Namespace(ns).Get(ctx, "default", metav1.GetOptions{})
			return len(hard) > 0 && err == nil
		})
	}
	pod := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "no-resources"},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/app:1"}}},
		}}
	}
	created, err := dyn.Resource(pods).Namespace("waldur-with-defaults").Create(ctx, pod(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a Pod without resources is refused in the tenant namespace: %v", err)
	}
	limitsCPU, _, _ := unstructured.NestedString(created.Object, "spec", "containers", "0", "resources", "limits", "cpu")
	containers, _, _ := unstructured.NestedSlice(created.Object, "spec", "containers")
	if len(containers) == 1 {
		limitsCPU, _, _ = unstructured.NestedString(containers[0].(map[string]any), "resources", "limits", "cpu")
	}
	if limitsCPU != "1" {
		t.Errorf("the admitted Pod's cpu limit is %q, want the LimitRange default 1", limitsCPU)
	}
	_, err = dyn.Resource(pods).Namespace("waldur-without-defaults").Create(ctx, pod(), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must specify") {
		t.Errorf("without the LimitRange the Pod should be refused by the quota, got %v", err)
	}
}

func waitFor(ctx context.Context, t *testing.T, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
