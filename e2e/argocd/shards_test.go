package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/testenv/argotest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestArgoCDShardApplicationSet: the per-shard form of the example
// (examples/argocd/applicationset-shards.yaml, git.flux_shard_branches)
// gives one Synced/Healthy Application per shard, each at its shard
// branch's tip, and every rendered quota in the cluster; a one-tenant
// change moves one shard branch, whose Application brings the quota once
// refreshed, while the others stay at their revisions.
func TestArgoCDShardApplicationSet(t *testing.T) {
	st := startStack(t)
	ctx, dist, cluster, dc, srv, repoURL, repo := st.ctx, st.dist, st.cluster, st.dc, st.srv, st.repoURL, st.repo

	opts := synth.Options{Tenants: 40, Seed: 21, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	cfg := writeConfig(t, opts, repoURL, srv.User())
	withShardBranches(t, cfg)
	snap := synth.Snapshot(opts)
	syncCLI(t, cfg, writeSnapshot(t, snap))
	head := gittest.Head(t, repo, "main")
	tips := shardTips(t, repo, head)
	if len(tips) != 4 {
		t.Fatalf("%d shard branches, want 4: %v", len(tips), tips)
	}

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
	step := time.Now()
	waitShardApps(ctx, t, dc, tips)
	t.Logf("first sync: %d shard Applications Synced/Healthy %s after the ApplicationSet was applied", len(tips), time.Since(step).Round(10*time.Millisecond))
	want := tenants(t, repo, head)
	for _, tn := range want {
		checkTenant(ctx, t, dc, tn)
	}

	changed := firstRendered(t, snap, 0)
	cpu, err := changed.Limits["cpu"].Int()
	if err != nil {
		t.Fatal(err)
	}
	changed.Limits["cpu"] = waldur.Amount(strconv.FormatInt(cpu+7, 10))
	syncCLI(t, cfg, writeSnapshot(t, snap))
	head = gittest.Head(t, repo, "main")
	after := shardTips(t, repo, head)
	var moved []string
	for app, rev := range after {
		if rev != tips[app] {
			moved = append(moved, app)
		}
	}
	if len(moved) != 1 {
		t.Fatalf("a one-tenant change moved shard branches %v, want one", moved)
	}
	diff := changedTenants(want, tenants(t, repo, head))
	if len(diff) != 1 {
		t.Fatalf("changed tenants %v, want one", diff)
	}
	tn := tenants(t, repo, head)[diff[0]]
	step = time.Now()
	annotate(ctx, t, dc, applications, moved[0], refreshApp, "normal")
	waitFor(ctx, t, "the changed quota of "+tn.app, func() (bool, error) { return quotaMatches(ctx, dc, tn) })
	t.Logf("one-tenant change: quota in the cluster %s after the refresh of %s", time.Since(step).Round(10*time.Millisecond), moved[0])
	waitShardApps(ctx, t, dc, after)
}

// withShardBranches adds git.flux_shard_branches to the config file cfg.
func withShardBranches(t *testing.T, cfg string) {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "  flux_shards: 4\n", "  flux_shards: 4\n  flux_shard_branches: true\n", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shardTips maps the Application name the per-shard example gives every
// cluster shard of main at commit to the tip of its shard branch.
func shardTips(t *testing.T, repo, commit string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for p := range gittest.Files(t, repo, commit) {
		dir, file := filepath.Split(p)
		base := filepath.Base(dir)
		if file != "kustomization.yaml" || !strings.HasPrefix(dir, "waldur/_flux/") || !strings.Contains(base, ".cluster.") {
			continue
		}
		app := "waldur-" + strings.ReplaceAll(base, ".", "-")
		out[app] = gittest.Head(t, repo, gitsync.ShardBranch(app))
	}
	return out
}

// applyShardExample applies the AppProject of applicationset.yaml and
// applicationset-shards.yaml, pointed at the test's repository and cluster.
func applyShardExample(ctx context.Context, t *testing.T, cluster *kubetest.Cluster, repoURL string) {
	t.Helper()
	var docs []string
	base, err := os.ReadFile("../../examples/argocd/applicationset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(base), "\n---\n") {
		if strings.Contains(doc, "\nkind: AppProject\n") {
			docs = append(docs, doc)
		}
	}
	shards, err := os.ReadFile("../../examples/argocd/applicationset-shards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, string(shards))
	edited := strings.ReplaceAll(strings.ReplaceAll(strings.Join(docs, "\n---\n"), exampleRepoURL, repoURL), inCluster, cluster.URL)
	if len(docs) != 2 || strings.Count(edited, repoURL) != 3 || strings.Count(edited, cluster.URL) != 2 {
		t.Fatalf("the AppProject and applicationset-shards.yaml: want the repository URL 3 times and the in-cluster address twice to rewrite:\n%s", edited)
	}
	f := filepath.Join(t.TempDir(), "shards.yaml")
	if err := os.WriteFile(f, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ApplyFiles(ctx, f); err != nil {
		t.Fatal(err)
	}
}

// waitShardApps waits until the Applications are exactly the shards of
// revs, each Synced and Healthy at its shard branch's tip.
func waitShardApps(ctx context.Context, t *testing.T, dc dynamic.Interface, revs map[string]string) {
	t.Helper()
	var last string
	waitFor(ctx, t, fmt.Sprintf("%d shard Applications Synced/Healthy", len(revs)), func() (bool, error) {
		list, err := dc.Resource(applications).Namespace(argotest.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var pending []string
		for _, app := range list.Items {
			sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
			rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
			health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
			if want, ok := revs[app.GetName()]; !ok || sync != "Synced" || health != "Healthy" || rev != want {
				pending = append(pending, fmt.Sprintf("%s %s/%s@%.7s", app.GetName(), sync, health, rev))
			}
		}
		sort.Strings(pending)
		last = fmt.Sprintf("%d Applications, pending %v", len(list.Items), pending)
		return len(list.Items) == len(revs) && len(pending) == 0, nil
	}, func() string { return last })
}

// stack is what the per-shard tests run on: a cluster with the
// controller-manager, Argo CD's binaries, and a Git server holding the
// repository tenants.git whose password the CLI reads from gitPasswordEnv.
type stack struct {
	ctx     context.Context
	dist    *argotest.Dist
	cluster *kubetest.Cluster
	dc      dynamic.Interface
	srv     *gittest.Server
	repoURL string
	repo    string
}

// startStack skips the test unless Env is set, and starts the stack.
func startStack(t *testing.T) *stack {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skipf("the Argo CD end-to-end test runs with %s=1 (make e2e-argocd)", Env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	t.Cleanup(cancel)
	dist, err := argotest.Ensure(ctx, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := kubetest.Start(ctx, kubetest.Options{ControllerManager: true, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	dc, err := dynamic.NewForConfig(cluster.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	srv := gittest.NewServer(t)
	st := &stack{ctx: ctx, dist: dist, cluster: cluster, dc: dc, srv: srv, repoURL: srv.CreateRepo(t, "tenants.git", "main"), repo: srv.RepoDir("tenants.git")}
	t.Setenv(gitPasswordEnv, srv.Password())
	return st
}
