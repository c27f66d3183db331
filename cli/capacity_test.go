package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// gpuOffering is the offering of the capacity tests.
const gpuOffering = "0123456789abcdef0123456789abcd01"

// capacityNodes creates the Nodes of the capacity tests and sets their
// status.allocatable and Ready condition through the status subresource:
// two labelled GPU Nodes (4 GPUs each) count toward a gpu=true pool; a
// cordoned one, a NotReady one and an unlabelled one do not.
func capacityNodes(t *testing.T, c *kubetest.Cluster) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(c.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	nodes := []struct {
		name                  string
		gpu                   bool
		ready, unschedulable  bool
		cpu, memory, gpuCount string
	}{
		{"gpu-a", true, true, false, "16", "64Gi", "4"},
		{"gpu-b", true, true, false, "16", "64Gi", "4"},
		{"gpu-cordoned", true, true, true, "16", "64Gi", "4"},
		{"gpu-not-ready", true, false, false, "16", "64Gi", "4"},
		{"cpu-only", false, true, false, "64", "256Gi", "4"},
	}
	for _, n := range nodes {
		labels := map[string]any{}
		if n.gpu {
			labels["gpu"] = "true"
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": n.name, "labels": labels},
			"spec":     map[string]any{"unschedulable": n.unschedulable},
		}}
		created, err := dyn.Resource(kube.NodesGVR).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		status := "False"
		if n.ready {
			status = "True"
		}
		created.Object["status"] = map[string]any{
			"allocatable": map[string]any{"cpu": n.cpu, "memory": n.memory, "nvidia.com/gpu": n.gpuCount, "pods": "110"},
			"capacity":    map[string]any{"cpu": n.cpu, "memory": n.memory, "nvidia.com/gpu": n.gpuCount, "pods": "110"},
			"conditions":  []any{map[string]any{"type": "Ready", "status": status, "reason": "Test", "lastHeartbeatTime": time.Now().UTC().Format(time.RFC3339)}},
		}
		if _, err := dyn.Resource(kube.NodesGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// capacitySite is one scenario's Waldur (an offering with a tenant that
// holds 6 GPUs) and config, committing to a fresh Git repository.
type capacitySite struct {
	srv     *waldurtest.Server
	cfg     string
	report  string
	project waldur.Resource
	held    waldur.UUID
}

func newCapacitySite(t *testing.T, kubeconfig, capacity string) *capacitySite {
	t.Helper()
	const token = "0123456789abcdef0123456789abcdef01234567"
	s := &capacitySite{srv: waldurtest.New(t, waldurtest.WithToken(token))}
	t.Setenv("WALDUR_API_TOKEN", token)
	s.project = waldur.Resource{OfferingUUID: gpuOffering, ProjectUUID: "0123456789abcdef0123456789abcd02", ProjectSlug: "lab", ProjectName: "Lab",
		CustomerUUID: "0123456789abcdef0123456789abcd03", CustomerSlug: "uni", CustomerName: "Uni"}
	s.srv.Seed(&waldur.State{Offerings: []waldur.OfferingState{{Name: "GPU namespaces", OfferingUUID: gpuOffering}}})
	s.held = s.resource("held", waldur.ResourceOK, "6")
	gsrv, _, url := gitRepo(t)
	dir := t.TempDir()
	s.report = filepath.Join(dir, "report.json")
	text := fmt.Sprintf(`report: %s
git: {url: %s, username: %s, password_env: %s, branch: main, path: waldur}
offerings:
  - name: GPU namespaces
    waldur_api_url: %s
    waldur_offering_uuid: %s
    backend_type: namespace
    backend_components:
      cpu: {}
      ram: {}
      gpu: {}
    backend_settings: {namespace_prefix: t-, kubeconfig_path: %s}
    capacity: {resources: [cpu, memory, nvidia.com/gpu], node_selector: gpu=true%s}
`, s.report, url, gsrv.User(), gitPasswordEnv, s.srv.URL(), gpuOffering, kubeconfig, capacity)
	s.cfg = filepath.Join(dir, "config.yaml")
	writeFile(t, s.cfg, text)
	return s
}

// resource adds a resource with 1 CPU, 1 GiB and gpus GPUs.
func (s *capacitySite) resource(slug, state, gpus string) waldur.UUID {
	r := s.project
	r.Slug, r.Name, r.State, r.Limits = slug, slug, state, waldur.Limits{"cpu": "1", "ram": "1", "gpu": waldur.Amount(gpus)}
	return s.srv.AddResource(r)
}

// create adds a Creating resource with a pending Create order, created age ago.
func (s *capacitySite) create(slug, gpus string, age time.Duration) waldur.UUID {
	id := s.resource(slug, waldur.ResourceCreating, gpus)
	return s.srv.AddOrder(gpuOffering, waldur.Order{Type: waldur.OrderCreate, State: waldur.OrderPendingProvider, MarketplaceResourceUUID: id, Created: time.Now().Add(-age)})
}

// entry returns the approve entry of an order and the run's capacity lines.
func (s *capacitySite) entry(t *testing.T, order waldur.UUID) (changeset.Entry, []report.PoolLine) {
	t.Helper()
	var rep report.Run
	if err := json.Unmarshal(mustRead(t, s.report), &rep); err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Changes {
		if e.Stage == "approve" && len(e.Orders) > 0 && e.Orders[0] == string(order) {
			return e, rep.Capacity
		}
	}
	t.Fatalf("no approve entry for order %s", order)
	return changeset.Entry{}, nil
}

// TestCapacityAgainstTheCluster runs sync through the CLI against the
// in-repo Waldur server and a real kube-apiserver whose Nodes make the
// pool: 8 GPUs on the two Ready, schedulable, gpu=true Nodes.
func TestCapacityAgainstTheCluster(t *testing.T) {
	cluster := kubetest.StartForTest(t, kubetest.Options{Users: []string{"nobody"}})
	capacityNodes(t, cluster)
	admin := cluster.KubeconfigPath(kubetest.Admin)

	t.Run("fits, oversells and waits, then a Terminate frees it", func(t *testing.T) {
		s := newCapacitySite(t, admin, "")
		big := s.create("big", "4", 3*time.Hour)
		small := s.create("small", "2", time.Hour)
		code, stdout, stderr := run(t, "render", "--dry-run", "--config", s.cfg)
		if code != ExitDiff {
			t.Fatalf("render --dry-run: exit %d\n%s", code, stderr)
		}
		for _, want := range []string{
			"nvidia.com/gpu: allocatable 8, overcommit 1, committed 8, requested by waiting orders 4, free 0",
			"would approve: goes ahead of older order " + string(big),
			"pending: would oversell pool",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("the dry run does not say %q:\n%s", want, stdout)
			}
		}
		if st := orderState(t, s.srv, string(small)); st != waldur.OrderPendingProvider {
			t.Fatalf("the dry run moved an order: %s", st)
		}
		if code, _, stderr := run(t, "sync", "--config", s.cfg); code != ExitOK {
			t.Fatalf("sync: exit %d\n%s", code, stderr)
		}
		if st := orderState(t, s.srv, string(big)); st != waldur.OrderPendingProvider {
			t.Errorf("the order that would oversell is %s, want pending-provider", st)
		}
		e, pools := s.entry(t, big)
		if e.Cause != changeset.CauseCapacityExceeded || !strings.Contains(e.Reason, "nvidia.com/gpu requested 4, 2 free of 8") {
			t.Errorf("the waiting order's entry: cause %q, reason %q", e.Cause, e.Reason)
		}
		if st := orderState(t, s.srv, string(small)); st == waldur.OrderPendingProvider {
			t.Error("the younger order that fits was not approved")
		}
		if e, _ := s.entry(t, small); !strings.Contains(e.Reason, "goes ahead of older order "+string(big)) {
			t.Errorf("the younger order's entry does not say it went ahead: %q", e.Reason)
		}
		gpu := findPool(t, pools, "nvidia.com/gpu")
		if gpu.Allocatable != 8 || gpu.Committed != 8 || gpu.Waiting != 4 || gpu.Free != 0 || gpu.Nodes != 2 {
			t.Errorf("the pool's GPU account: %+v", gpu)
		}

		term := s.srv.AddOrder(gpuOffering, waldur.Order{Type: waldur.OrderTerminate, State: waldur.OrderPendingProvider, MarketplaceResourceUUID: s.held, Created: time.Now()})
		if code, _, stderr := run(t, "sync", "--config", s.cfg); code != ExitOK {
			t.Fatalf("sync after the Terminate: exit %d\n%s", code, stderr)
		}
		if st := orderState(t, s.srv, string(term)); st == waldur.OrderPendingProvider {
			t.Error("the Terminate order was not approved")
		}
		if st := orderState(t, s.srv, string(big)); st == waldur.OrderPendingProvider {
			t.Error("the capacity the Terminate freed did not let the waiting order through in the same run")
		}
	})

	t.Run("reject", func(t *testing.T) {
		s := newCapacitySite(t, admin, ", on_exceeded: reject")
		big := s.create("big", "4", time.Hour)
		if code, _, stderr := run(t, "sync", "--config", s.cfg); code != ExitOK {
			t.Fatalf("sync: exit %d\n%s", code, stderr)
		}
		o := s.srv.RawOrder(big)
		if o["state"] != "rejected" {
			t.Fatalf("order is %v, want rejected", o["state"])
		}
		if e, _ := s.entry(t, big); !strings.Contains(e.Reason, "2 free of 8") {
			t.Errorf("the rejection does not say what is free: %q", e.Reason)
		}
	})

	t.Run("overcommit", func(t *testing.T) {
		s := newCapacitySite(t, admin, ", overcommit: {nvidia.com/gpu: 1.5}")
		big := s.create("big", "4", 2*time.Hour)
		extra := s.create("extra", "4", time.Hour)
		if code, _, stderr := run(t, "sync", "--config", s.cfg); code != ExitOK {
			t.Fatalf("sync: exit %d\n%s", code, stderr)
		}
		if st := orderState(t, s.srv, string(big)); st == waldur.OrderPendingProvider {
			t.Error("with overcommit 1.5 (12 GPUs to sell) an order for 4 more than 6 did not go through")
		}
		if st := orderState(t, s.srv, string(extra)); st != waldur.OrderPendingProvider {
			t.Errorf("an order for 4 more than 10 of 12 is %s, want pending-provider", st)
		}
		if e, _ := s.entry(t, extra); !strings.Contains(e.Reason, "2 free of 12 (allocatable 8 × overcommit 1.5") {
			t.Errorf("the waiting order's reason: %q", e.Reason)
		}
	})

	t.Run("an unreadable cluster approves nothing", func(t *testing.T) {
		s := newCapacitySite(t, cluster.KubeconfigPath("nobody"), "")
		small := s.create("small", "1", time.Hour)
		code, _, stderr := run(t, "sync", "--config", s.cfg)
		if code != ExitCluster {
			t.Fatalf("sync: exit %d, want %d (a cluster failure)\n%s", code, ExitCluster, stderr)
		}
		if !strings.Contains(stderr, "capacity pool") || !strings.Contains(stderr, "list nodes") {
			t.Errorf("the failure does not name the pool and what failed:\n%s", stderr)
		}
		if st := orderState(t, s.srv, string(small)); st != waldur.OrderPendingProvider {
			t.Errorf("an order of an unreadable pool is %s, want pending-provider", st)
		}
		if e, _ := s.entry(t, small); e.Cause != changeset.CauseCapacityUnknown {
			t.Errorf("the order's entry: cause %q, reason %q", e.Cause, e.Reason)
		}
	})
}

func findPool(t *testing.T, lines []report.PoolLine, res string) report.PoolLine {
	t.Helper()
	for _, l := range lines {
		if l.Resource == res {
			return l
		}
	}
	t.Fatalf("no capacity line for %s in %+v", res, lines)
	return report.PoolLine{}
}
