package kube_test

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/waldur/waldur-gitops/kube"
)

// ArgoApplications reads every source of an Application with the revision
// it follows, which the per-shard form's applied check looks it up by.
func TestArgoApplicationsSources(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []kube.ArgoSource
	}{
		{name: "one source following a shard branch",
			spec: map[string]any{"source": map[string]any{"repoURL": "https://git.example.org/t.git", "path": "_flux/a.cluster.00", "targetRevision": "waldur-gitops/shards/waldur-a-cluster-00"}},
			want: []kube.ArgoSource{{RepoURL: "https://git.example.org/t.git", Path: "_flux/a.cluster.00", TargetRevision: "waldur-gitops/shards/waldur-a-cluster-00"}}},
		{name: "no target revision",
			spec: map[string]any{"source": map[string]any{"repoURL": "https://git.example.org/t.git", "path": "waldur/a/cluster/x"}},
			want: []kube.ArgoSource{{RepoURL: "https://git.example.org/t.git", Path: "waldur/a/cluster/x"}}},
		{name: "multi-source",
			spec: map[string]any{"sources": []any{
				map[string]any{"repoURL": "https://charts.example.org", "targetRevision": "1.2.3"},
				map[string]any{"repoURL": "https://git.example.org/t.git", "path": "_flux/a.cluster.01", "targetRevision": "refs/heads/waldur-gitops/shards/waldur-a-cluster-01"},
			}},
			want: []kube.ArgoSource{{RepoURL: "https://charts.example.org", TargetRevision: "1.2.3"},
				{RepoURL: "https://git.example.org/t.git", Path: "_flux/a.cluster.01", TargetRevision: "refs/heads/waldur-gitops/shards/waldur-a-cluster-01"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
				"metadata": map[string]any{"name": "a", "namespace": "argocd"},
				"spec":     tc.spec,
			}}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{kube.ArgoApplicationsGVR: "ApplicationList"}, app)
			apps, err := kube.NewReaderFor(dyn).ArgoApplications(context.Background(), "argocd")
			if err != nil {
				t.Fatal(err)
			}
			if len(apps) != 1 || !reflect.DeepEqual(apps[0].Sources, tc.want) {
				t.Errorf("applications %+v, want one with sources %+v", apps, tc.want)
			}
		})
	}
}
