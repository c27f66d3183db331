package engine_test

// The capacity stage on a no-op sync at 10,000 tenants, with its pool's
// Nodes (1,000 by default) listed from a real kube-apiserver, beside the same
// no-op sync without it:
//
//	go test ./engine -run '^$' -bench SyncCapacity10k -benchtime 5x
//
// $WALDUR_GITOPS_BENCH_TENANTS and $WALDUR_GITOPS_BENCH_NODES change the sizes.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/capacity"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/parallel"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// benchNodes creates n Ready Nodes with 64 CPUs, 512Gi and 8 GPUs each.
func benchNodes(b *testing.B, c *kubetest.Cluster, n int) {
	dyn, err := dynamic.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		b.Fatal(err)
	}
	errs := make([]error, n)
	parallel.For(n, 16, func(i int) {
		ctx := context.Background()
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": fmt.Sprintf("node-%04d", i), "labels": map[string]any{"gpu": "true"}}}}
		created, err := dyn.Resource(kube.NodesGVR).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			errs[i] = err
			return
		}
		created.Object["status"] = map[string]any{
			"allocatable": map[string]any{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
			"conditions":  []any{map[string]any{"type": "Ready", "status": "True"}},
		}
		_, errs[i] = dyn.Resource(kube.NodesGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	})
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// beginOrders is an order stage with no orders that starts the capacity
// run, as orders.Stage.Approve does.
type beginOrders struct{ site *capacity.Site }

func (o beginOrders) Approve(ctx context.Context, _ *waldur.State, _ engine.Renderer, _ bool) (changeset.Result, error) {
	if o.site != nil {
		o.site.Begin(ctx)
	}
	return changeset.Result{}, nil
}

func (beginOrders) Finish(context.Context, *waldur.State, *render.Result, *publish.Published, map[waldur.UUID]string, bool) (changeset.Result, error) {
	return changeset.Result{}, nil
}

func BenchmarkSyncCapacity10k(b *testing.B) {
	s := newSyncBench(b)
	nodes := 1000
	if v, err := strconv.Atoi(os.Getenv("WALDUR_GITOPS_BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	cluster := kubetest.StartForTest(b, kubetest.Options{})
	benchNodes(b, cluster, nodes)
	// Every offering draws from one pool of the three resources.
	text := regexp.MustCompile(`(?m)^    backend_type: .*\n`).ReplaceAllStringFunc(string(synth.ConfigYAML(synth.Options{Tenants: 1, BackendTypes: config.BackendTypes})),
		func(m string) string {
			return m + "    capacity: {pool: bench, resources: [cpu, memory, nvidia.com/gpu], node_selector: gpu=true}\n"
		})
	capCfg, err := config.Parse([]byte(text), "synth.yaml")
	if err != nil {
		b.Fatal(err)
	}
	site := capacity.FromConfig(capCfg.Offerings, "", nil)
	site.Open = func(kube.Source) (capacity.NodeLister, error) {
		return kube.NewReader(cluster.RESTConfig(kubetest.Admin))
	}
	dir := filepath.Join(b.TempDir(), "tenants.git")
	gittest.InitBare(b, dir, "main")
	cfg := *s.cfg.Config
	cfg.Git.URL = dir
	for _, way := range []struct {
		name string
		site *capacity.Site
	}{{"without", nil}, {"with-capacity", site}} {
		seams := engine.Seams{Source: memSource{s.state}, Publisher: &publish.Git{Config: &cfg}, Orders: beginOrders{way.site}}
		if way.site != nil {
			seams.Capacity = way.site
		}
		e := engine.New(seams, s.rdr, guard.DefaultOptions(), nil)
		e.Run(context.Background(), engine.Request{Command: "sync"})
		b.Run("noop/"+way.name, func(b *testing.B) {
			stage := 0.0
			defer func() { b.ReportMetric(stage/float64(b.N), "capacity-s/op") }()
			for b.Loop() {
				out := e.Run(context.Background(), engine.Request{Command: "sync"})
				for _, st := range out.Report.Stages {
					if st.Name == capacity.Stage {
						stage += st.DurationSeconds
					}
				}
				if out.Err != nil || out.Report.Commit != "" {
					b.Fatalf("no-op sync: %v, commit %q", out.Err, out.Report.Commit)
				}
				if way.site != nil && (len(out.Report.Capacity) != 3 || out.Report.Capacity[0].Committed == 0) {
					b.Fatalf("capacity: %+v", out.Report.Capacity)
				}
			}
		})
	}
}
