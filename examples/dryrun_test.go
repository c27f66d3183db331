package examples_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
)

// TestMain builds etcd and kube-apiserver into the cache before any test runs
// (minutes on a fresh machine, nothing afterwards), outside the tests'
// timeout. With -short the cluster test is skipped instead.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		if _, err := kubetest.EnsureBinaries(context.Background(), os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "the examples test needs a real kube-apiserver: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// crdFiles are the CustomResourceDefinitions the examples need: the fixture
// CRDs of this package (Argo CD, Flux) and of the apply tests
// (ManagedNamespace, Rancher), which the render of config.yaml uses.
func crdFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"testdata/crds/*.yaml", "../apply/testdata/crds/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil || len(m) == 0 {
			t.Fatalf("no CRDs at %s: %v", pattern, err)
		}
		files = append(files, m...)
	}
	return files
}

// dryRunner validates objects with a strict server-side apply dry run.
type dryRunner struct {
	dc     dynamic.Interface
	mapper meta.RESTMapper
	disco  discovery.DiscoveryInterface
}

func newDryRunner(c *kubetest.Cluster) (*dryRunner, error) {
	cfg := c.RESTConfig(kubetest.Admin)
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &dryRunner{dc: dc, disco: disco}
	return r, r.refresh()
}

// refresh reloads the API resources the server serves.
func (r *dryRunner) refresh() error {
	groups, err := restmapper.GetAPIGroupResources(r.disco)
	if err != nil {
		return fmt.Errorf("discover the API: %w", err)
	}
	r.mapper = restmapper.NewDiscoveryRESTMapper(groups)
	return nil
}

// resource returns the client for obj, in its namespace ("default" when a
// namespaced object names none, as kubectl does).
func (r *dryRunner) resource(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	// A CRD just established may be missing from discovery for a moment.
	for i := 0; meta.IsNoMatchError(err) && i < 50 && ctx.Err() == nil; i++ {
		time.Sleep(200 * time.Millisecond)
		if rerr := r.refresh(); rerr != nil {
			return nil, rerr
		}
		m, err = r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not served: %w", gvk, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return r.dc.Resource(m.Resource), nil
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return r.dc.Resource(m.Resource).Namespace(ns), nil
}

// create creates obj, for real or as a dry run, with strict field
// validation: an unknown or duplicate field is an error, not a warning.
func (r *dryRunner) create(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	ri, err := r.resource(ctx, obj)
	if err != nil {
		return err
	}
	opts := metav1.CreateOptions{FieldManager: "examples-test", FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = ri.Create(ctx, obj, opts)
	return err
}

// startCluster starts a cluster with the example CRDs installed.
func startCluster(t *testing.T) (*kubetest.Cluster, *dryRunner) {
	t.Helper()
	ctx := context.Background()
	c := kubetest.StartForTest(t, kubetest.Options{Log: os.Stderr})
	if _, err := c.ApplyFiles(ctx, crdFiles(t)...); err != nil {
		t.Fatalf("install the CRDs: %v", err)
	}
	r, err := newDryRunner(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, r
}

// Every manifest in examples/ is accepted by a real API server in a strict
// server-side dry run. Namespaces are created for real first, those the
// manifests define and those they only live in (argocd, flux-system, …, the
// clusters' own namespaces that the render refers to), so that namespaced
// objects are checked in their own namespace.
func TestExampleManifestsServerDryRun(t *testing.T) {
	set, err := collect(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range set.Skipped {
		t.Logf("skipped %s: %s", s.Path, s.Reason)
	}
	if len(set.Manifests) < 20 {
		t.Fatalf("only %d manifests collected; the collection is broken", len(set.Manifests))
	}
	_, r := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	defined := map[string]bool{}
	var namespaces []*unstructured.Unstructured
	for _, m := range set.Manifests {
		if m.Obj.GetAPIVersion() == "v1" && m.Obj.GetKind() == "Namespace" && !defined[m.Obj.GetName()] {
			defined[m.Obj.GetName()] = true
			namespaces = append(namespaces, m.Obj)
		}
	}
	needed := map[string]bool{}
	for _, m := range set.Manifests {
		if ns := m.Obj.GetNamespace(); ns != "" && !defined[ns] {
			needed[ns] = true
		}
	}
	var extra []string
	for ns := range needed {
		extra = append(extra, ns)
		namespaces = append(namespaces, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
		}})
	}
	sort.Strings(extra)
	t.Logf("namespaces the examples expect to exist, created first: %v", extra)
	for _, ns := range namespaces {
		if err := r.create(ctx, ns, false); err != nil {
			t.Fatalf("create Namespace %s: %v", ns.GetName(), err)
		}
	}

	// Every other object is created as a dry run; the Namespaces were
	// checked by their real creation (a dry run would find them there).
	accepted := 0
	for _, m := range set.Manifests {
		if m.Obj.GetAPIVersion() == "v1" && m.Obj.GetKind() == "Namespace" {
			continue
		}
		if err := r.create(ctx, m.Obj, true); err != nil {
			t.Errorf("%s: rejected: %v", m, err)
			continue
		}
		accepted++
	}
	t.Logf("%d objects accepted by the server dry run", accepted)

	// The same path must reject broken objects, or the loop above proves
	// nothing: a bad enum and an unknown field in a built-in kind, a wrong
	// type and a missing required field in a CRD-defined kind.
	find := func(source, kind string) *unstructured.Unstructured {
		for _, m := range set.Manifests {
			if m.Source == source && m.Obj.GetKind() == kind {
				return m.Obj.DeepCopy()
			}
		}
		t.Fatalf("no %s in %s", kind, source)
		return nil
	}
	broken := []struct {
		name   string
		obj    *unstructured.Unstructured
		breaks func(u *unstructured.Unstructured)
		want   string
	}{
		{
			name: "CronJob with an unknown concurrencyPolicy",
			obj:  find("deploy/overlays/gitops (kustomize build)", "CronJob"),
			breaks: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "Sometimes", "spec", "concurrencyPolicy")
			},
			want: "concurrencyPolicy",
		},
		{
			name: "CronJob with a misspelt field",
			obj:  find("deploy/overlays/direct (kustomize build)", "CronJob"),
			breaks: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "jobTemplate", "spec", "backofLimit")
			},
			want: "backofLimit",
		},
		{
			name: "ApplicationSet whose generators are a string",
			obj:  find("argocd/applicationset.yaml", "ApplicationSet"),
			breaks: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "git", "spec", "generators")
			},
			want: "generators",
		},
		{
			name: "Flux Kustomization without prune",
			obj:  find("flux (kustomize build)", "Kustomization"),
			breaks: func(u *unstructured.Unstructured) {
				unstructured.RemoveNestedField(u.Object, "spec", "prune")
			},
			want: "prune",
		},
		{
			name: "ClusterRole rule without verbs",
			obj:  find("rbac (kustomize build)", "ClusterRole"),
			breaks: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces"}}}, "rules")
			},
			want: "verbs",
		},
	}
	t.Run("pods meet the restricted Pod Security Standard", func(t *testing.T) {
		checkPodSecurity(ctx, t, r, find)
	})
	for _, b := range broken {
		t.Run("rejects "+b.name, func(t *testing.T) {
			if err := r.create(ctx, b.obj, true); err != nil {
				t.Fatalf("the intact object is rejected: %v", err)
			}
			b.breaks(b.obj)
			err := r.create(ctx, b.obj, true)
			if err == nil {
				t.Fatal("accepted")
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("want an Invalid or BadRequest answer, got %v", err)
			}
			if !strings.Contains(err.Error(), b.want) {
				t.Fatalf("the answer does not name %s: %v", b.want, err)
			}
		})
	}
}

