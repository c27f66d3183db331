package orders_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// stubCluster answers from fixed data.
type stubCluster struct {
	ns     map[string]*kube.Namespace
	quotas map[string][]kube.Quota
}

func (s stubCluster) Namespace(_ context.Context, name string) (*kube.Namespace, error) {
	return s.ns[name], nil
}

func (s stubCluster) Namespaces(context.Context, string) ([]kube.Namespace, error) { return nil, nil }

func (s stubCluster) Quotas(_ context.Context, ns string) ([]kube.Quota, error) {
	return s.quotas[ns], nil
}

func hard(kv ...string) map[string]resource.Quantity {
	m := map[string]resource.Quantity{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = resource.MustParse(kv[i+1])
	}
	return m
}

// A quota handed to an operator (ManagedNamespace spec.quota) is applied when
// some ResourceQuota of the namespace holds every key, as given or under
// requests./limits., at the same quantity.
func TestAppliedOperatorQuota(t *testing.T) {
	exp := &orders.Expectation{Namespace: "waldur-a", Quotas: []orders.ExpectedQuota{{Hard: map[string]string{"cpu": "2", "memory": "4Gi"}}}}
	cases := []struct {
		name   string
		quotas []kube.Quota
		ok     bool
		detail string
	}{
		{"prefixed keys", []kube.Quota{{Name: "q", Hard: hard("requests.cpu", "2", "limits.memory", "4096Mi")}}, true, ""},
		{"plain keys in a second quota", []kube.Quota{{Name: "other", Hard: hard("pods", "10")}, {Name: "q", Hard: hard("cpu", "2000m", "memory", "4Gi")}}, true, ""},
		{"old value", []kube.Quota{{Name: "q", Hard: hard("requests.cpu", "1", "requests.memory", "4Gi")}}, false, "requests.cpu is 1, want 2"},
		{"no quota", nil, false, "no resourcequota"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := stubCluster{ns: map[string]*kube.Namespace{"waldur-a": {Name: "waldur-a"}}, quotas: map[string][]kube.Quota{"waldur-a": c.quotas}}
			ok, detail, err := orders.Applied(context.Background(), cl, exp)
			if err != nil || ok != c.ok || !strings.Contains(detail, c.detail) {
				t.Errorf("ok %v detail %q err %v", ok, detail, err)
			}
		})
	}
	ok, detail, _ := orders.Applied(context.Background(), stubCluster{ns: map[string]*kube.Namespace{"waldur-a": {Name: "waldur-a", Terminating: true}}}, exp)
	if ok || detail != "namespace waldur-a is terminating" {
		t.Errorf("terminating: %v %q", ok, detail)
	}
}

// PlanFinish keeps a Terminate executing while the resource's manifests are
// still in Git (a skipped resource's directory is carried over), and leaves
// orders of unknown types alone.
func TestPlanFinishWaits(t *testing.T) {
	h := newHarness(t, "")
	res := waldur.UUID("a0000000000040008000000000000001")
	st := &waldur.State{Offerings: []waldur.OfferingState{{Name: "Plain", OfferingUUID: offering,
		Resources: []waldur.Resource{{UUID: res, Slug: "Bad_Slug", State: waldur.ResourceOK}},
		Orders: []waldur.Order{
			{UUID: "0d000000000040008000000000000001", Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: res, Created: time.Unix(1, 0)},
			{UUID: "0d000000000040008000000000000002", Type: "Migrate", State: waldur.OrderExecuting, MarketplaceResourceUUID: res, Created: time.Unix(2, 0)},
		}}}}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  name: waldur-bad\n  annotations:\n    waldur.io/resource-uuid: " + string(res) + "\nresources: []\n"
	pushed := render.Tree{"plain/cluster/waldur-bad/kustomization.yaml": []byte(kust)}
	result := &render.Result{Skipped: map[waldur.UUID]string{res: "bad"}}
	plan := orders.PlanFinish(h.stage.Offerings, st, result, pushed)
	if len(plan) != 2 {
		t.Fatalf("plan %+v", plan)
	}
	if plan[0].Outcome != orders.Wait || !strings.Contains(plan[0].Reason, "still in Git: plain/cluster/waldur-bad") {
		t.Errorf("terminate: %+v", plan[0])
	}
	if plan[1].Outcome != orders.Wait || !strings.Contains(plan[1].Reason, `does not handle "Migrate"`) {
		t.Errorf("unknown type: %+v", plan[1])
	}
}

// PlanFinish reads the tenants of the pushed tree only for a Terminate order:
// with none executing, its work does not grow with the tree (a no-op at
// 10,000 tenants parsed every kustomization here).
func TestPlanFinishReadsTreeOnlyForTerminate(t *testing.T) {
	h := newHarness(t, "")
	res := waldur.UUID("a0000000000040008000000000000001")
	tree := func(n int) render.Tree {
		tr := render.Tree{}
		for i := range n {
			kust := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  name: t%d\n  annotations:\n    waldur.io/resource-uuid: b%031d\nresources: []\n", i, i)
			tr[fmt.Sprintf("plain/cluster/t%d/kustomization.yaml", i)] = []byte(kust)
		}
		return tr
	}
	small, large := tree(10), tree(2000)
	for _, c := range []struct {
		name  string
		order string
		grows bool
	}{
		{"no order", "", false},
		{"an update", waldur.OrderUpdate, false},
		{"a terminate", waldur.OrderTerminate, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &waldur.State{Offerings: []waldur.OfferingState{{Name: "Plain", OfferingUUID: offering,
				Resources: []waldur.Resource{{UUID: res, Slug: "gone", State: waldur.ResourceOK}}}}}
			if c.order != "" {
				st.Offerings[0].Orders = []waldur.Order{{UUID: "0d000000000040008000000000000001", Type: c.order,
					State: waldur.OrderExecuting, MarketplaceResourceUUID: res, Created: time.Unix(1, 0)}}
			}
			result := &render.Result{}
			allocs := func(tr render.Tree) float64 {
				return testing.AllocsPerRun(5, func() { orders.PlanFinish(h.stage.Offerings, st, result, tr) })
			}
			a, b := allocs(small), allocs(large)
			if grows := b > a+100; grows != c.grows {
				t.Errorf("allocations with 10 tenants %.0f, with 2,000 %.0f; want growth with the tree: %t", a, b, c.grows)
			}
		})
	}
}
