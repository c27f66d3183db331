package kube_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/orders"
)

// TestMain builds etcd and kube-apiserver into the shared cache before any test
// runs, like the apply tests do (a file lock makes the two packages share one
// build); with -short the cluster tests are skipped instead.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		if _, err := kubetest.EnsureBinaries(context.Background(), os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "kube tests need a real kube-apiserver: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// startAPIServer starts a real etcd and kube-apiserver; -short skips.
func startAPIServer(t *testing.T, users ...string) *kubetest.Cluster {
	t.Helper()
	return kubetest.StartForTest(t, kubetest.Options{Users: users})
}

// Against a real API server: the kubeconfig loads, namespaces and quotas
// (status included) are read, the applied check sees a rendered quota, and the
// diagnose check tells an admin from a user RBAC gives nothing.
func TestAgainstRealAPIServer(t *testing.T) {
	c := startAPIServer(t, "nobody")
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "waldur-alpha", "labels": map[string]any{"waldur.io/resource-uuid": "a0000000000040008000000000000001"}}}}
	if _, err := dyn.Resource(kube.NamespacesGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	q := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": "waldur-quota", "namespace": "waldur-alpha"},
		"spec":     map[string]any{"hard": map[string]any{"requests.cpu": "4", "requests.memory": "8Gi"}}}}
	created, err := dyn.Resource(kube.ResourceQuotasGVR).Namespace("waldur-alpha").Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No controller manager runs here: write the status the quota controller would.
	_ = unstructured.SetNestedStringMap(created.Object, map[string]string{"requests.cpu": "4", "requests.memory": "8Gi"}, "status", "hard")
	_ = unstructured.SetNestedStringMap(created.Object, map[string]string{"requests.cpu": "1500m", "requests.memory": "2Gi"}, "status", "used")
	if _, err := dyn.Resource(kube.ResourceQuotasGVR).Namespace("waldur-alpha").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	r, err := kube.Open(kube.Source{Path: c.KubeconfigPath(kubetest.Admin)})
	if err != nil {
		t.Fatal(err)
	}
	nss, err := r.Namespaces(ctx, "waldur.io/resource-uuid")
	if err != nil || len(nss) != 1 || nss[0].Name != "waldur-alpha" {
		t.Fatalf("namespaces %+v %v", nss, err)
	}
	qs, err := r.Quotas(ctx, "")
	if err != nil || len(qs) != 1 {
		t.Fatalf("quotas %+v %v", qs, err)
	}
	if cpu := kube.Amount("requests.cpu", qs[0].Used["requests.cpu"]); cpu != 1.5 {
		t.Errorf("used cpu %v", cpu)
	}
	ok, detail, err := orders.Applied(ctx, r, &orders.Expectation{Namespace: "waldur-alpha",
		Quotas: []orders.ExpectedQuota{{Name: "waldur-quota", Hard: map[string]string{"requests.cpu": "4000m", "requests.memory": "8Gi"}}}})
	if err != nil || !ok {
		t.Errorf("applied: %v %q %v", ok, detail, err)
	}
	ok, detail, _ = orders.Applied(ctx, r, &orders.Expectation{Namespace: "waldur-alpha",
		Quotas: []orders.ExpectedQuota{{Name: "waldur-quota", Hard: map[string]string{"requests.cpu": "6"}}}})
	if ok || !strings.Contains(detail, "requests.cpu is 4, want 6") {
		t.Errorf("stale quota: %v %q", ok, detail)
	}

	open := func(s kube.Source) (diagnose.ClusterAPI, error) { return kube.Open(s) }
	rs := diagnose.Run(ctx, []diagnose.Check{
		diagnose.ClusterCheck(kube.Source{Path: c.KubeconfigPath(kubetest.Admin)}, open),
		diagnose.ClusterCheck(kube.Source{Path: c.KubeconfigPath("nobody")}, open),
	}, diagnose.Options{})
	if !rs[0].OK || !strings.Contains(rs[0].Detail, "v1.33") {
		t.Errorf("admin: %+v", rs[0])
	}
	if rs[1].OK || !strings.Contains(rs[1].Detail, "forbidden") {
		t.Errorf("nobody: %+v", rs[1])
	}
}
