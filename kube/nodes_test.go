package kube_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/kube"
)

// Against a real API server: Nodes reads each Node's readiness, cordon and
// status.allocatable (set through the status subresource); an account RBAC
// gives nothing may not list them, and the example ClusterRole of
// examples/rbac/capacity.yaml is enough.
func TestNodesAgainstRealAPIServer(t *testing.T) {
	c := startAPIServer(t, "nobody")
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		name          string
		ready, cordon bool
	}{{"a-ready", true, false}, {"b-cordoned", true, true}, {"c-not-ready", false, false}} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": n.name, "labels": map[string]any{"gpu": "true"}}, "spec": map[string]any{"unschedulable": n.cordon}}}
		created, err := dyn.Resource(kube.NodesGVR).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		status := map[bool]string{true: "True", false: "False"}[n.ready]
		created.Object["status"] = map[string]any{
			"allocatable": map[string]any{"cpu": "15500m", "memory": "62Gi", "nvidia.com/gpu": "4"},
			"conditions":  []any{map[string]any{"type": "MemoryPressure", "status": "False"}, map[string]any{"type": "Ready", "status": status}},
		}
		if _, err := dyn.Resource(kube.NodesGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := kube.NewReader(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := admin.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes {
		cpu, gpu := n.Allocatable["cpu"], n.Allocatable["nvidia.com/gpu"]
		got = append(got, n.Name+" "+map[bool]string{true: "ready", false: "not-ready"}[n.Ready]+" "+map[bool]string{true: "cordoned", false: "schedulable"}[n.Unschedulable]+
			" "+cpu.String()+" "+gpu.String()+" "+n.Labels["gpu"])
	}
	want := "a-ready ready schedulable 15500m 4 true|b-cordoned ready cordoned 15500m 4 true|c-not-ready not-ready schedulable 15500m 4 true"
	if strings.Join(got, "|") != want {
		t.Errorf("nodes:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}

	nobody, err := kube.NewReader(c.RESTConfig("nobody"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nobody.Nodes(ctx); err == nil || !strings.Contains(err.Error(), "list nodes") || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("an account without RBAC listed nodes: %v", err)
	}
	if _, err := c.ApplyFiles(ctx, "../examples/rbac/capacity.yaml"); err != nil {
		t.Fatal(err)
	}
	crb := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "waldur-gitops-capacity"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "waldur-gitops-capacity"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "nobody"}}}}
	gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	if _, err := dyn.Resource(gvr).Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nobody.CanListNodes(ctx); err != nil {
		t.Errorf("with examples/rbac/capacity.yaml: %v", err)
	}
	if ok, err := nobody.Allowed(ctx, kube.Access{Verb: "list", Resource: kube.NodesGVR}); err != nil || !ok {
		t.Errorf("the access review the diagnose row asks: %v %v", ok, err)
	}
}
