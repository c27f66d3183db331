package capacity

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"

	"k8s.io/apimachinery/pkg/api/resource"
)

const testUUID = "0123456789abcdef0123456789abcdef"

// loadPools loads offerings (YAML items, each with its name, backend_type
// and further keys) and returns their pools.
func loadPools(t *testing.T, items ...string) []*Pool {
	t.Helper()
	var b strings.Builder
	b.WriteString("offerings:\n")
	for _, it := range items {
		b.WriteString("  - {waldur_api_url: https://w.example.org, waldur_offering_uuid: " + testUUID + ", " + it + "}\n")
	}
	l, err := config.Parse([]byte(b.String()), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return Pools(l.Offerings)
}

// node is a Ready, schedulable Node with the given allocatable.
func node(name string, alloc map[string]string, labels map[string]string) kube.Node {
	n := kube.Node{Name: name, Ready: true, Labels: labels, Allocatable: map[string]resource.Quantity{}}
	for k, v := range alloc {
		n.Allocatable[k] = resource.MustParse(v)
	}
	return n
}

// tenant is a rendered tenant of offering off at the cluster target.
func tenant(off, dir string, id waldur.UUID, quota map[string]string) *render.Tenant {
	return &render.Tenant{Offering: off, Dir: dir + "/cluster/" + string(id), Resource: id, Quota: quota}
}

// The decision, table-driven: what fits is approved, what would oversell
// waits (or is rejected), terminations and decreases free capacity first,
// younger orders go ahead of older ones only within max_bypass, and the
// orders a person decides are only flagged.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	gpu := func(n string) map[string]string { return map[string]string{"requests.nvidia.com/gpu": n} }
	nodes := []kube.Node{node("a", map[string]string{"nvidia.com/gpu": "8"}, nil), node("b", map[string]string{"nvidia.com/gpu": "8"}, nil)}
	existing := []*render.Tenant{tenant("gpu", "gpu", "r-old", gpu("12"))}
	type want struct {
		fits, reject bool
		cause        changeset.Cause
		text         string
	}
	tests := []struct {
		name      string
		capacity  string
		baseline  []*render.Tenant
		probe     []*render.Tenant
		orders    []Order
		want      map[waldur.UUID]want
		committed float64
		waiting   float64
	}{
		{
			name:     "fits",
			baseline: existing, probe: append(existing[:1:1], tenant("gpu", "gpu", "r1", gpu("4"))),
			orders:    []Order{{UUID: "o1", Resource: "r1", Created: now.Add(-time.Hour), Auto: true}},
			want:      map[waldur.UUID]want{"o1": {fits: true}},
			committed: 16,
		},
		{
			name:     "oversells: waits naming the resource, the request and what is free",
			baseline: existing, probe: append(existing[:1:1], tenant("gpu", "gpu", "r1", gpu("8"))),
			orders:    []Order{{UUID: "o1", Resource: "r1", Created: now.Add(-time.Hour), Auto: true}},
			want:      map[waldur.UUID]want{"o1": {cause: changeset.CauseCapacityExceeded, text: "would oversell pool gpu-pool: nvidia.com/gpu requested 8, 4 free of 16"}},
			committed: 12, waiting: 8,
		},
		{
			name:     "oversells under reject",
			capacity: ", on_exceeded: reject",
			baseline: existing, probe: append(existing[:1:1], tenant("gpu", "gpu", "r1", gpu("8"))),
			orders:    []Order{{UUID: "o1", Resource: "r1", Created: now.Add(-time.Hour), Auto: true}},
			want:      map[waldur.UUID]want{"o1": {reject: true, cause: changeset.CauseCapacityExceeded, text: "4 free of 16"}},
			committed: 12,
		},
		{
			name:     "a termination frees capacity in the same run",
			baseline: existing, probe: append(existing[:1:1], tenant("gpu", "gpu", "r1", gpu("8"))),
			orders: []Order{
				{UUID: "o1", Resource: "r1", Created: now.Add(-2 * time.Hour), Auto: true},
				{UUID: "t1", Resource: "r-old", Created: now.Add(-time.Minute), Frees: true, Auto: true},
			},
			want:      map[waldur.UUID]want{"o1": {fits: true}, "t1": {fits: true}},
			committed: 8,
		},
		{
			name:     "an Update counts what it adds; a decrease passes and frees",
			baseline: []*render.Tenant{tenant("gpu", "gpu", "r-old", gpu("12")), tenant("gpu", "gpu", "r2", gpu("4"))},
			probe:    []*render.Tenant{tenant("gpu", "gpu", "r-old", gpu("8")), tenant("gpu", "gpu", "r2", gpu("8"))},
			orders: []Order{
				{UUID: "up", Resource: "r2", Created: now.Add(-2 * time.Hour), Auto: true},
				{UUID: "down", Resource: "r-old", Created: now.Add(-time.Minute), Auto: true},
			},
			want:      map[waldur.UUID]want{"up": {fits: true}, "down": {fits: true}},
			committed: 16,
		},
		{
			name:     "a younger order that fits goes ahead within max_bypass, and the dry run says so",
			baseline: existing, probe: append(existing[:1:1], tenant("gpu", "gpu", "big", gpu("8")), tenant("gpu", "gpu", "small", gpu("2"))),
			orders: []Order{
				{UUID: "o-big", Resource: "big", Created: now.Add(-time.Hour), Auto: true},
				{UUID: "o-small", Resource: "small", Created: now.Add(-time.Minute), Auto: true},
			},
			want:      map[waldur.UUID]want{"o-big": {cause: changeset.CauseCapacityExceeded}, "o-small": {fits: true, text: "goes ahead of older order o-big"}},
			committed: 14, waiting: 8,
		},
		{
			name:     "after max_bypass nothing younger goes ahead",
			capacity: ", max_bypass: 30m",
			baseline: existing, probe: append(existing[:1:1], tenant("gpu", "gpu", "big", gpu("8")), tenant("gpu", "gpu", "small", gpu("2"))),
			orders: []Order{
				{UUID: "o-big", Resource: "big", Created: now.Add(-time.Hour), Auto: true},
				{UUID: "o-small", Resource: "small", Created: now.Add(-time.Minute), Auto: true},
			},
			want:      map[waldur.UUID]want{"o-big": {cause: changeset.CauseCapacityExceeded}, "o-small": {cause: changeset.CauseCapacityExceeded, text: "waits behind older order o-big"}},
			committed: 12, waiting: 10,
		},
		{
			name:     "overcommit applies",
			capacity: ", overcommit: {nvidia.com/gpu: 1.5}",
			baseline: existing, probe: append(existing[:1:1], tenant("gpu", "gpu", "r1", gpu("12"))),
			orders:    []Order{{UUID: "o1", Resource: "r1", Created: now.Add(-time.Hour), Auto: true}},
			want:      map[waldur.UUID]want{"o1": {fits: true}},
			committed: 24,
		},
		{
			name:     "a person decides: only flagged, nothing committed",
			baseline: existing, probe: append(existing[:1:1], tenant("gpu", "gpu", "r1", gpu("8"))),
			orders:    []Order{{UUID: "o1", Resource: "r1", Created: now.Add(-time.Hour)}},
			want:      map[waldur.UUID]want{"o1": {text: "would oversell pool gpu-pool"}},
			committed: 12,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pools := loadPools(t, "name: gpu, backend_type: namespace, capacity: {pool: gpu-pool, resources: [nvidia.com/gpu]"+tc.capacity+"}")
			for i := range tc.orders {
				tc.orders[i].Offering = "gpu"
			}
			a := total(pools[0], nodes)
			got := decide(pools[0], a, &render.Result{Tenants: tc.baseline}, &render.Result{Tenants: tc.probe}, tc.orders, now)
			for id, w := range tc.want {
				v, ok := got[id]
				switch {
				case !ok:
					t.Errorf("%s: no verdict", id)
				case v.Fits != w.fits || v.Reject != w.reject || v.Cause != w.cause:
					t.Errorf("%s: %+v, want fits %v reject %v cause %q", id, v, w.fits, w.reject, w.cause)
				case !strings.Contains(v.Reason+v.Note, w.text):
					t.Errorf("%s: %q does not say %q", id, v.Reason+v.Note, w.text)
				}
			}
			l := a.line("nvidia.com/gpu")
			if l.Committed != tc.committed || l.Waiting != tc.waiting {
				t.Errorf("committed %v, waiting %v; want %v, %v", l.Committed, l.Waiting, tc.committed, tc.waiting)
			}
		})
	}
}

