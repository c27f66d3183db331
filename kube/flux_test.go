package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/waldur/waldur-gitops/kube"
)

// RequestFluxReconcile sets the reconcile annotation to the time given and
// keeps the object's other annotations; a missing GitRepository is an error
// naming it.
func TestRequestFluxReconcile(t *testing.T) {
	gr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "tenants", "namespace": "flux", "annotations": map[string]any{"keep": "me"}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kube.FluxGitRepositoriesGVR: "GitRepositoryList"}, gr)
	ctx := context.Background()
	at := time.Date(2026, 11, 24, 22, 0, 0, 5, time.UTC)
	if err := kube.RequestFluxReconcile(ctx, dyn, "flux", "tenants", at); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(kube.FluxGitRepositoriesGVR).Namespace("flux").Get(ctx, "tenants", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := got.GetAnnotations(); a[kube.FluxReconcileAnnotation] != "2026-11-24T22:00:00.000000005Z" || a["keep"] != "me" {
		t.Errorf("annotations %v", a)
	}
	err = kube.RequestFluxReconcile(ctx, dyn, "flux", "other", at)
	if err == nil || !strings.Contains(err.Error(), "GitRepository flux/other") {
		t.Errorf("missing GitRepository: %v", err)
	}
}
