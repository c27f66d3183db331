package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FluxGitRepositoriesGVR are Flux's GitRepositories (source-controller).
var FluxGitRepositoriesGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}

// FluxOCIRepositoriesGVR are Flux's OCIRepositories (source-controller).
var FluxOCIRepositoriesGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}

// RequestFluxOCIReconcile asks source-controller to fetch the OCIRepository
// namespace/name now, as RequestFluxReconcile does for a GitRepository. It
// needs patch on ocirepositories.
func RequestFluxOCIReconcile(ctx context.Context, dyn dynamic.Interface, namespace, name string, at time.Time) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, FluxReconcileAnnotation, at.UTC().Format(time.RFC3339Nano))
	_, err := dyn.Resource(FluxOCIRepositoriesGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "waldur-gitops"})
	if err != nil {
		return fmt.Errorf("request a reconcile of Flux OCIRepository %s/%s: %w", namespace, name, err)
	}
	return nil
}

// FluxReconcileAnnotation is the annotation whose new value makes a Flux
// controller reconcile an object at once (what `flux reconcile` sets).
const FluxReconcileAnnotation = "reconcile.fluxcd.io/requestedAt"

// RequestFluxReconcile asks source-controller to fetch the GitRepository
// namespace/name now rather than at its next poll, by setting
// FluxReconcileAnnotation to at. It needs patch on gitrepositories.
func RequestFluxReconcile(ctx context.Context, dyn dynamic.Interface, namespace, name string, at time.Time) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, FluxReconcileAnnotation, at.UTC().Format(time.RFC3339Nano))
	_, err := dyn.Resource(FluxGitRepositoriesGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "waldur-gitops"})
	if err != nil {
		return fmt.Errorf("request a reconcile of Flux GitRepository %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Dynamic opens a dynamic client for the source.
func (s Source) Dynamic() (dynamic.Interface, error) {
	cfg, err := s.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "waldur-gitops"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster client for %s: %w", s, err)
	}
	return dyn, nil
}
