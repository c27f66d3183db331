package kube_test

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
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/kube"
)

// consumerKinds are the Flux and Argo CD kinds waldur-gitops touches, as
// minimal CRDs (any fields), so that the RBAC of their groups can be checked
// without running Flux or Argo CD.
var consumerKinds = []struct {
	gvr  schema.GroupVersionResource
	kind string
}{
	{kube.FluxGitRepositoriesGVR, "GitRepository"},
	{kube.FluxOCIRepositoriesGVR, "OCIRepository"},
	{kube.FluxKustomizationsGVR, "Kustomization"},
	{kube.ArgoApplicationsGVR, "Application"},
}

// The Roles of examples/rbac/consumers are enough for everything
// waldur-gitops does with Flux and Argo CD — the reconcile requests of
// git.flux_reconcile and the reads of order_done_on: applied — each call
// made by the product code as a user bound to nothing but that Role; before
// the binding every call is forbidden, which proves the check means
// something.
func TestConsumerRolesAreEnough(t *testing.T) {
	c := startAPIServer(t, "flux-user", "argo-user")
	ctx := context.Background()
	admin, err := dynamic.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for _, k := range consumerKinds {
		crds = append(crds, writeCRD(t, k.gvr, k.kind))
	}
	if _, err := c.ApplyFiles(ctx, crds...); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"flux-system", "argocd"} {
		create(t, admin, kube.NamespacesGVR, "", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	}
	for _, k := range consumerKinds {
		ns := "flux-system"
		if k.gvr.Group == "argoproj.io" {
			ns = "argocd"
		}
		create(t, admin, k.gvr, ns, map[string]any{
			"apiVersion": k.gvr.GroupVersion().String(), "kind": k.kind,
			"metadata": map[string]any{"name": "waldur-x", "namespace": ns},
			"status":   map[string]any{"lastAppliedRevision": "main@sha1:0123"},
		})
	}
	roles, err := filepath.Glob("../examples/rbac/consumers/*.yaml")
	if err != nil || len(roles) != 2 {
		t.Fatalf("want the Flux and the Argo CD role, got %v %v", roles, err)
	}
	if _, err := c.ApplyFiles(ctx, roles...); err != nil {
		t.Fatal(err)
	}

	reader := func(user string) (*kube.Reader, dynamic.Interface) {
		dyn, err := dynamic.NewForConfig(c.RESTConfig(user))
		if err != nil {
			t.Fatal(err)
		}
		return kube.NewReaderFor(dyn), dyn
	}
	// diagnose's check of git.flux_reconcile asks the server (it changes
	// nothing) and must agree with the calls.
	fluxGit := config.Git{FluxSourceName: "waldur-x", FluxSourceNamespace: "flux-system", FluxNamespace: "flux-system", FluxOCIRepository: "registry.example.org/w"}
	fluxCheck := func() diagnose.Result {
		open := func(s kube.Source) (diagnose.ClusterAPI, error) { return kube.Open(s) }
		return diagnose.Run(ctx, []diagnose.Check{diagnose.FluxReconcileCheck(fluxGit, kube.Source{Path: c.KubeconfigPath("flux-user")}, open)}, diagnose.Options{})[0]
	}
	calls := map[string]func() error{
		"flux-user": func() error {
			r, dyn := reader("flux-user")
			now := time.Now()
			if err := kube.RequestFluxReconcile(ctx, dyn, "flux-system", "waldur-x", now); err != nil {
				return err
			}
			if err := kube.RequestFluxOCIReconcile(ctx, dyn, "flux-system", "waldur-x", now); err != nil {
				return err
			}
			_, found, err := r.FluxApplied(ctx, "flux-system", "waldur-x")
			if err == nil && !found {
				t.Error("the Flux Kustomization was not found")
			}
			return err
		},
		"argo-user": func() error {
			r, _ := reader("argo-user")
			apps, err := r.ArgoApplications(ctx, "argocd")
			if err == nil && len(apps) != 1 {
				t.Errorf("listed %d applications, want 1", len(apps))
			}
			return err
		},
	}
	role := map[string]string{"flux-user": "waldur-gitops-flux", "argo-user": "waldur-gitops-argocd"}
	namespace := map[string]string{"flux-user": "flux-system", "argo-user": "argocd"}
	for user, call := range calls {
		t.Run(user, func(t *testing.T) {
			if err := call(); err == nil || !strings.Contains(err.Error(), "forbidden") {
				t.Fatalf("want forbidden before the binding, got %v", err)
			}
			if user == "flux-user" {
				if r := fluxCheck(); r.OK || !strings.Contains(r.Detail, "may not patch gitrepositories.source.toolkit.fluxcd.io/waldur-x in namespace flux-system, nor patch ocirepositories") {
					t.Errorf("diagnose before the binding: %+v", r)
				}
			}
			create(t, admin, schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, namespace[user], map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
				"metadata": map[string]any{"name": user, "namespace": namespace[user]},
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role[user]},
				"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
			})
			// The authorizer learns of a new binding asynchronously.
			deadline := time.Now().Add(time.Minute)
			for err := call(); err != nil; err = call() {
				if time.Now().After(deadline) || !strings.Contains(err.Error(), "forbidden") {
					t.Fatalf("bound to %s: %v", role[user], err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if user == "flux-user" {
				if r := fluxCheck(); !r.OK {
					t.Errorf("diagnose once bound: %+v", r)
				}
			}
		})
	}
}

// writeCRD writes a CRD for a namespaced kind that takes any fields and
// returns its file.
func writeCRD(t *testing.T, gvr schema.GroupVersionResource, kind string) string {
	t.Helper()
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + gvr.Resource + "." + gvr.Group + `
spec:
  group: ` + gvr.Group + `
  scope: Namespaced
  names: {kind: ` + kind + `, plural: ` + gvr.Resource + `}
  versions:
    - name: ` + gvr.Version + `
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
	p := filepath.Join(t.TempDir(), gvr.Resource+".yaml")
	if err := os.WriteFile(p, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// create creates obj as the client dyn, in namespace ns ("" for cluster
// objects).
func create(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	var res dynamic.ResourceInterface = dyn.Resource(gvr)
	if ns != "" {
		res = dyn.Resource(gvr).Namespace(ns)
	}
	if _, err := res.Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s: %v", gvr.Resource, ns, err)
	}
}