// A pool's total counts only Ready, schedulable Nodes the selector picks,
// or the fixed quantity; a tenant counts its request quota where one is
// rendered, else its limit, through its backend's quota keys, and a
// rancher tenant once, from its downstream quota.
func TestTotalAndReserved(t *testing.T) {
	pools := loadPools(t,
		"name: ns, backend_type: namespace, capacity: {pool: p, resources: [cpu, memory, nvidia.com/gpu], node_selector: 'gpu=true'}",
		"name: okd, backend_type: okd, capacity: {pool: p, resources: [cpu, memory, nvidia.com/gpu], node_selector: 'gpu=true'}",
		"name: ut, backend_type: k8s-ut-namespace, capacity: {pool: p, resources: [cpu, memory, nvidia.com/gpu], node_selector: 'gpu=true'}",
		"name: ra, backend_type: rancher, backend_settings: {cluster_id: c-1}, capacity: {pool: p, resources: [cpu, memory, nvidia.com/gpu], node_selector: 'gpu=true'}",
		"name: fx, backend_type: namespace, capacity: {pool: f, resources: [cpu, requests.storage], fixed: {cpu: '100', requests.storage: 1Ti}}",
	)
	all := map[string]string{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"}
	gpuLabel := map[string]string{"gpu": "true"}
	cordoned, notReady := node("c", all, gpuLabel), node("d", all, gpuLabel)
	cordoned.Unschedulable, notReady.Ready = true, false
	a := total(pools[0], []kube.Node{node("a", all, gpuLabel), node("b", all, nil), cordoned, notReady, node("e", map[string]string{"cpu": "4"}, gpuLabel)})
	if a.Nodes != 2 || a.line("cpu").Allocatable != 12 || a.line("nvidia.com/gpu").Allocatable != 4 || a.line("memory").Allocatable != 32<<30 {
		t.Errorf("total: %d nodes, %+v", a.Nodes, a.Lines)
	}
	if a.line("cpu").Sellable() != 24 || a.line("memory").Sellable() != 32<<30 {
		t.Errorf("default overcommit: cpu sells %v, memory %v", a.line("cpu").Sellable(), a.line("memory").Sellable())
	}
	tests := []struct {
		name   string
		tenant *render.Tenant
		want   map[string]float64
	}{
		{"namespace: requests", &render.Tenant{Offering: "ns", Dir: "ns/cluster/x", Quota: map[string]string{"requests.cpu": "2", "limits.cpu": "4", "requests.nvidia.com/gpu": "1"}}, map[string]float64{"cpu": 2, "nvidia.com/gpu": 1}},
		{"namespace: a limit alone counts", &render.Tenant{Offering: "ns", Dir: "ns/cluster/x", Quota: map[string]string{"limits.memory": "1Gi"}}, map[string]float64{"memory": 1 << 30}},
		{"okd: its requests, not its doubled limits", &render.Tenant{Offering: "okd", Dir: "okd/cluster/x", Quota: map[string]string{"requests.cpu": "2", "limits.cpu": "4", "requests.memory": "4Gi", "limits.memory": "8Gi"}}, map[string]float64{"cpu": 2, "memory": 4 << 30}},
		{"k8s-ut: the operator's keys", &render.Tenant{Offering: "ut", Dir: "ut/cluster/x", Quota: map[string]string{"cpu": "3", "gpu": "2"}}, map[string]float64{"cpu": 3, "nvidia.com/gpu": 2}},
		{"rancher: downstream counts", &render.Tenant{Offering: "ra", Dir: "ra/downstream/x", Quota: map[string]string{"limits.cpu": "5"}}, map[string]float64{"cpu": 5}},
		{"rancher: management does not", &render.Tenant{Offering: "ra", Dir: "ra/management/x", Quota: map[string]string{"limits.cpu": "5"}}, nil},
		{"another pool's offering", &render.Tenant{Offering: "fx", Dir: "fx/cluster/x", Quota: map[string]string{"requests.cpu": "5"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pools[0].Reserved(tc.tenant)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
	f := total(pools[1], nil)
	if f.Cluster != "" || f.line("cpu").Allocatable != 100 || f.line("requests.storage").Allocatable != 1<<40 {
		t.Errorf("fixed pool: %+v", f)
	}
	if got := pools[1].Reserved(&render.Tenant{Offering: "fx", Dir: "fx/cluster/x", Quota: map[string]string{"requests.storage": "10Gi"}}); got["requests.storage"] != 10<<30 {
		t.Errorf("requests.storage counted %v", got)
	}
}
