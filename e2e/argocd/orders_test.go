package argocd

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/cli"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/argotest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestArgoCDShardOrdersApplied: with orders.complete_when: applied, Argo CD
// as the consumer (git.argocd_namespace) and the per-shard form of the
// example (git.flux_shard_branches), a Create order and a Terminate order
// read from Waldur stay executing while the Applications of the shards
// they changed have not synced the shard branches' new tips, and the run
// after Argo CD synced them sets both done.
func TestArgoCDShardOrdersApplied(t *testing.T) {
	st := startStack(t)
	ctx, dist, cluster, dc, srv, repoURL, repo := st.ctx, st.dist, st.cluster, st.dc, st.srv, st.repoURL, st.repo

	opts := synth.Options{Tenants: 12, Seed: 22, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	snap := synth.Snapshot(opts)
	api := waldurtest.New(t)
	api.Seed(&snap.State)
	cfg := writeConfig(t, opts, repoURL, srv.User())
	withShardBranches(t, cfg)
	withOrdersApplied(t, cfg, api, cluster.KubeconfigPath(kubetest.Admin))
	syncAPI(t, cfg)
	head := gittest.Head(t, repo, "main")
	tips := shardTips(t, repo, head)
	before := tenants(t, repo, head)

	argo, err := argotest.Start(ctx, dist, cluster, argotest.Options{RepoURL: repoURL, Username: srv.User(), Password: srv.Password()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Argo CD logs:\n%s", argo.Logs())
		}
		argo.Stop()
	})
	applyShardExample(ctx, t, cluster, repoURL)
	waitShardApps(ctx, t, dc, tips)

	// Waldur asks for a new tenant and for the end of an existing one.
	model := firstRendered(t, snap, 0)
	created := api.AddResource(waldur.Resource{OfferingUUID: model.OfferingUUID, Slug: "shard-order", Name: "shard-order", State: waldur.ResourceCreating,
		ProjectUUID: model.ProjectUUID, ProjectSlug: model.ProjectSlug, ProjectName: model.ProjectName, CustomerUUID: model.CustomerUUID,
		CustomerSlug: model.CustomerSlug, CustomerName: model.CustomerName, Limits: model.Limits})
	create := api.AddOrder(model.OfferingUUID, waldur.Order{Type: waldur.OrderCreate, State: waldur.OrderExecuting, MarketplaceResourceUUID: created, Created: time.Now()})
	ending := *firstRendered(t, snap, 1)
	ending.State = waldur.ResourceTerminating
	api.AddResource(ending)
	terminate := api.AddOrder(ending.OfferingUUID, waldur.Order{Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: ending.UUID, Created: time.Now()})

	// The run pushes both; Argo CD has not fetched the moved shard
	// branches (it polls every three minutes), so both orders wait.
	syncAPI(t, cfg)
	head = gittest.Head(t, repo, "main")
	after := shardTips(t, repo, head)
	var moved []string
	for app, rev := range after {
		if rev != tips[app] {
			moved = append(moved, app)
		}
	}
	added, removed := onlyIn(tenants(t, repo, head), before), onlyIn(before, tenants(t, repo, head))
	if len(moved) == 0 || len(added) != 1 || len(removed) != 1 {
		t.Fatalf("the run moved shard branches %v, added tenants %v and removed %v; want a branch moved, one tenant each", moved, added, removed)
	}
	t.Logf("the run moved shard branches %v (tenants changed: %v)", moved, changedTenants(before, tenants(t, repo, head)))
	if synced(ctx, t, dc, moved, after) {
		t.Log("Argo CD polled the moved shard branches during the run: the orders' wait is not observed")
	} else {
		for _, id := range []waldur.UUID{create, terminate} {
			if st := orderState(t, api, id); st != waldur.OrderExecuting {
				t.Fatalf("order %s is %s before Argo CD synced its shard branch, want executing", id, st)
			}
		}
	}

	// Argo CD fetches the moved branches (what a Git webhook asks for).
	for _, app := range moved {
		annotate(ctx, t, dc, applications, app, refreshApp, "normal")
	}
	waitShardApps(ctx, t, dc, after)
	gone := before[removed[0]].namespace
	waitFor(ctx, t, "the namespace "+gone+" of the terminated tenant to go", func() (bool, error) {
		_, err := dc.Resource(namespaces).Get(ctx, gone, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	syncAPI(t, cfg)
	for _, id := range []waldur.UUID{create, terminate} {
		if st := orderState(t, api, id); st != waldur.OrderDone {
			t.Errorf("order %s is %s after Argo CD synced the shard branches, want done", id, st)
		}
	}
}

// withOrdersApplied points the config file cfg at the Waldur test server,
// with orders.complete_when: applied, Argo CD's Applications in
// argotest.Namespace, and the offerings' cluster at kubeconfig; a run waits
// five seconds for it.
func withOrdersApplied(t *testing.T, cfg string, api *waldurtest.Server, kubeconfig string) {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, r := range []struct{ old, new string }{
		{"waldur_api_url: https://waldur.example.org/api/\n", "waldur_api_url: " + api.URL() + "\n"},
		{"waldur_api_token: synthetic-token\n", "waldur_api_token: " + api.Token() + "\n    order_done_timeout_seconds: 5\n"},
		{"    backend_settings:\n", "    backend_settings:\n      kubeconfig_path: " + kubeconfig + "\n"},
		{"  flux_shard_branches: true\n", "  flux_shard_branches: true\n  argocd_namespace: " + argotest.Namespace + "\n"},
		{"offerings:\n", "orders:\n  complete_when: applied\nofferings:\n"},
	} {
		if !strings.Contains(text, r.old) {
			t.Fatalf("the synthetic config has no %q to rewrite", r.old)
		}
		text = strings.ReplaceAll(text, r.old, r.new)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// syncAPI runs `waldur-gitops sync` reading Waldur's API.
func syncAPI(t *testing.T, cfg string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main([]string{"sync", "--config", cfg}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("sync: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// onlyIn returns the Application names of a that b lacks, sorted.
func onlyIn(a, b map[string]tenant) []string {
	var out []string
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// synced reports whether every Application of apps is Synced at its
// revision in revs.
func synced(ctx context.Context, t *testing.T, dc dynamic.Interface, apps []string, revs map[string]string) bool {
	t.Helper()
	for _, name := range apps {
		app, err := dc.Resource(applications).Namespace(argotest.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		status, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
		if status != "Synced" || rev != revs[name] {
			return false
		}
	}
	return true
}

func orderState(t *testing.T, api *waldurtest.Server, id waldur.UUID) string {
	t.Helper()
	o, ok := api.Order(id)
	if !ok {
		t.Fatalf("order %s unknown", id)
	}
	return o.State
}
