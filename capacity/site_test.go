package capacity

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
)

type countingLister struct {
	n     *atomic.Int32
	nodes []kube.Node
	err   error
}

func (c countingLister) Nodes(context.Context) ([]kube.Node, error) {
	c.n.Add(1)
	return c.nodes, c.err
}

// A Site lists each cluster's Nodes once per run, whatever the number of
// pools reading it and of stages asking; Begin starts a new run. A pool
// whose cluster cannot be read leaves its orders waiting and is a contained
// cluster failure naming the pool; the report shows it as unknown.
func TestSite(t *testing.T) {
	pools := loadPools(t,
		"name: a, backend_type: namespace, backend_settings: {kubeconfig_context: east}, capacity: {pool: gpu, resources: [nvidia.com/gpu], node_selector: gpu=true}",
		"name: b, backend_type: namespace, backend_settings: {kubeconfig_context: east}, capacity: {pool: cpu, resources: [cpu]}",
		"name: c, backend_type: namespace, backend_settings: {kubeconfig_context: west}, capacity: {resources: [cpu]}",
	)
	var lists atomic.Int32
	nodes := []kube.Node{node("n1", map[string]string{"cpu": "8", "nvidia.com/gpu": "4"}, map[string]string{"gpu": "true"})}
	s := &Site{Pools: pools, Open: func(src kube.Source) (NodeLister, error) {
		if src.Context == "west" {
			return countingLister{n: &lists, err: errors.New("nodes is forbidden")}, nil
		}
		return countingLister{n: &lists, nodes: nodes}, nil
	}}
	probe := &render.Result{Tenants: []*render.Tenant{
		tenant("a", "a", "r1", map[string]string{"requests.nvidia.com/gpu": "2"}),
		tenant("c", "c", "r2", map[string]string{"requests.cpu": "1"}),
	}}
	orders := []Order{
		{UUID: "o1", Resource: "r1", Offering: "a", Created: time.Now(), Auto: true},
		{UUID: "o2", Resource: "r2", Offering: "c", Created: time.Now(), Auto: true},
	}
	ctx := context.Background()
	s.Begin(ctx)
	v, err := s.Decide(ctx, orders, probe, func() (*render.Result, error) { return &render.Result{}, nil }, time.Now())
	if !v["o1"].Fits || v["o2"].Fits || v["o2"].Cause != changeset.CauseCapacityUnknown {
		t.Errorf("verdicts %+v", v)
	}
	if err == nil || !failure.IsContained(err) || failure.ClassOf(err) != failure.ClassCluster || !strings.Contains(err.Error(), "capacity pool west: cluster the default kubeconfig (context west): nodes is forbidden") {
		t.Errorf("error %v", err)
	}
	res, lines, err := s.Report(ctx, probe)
	if err == nil || len(lines) != 3 || lines[2].Error == "" || lines[0].Committed != 2 {
		t.Errorf("report: %v %+v", err, lines)
	}
	if len(res.Changes.ByAction(changeset.Skip)) != 1 {
		t.Errorf("entries %v", res.Changes.Entries)
	}
	if n := lists.Load(); n != 2 {
		t.Errorf("%d Node lists in one run, want one per cluster (2)", n)
	}
	s.Begin(ctx)
	if _, _, err := s.Report(ctx, probe); err == nil || lists.Load() != 4 {
		t.Errorf("a new run lists again: %d lists, %v", lists.Load(), err)
	}
	// apply --kubeconfig: every pool reads that cluster, listed once.
	s.Kubeconfig = "/k/direct.yaml"
	s.Begin(ctx)
	_, lines, err = s.Report(ctx, probe)
	if err != nil || lists.Load() != 5 || lines[2].Cluster != "/k/direct.yaml" || lines[2].Error != "" {
		t.Errorf("with a kubeconfig: %d lists, %v, %+v", lists.Load(), err, lines)
	}
}
