package kube_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/waldur/waldur-gitops/kube"
)

func TestReaderReadsNamespacesAndQuotas(t *testing.T) {
	ns := func(name string, labels map[string]string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
		u.SetLabels(labels)
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	rq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ResourceQuota", "metadata": map[string]any{"name": "q", "namespace": "a"},
		"spec":   map[string]any{"hard": map[string]any{"requests.cpu": "2", "requests.memory": "4Gi"}},
		"status": map[string]any{"used": map[string]any{"requests.cpu": "1500m", "requests.memory": "512Mi"}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.NamespacesGVR: "NamespaceList", kube.ResourceQuotasGVR: "ResourceQuotaList",
	}, ns("a", map[string]string{"waldur.io/resource-uuid": "r1"}, false), ns("b", nil, true), rq)
	r := kube.NewReaderFor(dyn)
	ctx := context.Background()
	if got, err := r.Namespace(ctx, "b"); err != nil || got == nil || !got.Terminating {
		t.Errorf("namespace b: %+v %v", got, err)
	}
	if got, err := r.Namespace(ctx, "missing"); err != nil || got != nil {
		t.Errorf("missing namespace: %+v %v", got, err)
	}
	if got, err := r.Namespaces(ctx, "waldur.io/resource-uuid"); err != nil || len(got) != 1 || got[0].Name != "a" {
		t.Errorf("labelled namespaces: %+v %v", got, err)
	}
	qs, err := r.Quotas(ctx, "")
	if err != nil || len(qs) != 1 {
		t.Fatalf("quotas %+v %v", qs, err)
	}
	if cpu := kube.Amount("requests.cpu", qs[0].Used["requests.cpu"]); cpu != 1.5 {
		t.Errorf("cpu %v", cpu)
	}
	if mem := kube.Amount("requests.memory", qs[0].Used["requests.memory"]); mem != 0.5 {
		t.Errorf("memory %v GiB", mem)
	}
	if err := r.CanList(ctx); err != nil {
		t.Error(err)
	}
}

func TestUnitOf(t *testing.T) {
	for key, want := range map[string]string{
		"requests.cpu": "core", "limits.cpu": "core", "cpu": "core", "limits.memory": "GiB", "requests.storage": "GiB",
		"requests.ephemeral-storage": "GiB", "requests.nvidia.com/gpu": "", "pods": "", "count/pods": "",
	} {
		if got := kube.UnitOf(key).Name; got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
	if v := kube.Amount("pods", resource.MustParse("7")); v != 7 {
		t.Errorf("pods %v", v)
	}
}
