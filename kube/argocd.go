package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// ArgoApplicationsGVR is Argo CD's Application resource.
var ArgoApplicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// ArgoApplication is what is read of an Argo CD Application.
type ArgoApplication struct {
	Namespace, Name string
	// Sources are the Git sources it reads (spec.source, or each of
	// spec.sources).
	Sources []ArgoSource
	// SyncStatus (Synced, OutOfSync, Unknown) and SyncRevisions are Argo CD's
	// last comparison: whether the cluster matched the commits it compared
	// with (status.sync.revision, or status.sync.revisions of a multi-source
	// Application, one per source).
	SyncStatus    string
	SyncRevisions []string
	// Health is status.health.status (Healthy, Progressing, Degraded, …).
	Health string
	// Deleting is set once the Application is being deleted (its finalizer
	// deletes its objects first).
	Deleting bool
}

// ArgoSource is one source of an Application: its repository, its path
// there, and the revision it follows (spec.source.targetRevision: a branch,
// tag or commit; "" for the repository's default branch).
type ArgoSource struct {
	RepoURL, Path, TargetRevision string
}

// ArgoApplications lists the Argo CD Applications of a namespace ("" for
// every namespace), sorted by namespace and name.
func (r *Reader) ArgoApplications(ctx context.Context, namespace string) ([]ArgoApplication, error) {
	var res dynamic.ResourceInterface = r.dyn.Resource(ArgoApplicationsGVR)
	if namespace != "" {
		res = r.dyn.Resource(ArgoApplicationsGVR).Namespace(namespace)
	}
	var out []ArgoApplication
	err := r.list(ctx, res, "", func(u *unstructured.Unstructured) error {
		out = append(out, toArgoApplication(u))
		return nil
	})
	if err != nil {
		where := "every namespace"
		if namespace != "" {
			where = "namespace " + namespace
		}
		return nil, fmt.Errorf("list argo cd applications of %s: %w", where, err)
	}
	slices.SortFunc(out, func(a, b ArgoApplication) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func toArgoApplication(u *unstructured.Unstructured) ArgoApplication {
	a := ArgoApplication{Namespace: u.GetNamespace(), Name: u.GetName(), Deleting: u.GetDeletionTimestamp() != nil}
	source := func(m map[string]any) ArgoSource {
		url, _, _ := unstructured.NestedString(m, "repoURL")
		path, _, _ := unstructured.NestedString(m, "path")
		rev, _, _ := unstructured.NestedString(m, "targetRevision")
		return ArgoSource{RepoURL: url, Path: path, TargetRevision: rev}
	}
	if m, ok, _ := unstructured.NestedMap(u.Object, "spec", "source"); ok {
		a.Sources = append(a.Sources, source(m))
	}
	if l, ok, _ := unstructured.NestedSlice(u.Object, "spec", "sources"); ok {
		for _, s := range l {
			if m, ok := s.(map[string]any); ok {
				a.Sources = append(a.Sources, source(m))
			}
		}
	}
	a.SyncStatus, _, _ = unstructured.NestedString(u.Object, "status", "sync", "status")
	if rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision"); rev != "" {
		a.SyncRevisions = append(a.SyncRevisions, rev)
	}
	revs, _, _ := unstructured.NestedStringSlice(u.Object, "status", "sync", "revisions")
	a.SyncRevisions = append(a.SyncRevisions, revs...)
	a.Health, _, _ = unstructured.NestedString(u.Object, "status", "health", "status")
	return a
}
