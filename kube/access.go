package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// selfSubjectAccessReviewsGVR asks the API server what the caller may do.
var selfSubjectAccessReviewsGVR = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// Access is one permission waldur-gitops needs in a cluster: a verb on a
// resource, in a namespace ("" for every namespace), on one named object
// ("" for any).
type Access struct {
	Verb            string
	Resource        schema.GroupVersionResource
	Namespace, Name string
}

// String reads like what kubectl auth can-i asks: "patch
// gitrepositories.source.toolkit.fluxcd.io/waldur-tenants in namespace
// flux-system".
func (a Access) String() string {
	s := a.Verb + " " + a.Resource.Resource
	if a.Resource.Group != "" {
		s += "." + a.Resource.Group
	}
	if a.Name != "" {
		s += "/" + a.Name
	}
	if a.Namespace != "" {
		s += " in namespace " + a.Namespace
	}
	return s
}

// Allowed asks the API server whether the account may do a, with a
// SelfSubjectAccessReview (as kubectl auth can-i does): nothing is read or
// changed. An error means the server could not say.
func (r *Reader) Allowed(ctx context.Context, a Access) (bool, error) {
	attrs := map[string]any{"verb": a.Verb, "group": a.Resource.Group, "resource": a.Resource.Resource}
	if a.Namespace != "" {
		attrs["namespace"] = a.Namespace
	}
	if a.Name != "" {
		attrs["name"] = a.Name
	}
	review := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": attrs},
	}}
	got, err := r.dyn.Resource(selfSubjectAccessReviewsGVR).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("ask whether this account may %s: %w", a, err)
	}
	ok, _, _ := unstructured.NestedBool(got.Object, "status", "allowed")
	return ok, nil
}
