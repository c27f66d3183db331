package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// The example's orders, all of the UT namespaces offering.
const (
	orderPendingCreate = "54a6292c9df2281797c20a09d7c0590f"
	orderCreate        = "197045b243082fbd3d6674b86f764e99"
	orderUpdate        = "94fbd109e4e61a77ebcde57fd576f006"
	orderTerminate     = "b27725411f259df9ed8303ba8c6910ed"
)

func orderState(t *testing.T, srv *waldurtest.Server, id string) string {
	t.Helper()
	o, ok := srv.Order(waldur.UUID(id))
	if !ok {
		t.Fatalf("order %s not found", id)
	}
	return o.State
}

// directSetup starts a real API server (with the CRDs when crds is set), the
// Waldur test server with the example and the Keycloak fake, and returns the
// config and the kubeconfig for apply.
func directSetup(t *testing.T, crds ...string) (*waldurtest.Server, *kctest.Server, string, string) {
	t.Helper()
	ctx := context.Background()
	cluster := startCluster(t)
	// The namespaces the example's objects live in but that nothing renders:
	// the ManagedNamespace namespace, and Rancher's cluster and project
	// namespaces, which Rancher would create.
	var ns strings.Builder
	for _, n := range []string{"waldur-system", "c-m-4xk2p9q7", "c-m-4xk2p9q7-p-7hd2k", "c-m-4xk2p9q7-p-66c12061a482", "c-m-4xk2p9q7-p-9e161e6c11cb"} {
		ns.WriteString("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + n + "\n")
	}
	nsFile := filepath.Join(t.TempDir(), "namespaces.yaml")
	writeFile(t, nsFile, ns.String())
	if _, err := cluster.ApplyFiles(ctx, append(crds, nsFile)...); err != nil {
		t.Fatal(err)
	}
	wsrv, waldurCfg := serveExample(t)
	kc := kctest.NewServer()
	t.Cleanup(kc.Close)
	cfg := keycloakConfigFrom(t, waldurCfg, kc.URL, "", true)
	addExampleUsers(t, kc, cfg)
	return wsrv, kc, cfg, cluster.KubeconfigPath(kubetest.Admin)
}

// TestApplyClosesTheLoop: direct mode runs the whole cycle with the cluster as
// the publisher: the pending order is approved, the executing orders are done
// once their tenants are applied, the Keycloak groups exist, and a second run
// changes nothing anywhere.
func TestApplyClosesTheLoop(t *testing.T) {
	wsrv, kc, cfg, kubeconfig := directSetup(t, "../apply/testdata/crds/managednamespace.yaml", "../apply/testdata/crds/rancher.yaml")
	code, stdout, stderr := run(t, "apply", "--config", cfg, "--kubeconfig", kubeconfig, "--output", "json")
	if code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	rep := readReport(t, []byte(stdout))
	var names []string
	for _, st := range rep.Stages {
		names = append(names, st.Name)
	}
	if got := strings.Join(names, " "); got != "waldur agent approve offboard render quota apply keycloak proof orders feedback" {
		t.Errorf("stages %s", got)
	}
	for _, id := range []string{orderPendingCreate, orderCreate, orderUpdate, orderTerminate} {
		if st := orderState(t, wsrv, id); st != waldur.OrderDone {
			t.Errorf("order %s is %s after apply, want done", id, st)
		}
	}
	if len(kc.Paths("hpc")) == 0 || rep.Counts["keycloak"]["create"] == 0 {
		t.Errorf("no Keycloak groups created: %v", rep.Counts)
	}

	kc.ResetCounts()
	code, stdout, stderr = run(t, "apply", "--config", cfg, "--kubeconfig", kubeconfig, "--output", "json")
	rep = readReport(t, []byte(stdout))
	if code != ExitOK || kc.Writes() != 0 || rep.Counts["apply"]["create"]+rep.Counts["apply"]["update"] != 0 {
		t.Errorf("second apply: exit %d, %d Keycloak writes, counts %v\n%s", code, kc.Writes(), rep.Counts, stderr)
	}
	// The second process took the Keycloak memory from the ConfigMap the
	// first left in the kubeconfig's namespace: no listing of the realm.
	if n := kc.Calls()["GET /groups"]; n != 0 {
		t.Errorf("second apply listed the realm %d times: the memory was not kept in the cluster", n)
	}
}

// TestApplyErrsRefusedOrders: a tenant the API server cannot take (its CRD is
// missing) has its executing orders erred with the server's reason, while the
// other offerings' tenants are applied and the run exits 11.
func TestApplyErrsRefusedOrders(t *testing.T) {
	wsrv, _, cfg, kubeconfig := directSetup(t, "../apply/testdata/crds/rancher.yaml")
	code, _, stderr := run(t, "apply", "--config", cfg, "--kubeconfig", kubeconfig)
	if code != ExitApply {
		t.Fatalf("apply without the ManagedNamespace CRD: exit %d, want %d\n%s", code, ExitApply, stderr)
	}
	for _, id := range []string{orderCreate, orderUpdate} {
		o := wsrv.RawOrder(waldur.UUID(id))
		if msg, _ := o["error_message"].(string); o["state"] != waldur.OrderErred || !strings.Contains(msg, "ManagedNamespace") {
			t.Errorf("order %s: %v %q, want erred naming the missing kind", id, o["state"], msg)
		}
	}
	// The Terminate order's tenant has nothing to remove: it is done.
	if st := orderState(t, wsrv, orderTerminate); st != waldur.OrderDone {
		t.Errorf("terminate order %s", st)
	}
}

// TestApplyOptOuts: --no-orders and --no-keycloak leave Waldur's orders and
// Keycloak alone.
func TestApplyOptOuts(t *testing.T) {
	wsrv, kc, cfg, kubeconfig := directSetup(t, "../apply/testdata/crds/managednamespace.yaml", "../apply/testdata/crds/rancher.yaml")
	code, _, stderr := run(t, "apply", "--config", cfg, "--kubeconfig", kubeconfig, "--no-orders", "--no-keycloak")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if st := orderState(t, wsrv, orderPendingCreate); st != waldur.OrderPendingProvider {
		t.Errorf("pending order %s with --no-orders", st)
	}
	if st := orderState(t, wsrv, orderCreate); st != waldur.OrderExecuting {
		t.Errorf("executing order %s with --no-orders", st)
	}
	if n := len(kc.Paths("hpc")); n != 0 {
		t.Errorf("%d Keycloak groups with --no-keycloak", n)
	}
}

// TestApplyUnreachableClusterIsOneLine: the objects of a cluster that cannot
// be reached share one line with their count instead of one line each.
func TestApplyUnreachableClusterIsOneLine(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, kc, "apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster: {server: \"https://127.0.0.1:1\"}\ncontexts:\n- name: x\n  context: {cluster: x, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user: {token: abc}\n")
	code, stdout, stderr := run(t, "apply", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--kubeconfig", kc, "--no-keycloak")
	if code != ExitApply {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var lines, counted int
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "cluster unreachable") {
			lines++
			if strings.Contains(l, " object(s) skipped: ") {
				counted++
			}
		}
	}
	if lines != 1 || counted != 1 {
		t.Errorf("%d lines name the unreachable cluster (%d with a count), want 1:\n%s", lines, counted, stdout)
	}
}
