package cli

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestOrdersCompleteWhenApplied: with orders.complete_when: applied, a
// Create order is not done when its commit is pushed but when the cluster
// shows the tenant; an order the cluster does not show within
// orders.apply_timeout of its creation is erred with what is missing.
func TestOrdersCompleteWhenApplied(t *testing.T) {
	ctx := context.Background()
	cluster := startCluster(t)
	kubeconfig := cluster.KubeconfigPath(kubetest.Admin)

	wsrv, waldurCfg := serveExample(t)
	gsrv, repo, url := gitRepo(t)
	cfg := withGit(t, waldurCfg, gsrv, url)
	text := strings.Replace(string(mustRead(t, cfg)), "report: report.json\n", "report: report.json\norders:\n  complete_when: applied\n  apply_timeout: 1h\n", 1)
	text = strings.Replace(text, "  - name: Plain namespaces\n", "  - name: Plain namespaces\n    order_done_timeout_seconds: 1\n", 1)
	text = strings.Replace(text, "      namespace_prefix: tenant-\n", "      namespace_prefix: tenant-\n      kubeconfig_path: "+kubeconfig+"\n", 1)
	text = strings.Replace(text, "  - name: UT namespaces\n", "  - name: UT namespaces\n    order_done_on: commit\n", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}

	// A new Plain resource with a Create order, and an old one that no cluster
	// ever showed.
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	var fresh, stale waldur.UUID
	for _, o := range snap.Offerings {
		if o.Name != "Plain namespaces" {
			continue
		}
		r := o.Resources[0]
		add := func(slug string, created time.Time) waldur.UUID {
			id := wsrv.AddResource(waldur.Resource{OfferingUUID: o.OfferingUUID, Slug: slug, Name: slug, State: waldur.ResourceCreating,
				ProjectUUID: r.ProjectUUID, ProjectSlug: r.ProjectSlug, ProjectName: r.ProjectName, CustomerUUID: r.CustomerUUID,
				CustomerSlug: r.CustomerSlug, CustomerName: r.CustomerName, Limits: waldur.Limits{"cpu": "1", "ram": "1"}})
			return wsrv.AddOrder(o.OfferingUUID, waldur.Order{Type: waldur.OrderCreate, State: waldur.OrderExecuting, MarketplaceResourceUUID: id, Created: created})
		}
		fresh = add("fresh-lab", time.Now().Add(-time.Minute))
		stale = add("stale-lab", time.Now().Add(-2*time.Hour))
	}

	if code, _, stderr := run(t, "sync", "--config", cfg); code != ExitOK {
		t.Fatalf("first sync: exit %d\n%s", code, stderr)
	}
	if st := orderState(t, wsrv, string(fresh)); st != waldur.OrderExecuting {
		t.Fatalf("a pushed but not applied order is %s, want executing", st)
	}
	o := wsrv.RawOrder(stale)
	if msg, _ := o["error_message"].(string); o["state"] != waldur.OrderErred || !strings.Contains(msg, "not applied in the cluster") || !strings.Contains(msg, "apply_timeout") {
		t.Errorf("the order past apply_timeout: %v %q", o["state"], msg)
	}

	// Argo CD or Flux applies the tenant: the next run finishes the order.
	dir := t.TempDir()
	var files []string
	for p, data := range gittest.Files(t, repo, "main") {
		if strings.Contains(p, "/tenant-fresh-lab/") && !strings.HasSuffix(p, "kustomization.yaml") {
			f := filepath.Join(dir, filepath.Base(p))
			writeFile(t, f, data)
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal("the fresh tenant is not in Git")
	}
	// The Namespace first, as Argo CD and Flux order it.
	rank := func(f string) int {
		if strings.HasPrefix(filepath.Base(f), "namespace-") {
			return 0
		}
		return 1
	}
	slices.SortFunc(files, func(a, b string) int { return cmp.Compare(rank(a), rank(b)) })
	if _, err := cluster.ApplyFiles(ctx, files...); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "sync", "--config", cfg); code != ExitOK {
		t.Fatalf("second sync: exit %d\n%s", code, stderr)
	}
	if st := orderState(t, wsrv, string(fresh)); st != waldur.OrderDone {
		t.Errorf("the applied order is %s, want done", st)
	}
}