// checkPodSecurity creates, as a dry run, a Pod from the pod template of every
// deploy overlay's workload in the namespace it runs in, which enforces the
// restricted Pod Security Standard. For a CronJob or a Deployment the
// PodSecurity admission only warns; for a Pod it refuses, so this is what the
// kubelet's pods will meet. A copy that allows privilege escalation must be
// refused, or the check proves nothing.
func checkPodSecurity(ctx context.Context, t *testing.T, r *dryRunner, find func(source, kind string) *unstructured.Unstructured) {
	t.Helper()
	// Pod admission looks the ServiceAccount up: create it for real.
	sa := find("deploy/overlays/gitops (kustomize build)", "ServiceAccount")
	if err := r.create(ctx, sa, false); err != nil {
		t.Fatalf("create ServiceAccount %s: %v", sa.GetName(), err)
	}
	for _, w := range []struct{ overlay, kind string }{{"gitops", "CronJob"}, {"direct", "CronJob"}, {"serve", "Deployment"}, {"serve-ha", "Deployment"}} {
		t.Run(w.overlay, func(t *testing.T) {
			obj := find("deploy/overlays/"+w.overlay+" (kustomize build)", w.kind)
			path := []string{"spec", "template", "spec"}
			if w.kind == "CronJob" {
				path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
			}
			spec, ok, err := unstructured.NestedMap(obj.Object, path...)
			if !ok || err != nil {
				t.Fatalf("%s %s has no pod template: %v", w.kind, obj.GetName(), err)
			}
			pod := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": obj.GetName() + "-" + w.overlay, "namespace": obj.GetNamespace()},
				"spec":     spec,
			}}
			if err := r.create(ctx, pod, true); err != nil {
				t.Fatalf("the pod of %s %s is refused: %v", w.kind, obj.GetName(), err)
			}
			containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
			c := containers[0].(map[string]any)
			c["securityContext"].(map[string]any)["allowPrivilegeEscalation"] = true
			if err := unstructured.SetNestedSlice(pod.Object, containers, "spec", "containers"); err != nil {
				t.Fatal(err)
			}
			err = r.create(ctx, pod, true)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity") {
				t.Fatalf("a pod allowing privilege escalation in namespace %s: %v, want it refused by PodSecurity", obj.GetNamespace(), err)
			}
		})
	}
}
