package apply_test

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

const (
	exampleConfig   = "../examples/config.yaml"
	exampleSnapshot = "../examples/snapshot.json"
)

// Test fixture CRDs.
var (
	crdManagedNamespace = filepath.Join("testdata", "crds", "managednamespace.yaml")
	crdRancher          = filepath.Join("testdata", "crds", "rancher.yaml")
)

// Resources the tests read and write as admin.
var (
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrQuota     = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	gvrBinding   = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
	gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrManagedNS = schema.GroupVersionResource{Group: "provisioning.hpc.ut.ee", Version: "v1", Resource: "managednamespaces"}
	gvrProject   = schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "projects"}
)

// testCluster is a fresh cluster for one test, with the given CRD files
// installed; it is stopped when the test ends.
type testCluster struct {
	*kubetest.Cluster
	t   testing.TB
	dyn dynamic.Interface
}

func startCluster(t testing.TB, crds []string, users ...string) *testCluster {
	t.Helper()
	c := kubetest.StartForTest(t, kubetest.Options{Users: users})
	if len(crds) > 0 {
		if _, err := c.ApplyFiles(context.Background(), crds...); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	return &testCluster{Cluster: c, t: t, dyn: dyn}
}

func (c *testCluster) resource(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return c.dyn.Resource(gvr)
	}
	return c.dyn.Resource(gvr).Namespace(ns)
}

// get returns an object, nil when it does not exist.
func (c *testCluster) get(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	c.t.Helper()
	u, err := c.resource(gvr, ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return u
}

// create creates an object as admin.
func (c *testCluster) create(gvr schema.GroupVersionResource, obj map[string]any) *unstructured.Unstructured {
	c.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	got, err := c.resource(gvr, u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return got
}

// ssa server-side applies obj as another field manager, forcing.
func (c *testCluster) ssa(gvr schema.GroupVersionResource, manager string, obj map[string]any) {
	c.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if _, err := c.resource(gvr, u.GetNamespace()).Apply(context.Background(), u.GetName(), u, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
		c.t.Fatal(err)
	}
}

// prepareNamespaces creates the namespaces rendered objects live in but that
// nothing renders: the k8s-ut cr_namespace, Rancher's cluster namespace and its
// project backing namespaces (which Rancher would create), except those in skip.
func (c *testCluster) prepareNamespaces(res *render.Result, skip ...string) {
	c.t.Helper()
	rendered := map[string]bool{}
	for _, t := range res.Tenants {
		for _, o := range t.Objects {
			if o.Kind() == "Namespace" {
				rendered[o.Name()] = true
			}
		}
	}
	done := map[string]bool{}
	for _, t := range res.Tenants {
		for _, o := range t.Objects {
			ns := o.Namespace()
			if ns == "" || rendered[ns] || done[ns] || slices.Contains(skip, ns) {
				continue
			}
			done[ns] = true
			if c.get(gvrNamespace, "", ns) == nil {
				c.create(gvrNamespace, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
			}
		}
	}
}

// loadExample loads the example config and a fresh copy of the example state.
func loadExample(t testing.TB) (*config.Loaded, *waldur.State) {
	t.Helper()
	cfg, err := config.Load(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, &snap.State
}

func renderState(t testing.TB, cfg *config.Config, st *waldur.State) *render.Result {
	t.Helper()
	return exampletest.Render(t, cfg, st)
}

// resourceNamed finds a resource of the state by name.
func resourceNamed(t testing.TB, st *waldur.State, name string) (*waldur.OfferingState, *waldur.Resource) {
	t.Helper()
	for i := range st.Offerings {
		o := &st.Offerings[i]
		for j := range o.Resources {
			if o.Resources[j].Name == name {
				return o, &o.Resources[j]
			}
		}
	}
	t.Fatalf("no resource %q in the state", name)
	return nil, nil
}

// objectCount is the number of rendered objects.
func objectCount(res *render.Result) int {
	n := 0
	for _, t := range res.Tenants {
		n += len(t.Objects)
	}
	return n
}

// checkActions compares the entries of cs with want (subject → action); every
// entry not in want must have action others (when set).
func checkActions(t testing.TB, cs changeset.Set, want map[string]changeset.Action, others changeset.Action) {
	t.Helper()
	got := map[string]changeset.Entry{}
	for _, e := range cs.Entries {
		if prev, dup := got[e.Subject]; dup {
			t.Errorf("%s reported twice: %s and %s", e.Subject, prev.Action, e.Action)
		}
		got[e.Subject] = e
	}
	for s, a := range want {
		e, ok := got[s]
		switch {
		case !ok:
			t.Errorf("%s: no entry, want %s", s, a)
		case e.Action != a:
			t.Errorf("%s: %s (%s), want %s", s, e.Action, e.Reason, a)
		}
	}
	if others == "" {
		return
	}
	var wrong []string
	for s, e := range got {
		if _, listed := want[s]; !listed && e.Action != others {
			wrong = append(wrong, s+" "+string(e.Action)+" "+e.Reason)
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		t.Errorf("want every other entry %s; got:\n  %s", others, strings.Join(wrong, "\n  "))
	}
}

// subjects lists the subjects of cs with action a.
func subjects(cs changeset.Set, a changeset.Action) []string {
	var out []string
	for _, e := range cs.ByAction(a) {
		out = append(out, e.Subject)
	}
	slices.Sort(out)
	return out
}

var (
	listAll    = metav1.ListOptions{}
	createOpts = metav1.CreateOptions{}
)

// namespace is a bare Namespace object.
func namespace(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
}

// sleep pauses a polling loop briefly, or returns the context's error.
func sleep(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}
