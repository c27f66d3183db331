package flux_test

import (
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/testenv/fluxtest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/registrytest"
	"github.com/waldur/waldur-gitops/waldur"
)

// The shard-branch layout (git.flux_shard_branches,
// docs/gitops.md#the-shard-branch-layout): every shard's files go to a
// branch of their own, moved only when they change, and the shard
// Kustomizations build from one GitRepository each, whose revision moves
// only with its shard.

// syncBranches runs sync and returns its outcome and the shard branches it
// moved.
func (s *site) syncBranches() (*engine.Outcome, []string) {
	s.t.Helper()
	out := s.engine.Run(s.ctx, engine.Request{Command: "sync"})
	if out.Err != nil {
		s.t.Fatalf("sync: %v", out.Err)
	}
	var moved []string
	for _, e := range out.Report.Changes {
		if e.Kind == "ShardBranch" && e.Action == changeset.Create {
			moved = append(moved, e.Subject)
		}
	}
	return out, moved
}

// waitBranchesApplied waits until every shard's GitRepository has the tip of
// its branch and every Kustomization of the shard has applied it.
func (s *site) waitBranchesApplied(revs map[string]string) {
	s.t.Helper()
	s.waitSourcesApplied(gitRepositories, revs)
}

// waitSourcesApplied waits until every shard's source (of gvr, named as the
// shard) has the revision revs gives it and every Kustomization of the
// shard (one per part) has applied that revision.
func (s *site) waitSourcesApplied(gvr schema.GroupVersionResource, revs map[string]string) {
	s.t.Helper()
	l := gitsync.LayoutFor(s.cfg.Config)
	l.Previous = s.tip()
	names, _ := l.ShardDirs()
	kzs := l.Kustomizations()
	s.waitFor("shard sources Ready", func() (bool, string) {
		for _, n := range names {
			u, err := s.dc.Resource(gvr).Namespace(fluxtest.Namespace).Get(s.ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if got, _, _ := unstructured.NestedString(u.Object, "status", "artifact", "revision"); got != revs[n] {
				return false, fmt.Sprintf("%s %s has %q, want %s", gvr.Resource, n, got, revs[n])
			}
		}
		for _, k := range kzs {
			st, msg, applied, err := s.ready(k.Name)
			if err != nil || st != "True" || applied != revs[k.Shard] {
				return false, fmt.Sprintf("%s: Ready=%s %q, applied %s, %v", k.Name, st, msg, applied, err)
			}
		}
		return true, ""
	})
}

// A site moves from the plain Git layout to shard branches and back with
// the real Flux controllers: no namespace gets a new UID and no object
// changes on either switch; in between, a one-tenant change moves exactly
// one shard branch, reaches the cluster, and moves no other object.
func TestFluxShardBranches(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Flux controllers")
	}
	const shards = 3
	s := startWith(t, 30, shards, true)
	s.cfg.Git.FluxReconcile, s.cfg.Git.FluxKubeconfigPath = true, s.cluster.KubeconfigPath(kubetest.Admin)
	s.waitApplied(s.sync())
	uids, before := s.uids(), versions(s.live())

	// To shard branches: Flux fetches them with the site's read credential.
	s.cfg.Git.FluxShardBranches, s.cfg.Git.FluxShardBranchesSecretName = true, "waldur-tenants-git"
	out, moved := s.syncBranches()
	if len(moved) != shards {
		t.Fatalf("the switch moved %d shard branches (%v), want %d", len(moved), moved, shards)
	}
	s.waitBranchesApplied(out.Published.FluxRevisions)
	if got := s.uids(); !maps.Equal(got, uids) {
		t.Errorf("switching to shard branches changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
	}
	if after := versions(s.live()); !maps.Equal(after, before) {
		t.Errorf("switching to shard branches moved %d of %d objects", differ(after, before), len(before))
	}
	want, owner := s.rendered()
	s.checkMatches(want, owner)

	s.oneTenantBranchChange()
	if _, moved := s.syncBranches(); len(moved) != 0 {
		t.Errorf("a run with nothing new moved %v", moved)
	}

	s.switchThroughOCI(uids)
	s.reshardBranches(uids)

	// And back to the plain Git layout.
	before = versions(s.live())
	s.cfg.Git.FluxShardBranches, s.cfg.Git.FluxShardBranchesSecretName = false, ""
	s.waitApplied(s.sync())
	if got := s.uids(); !maps.Equal(got, uids) {
		t.Errorf("switching back to the Git layout changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
	}
	if after := versions(s.live()); !maps.Equal(after, before) {
		t.Errorf("switching back to the Git layout moved %d of %d objects", differ(after, before), len(before))
	}
	want, owner = s.rendered()
	s.checkMatches(want, owner)
}

// oneTenantBranchChange raises the first resource's CPU limit and syncs:
// exactly one shard branch moves, the quota reaches the cluster, and no
// other object's resourceVersion changes.
func (s *site) oneTenantBranchChange() {
	s.t.Helper()
	r := s.firstResource()
	ns := s.namespaceOf(r.UUID)
	cpu, _ := strconv.Atoi(string(r.Limits["cpu"]))
	r.Limits["cpu"] = waldur.Amount(strconv.Itoa(cpu + 1))
	before := versions(s.live())
	out, moved := s.syncBranches()
	if len(moved) != 1 {
		s.t.Fatalf("a one-tenant change moved %v, want one shard branch", moved)
	}
	s.waitFor("quota changed", func() (bool, string) { return quotaIs(s, ns, strconv.Itoa(cpu+1)) })
	s.waitBranchesApplied(out.Published.FluxRevisions)
	after := versions(s.live())
	quota := "ResourceQuota/" + ns + "/" + quotaName(s.live(), ns)
	for k, rv := range before {
		if k != quota && after[k] != rv {
			s.t.Errorf("%s: resourceVersion %s → %s, though only %s changed", k, rv, after[k], quota)
		}
	}
}

// switchThroughOCI moves the site from shard branches to the OCI layout
// and back: neither switch gives a namespace a new UID or changes an object.
func (s *site) switchThroughOCI(uids map[string]types.UID) {
	s.t.Helper()
	host := registrytest.Start(s.t, nil)
	before := versions(s.live())
	g := &s.cfg.Git
	g.FluxShardBranches, g.FluxOCIRepository, g.FluxOCIInsecure = false, host+"/site/tenants", true
	out, pushed := s.syncOCI()
	if pushed != g.FluxShards {
		s.t.Errorf("the switch to OCI pushed %d artifacts, want %d", pushed, g.FluxShards)
	}
	s.waitOCIApplied(out.Published.FluxRevisions)
	g.FluxShardBranches, g.FluxOCIRepository, g.FluxOCIInsecure = true, "", false
	out, moved := s.syncBranches()
	if len(moved) != 0 {
		s.t.Errorf("back from OCI moved shard branches %v, whose content did not change", moved)
	}
	s.waitBranchesApplied(out.Published.FluxRevisions)
	if got := s.uids(); !maps.Equal(got, uids) {
		s.t.Errorf("switching to OCI and back changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
	}
	if after := versions(s.live()); !maps.Equal(after, before) {
		s.t.Errorf("switching to OCI and back moved %d of %d objects", differ(after, before), len(before))
	}
}

// reshardBranches lowers the shard count and then starts a new shard
// generation in the shard-branch layout: a shard no longer generated gets a
// commit without its directory and reports its path missing; deleting the
// old shards (Kustomization and GitRepository) deletes no tenant object.
func (s *site) reshardBranches(uids map[string]types.UID) {
	s.t.Helper()
	g := &s.cfg.Git
	names, _ := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	orphan := names[len(names)-1]
	g.FluxShards--
	out, moved := s.syncBranches()
	if len(moved) < 2 {
		s.t.Errorf("lowering the count moved %v: the orphan's branch and at least one receiving shard's", moved)
	}
	s.waitBranchesApplied(out.Published.FluxRevisions)
	s.waitPathMissing(orphan)

	oldNames, _ := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	g.FluxShards, g.FluxShardGeneration = g.FluxShards+2, 1
	newNames, _ := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	out, moved = s.syncBranches()
	if len(moved) != len(newNames)+len(oldNames) {
		s.t.Errorf("a new generation moved %d shard branches, want %d new and %d emptied", len(moved), len(newNames), len(oldNames))
	}
	s.waitBranchesApplied(out.Published.FluxRevisions)
	for _, n := range oldNames {
		s.waitPathMissing(n)
	}
	want, owner := s.rendered()
	s.checkMatches(want, owner)
	gone := append(oldNames, orphan)
	for _, n := range gone {
		for _, gvr := range []schema.GroupVersionResource{kustomizations, gitRepositories} {
			if err := s.dc.Resource(gvr).Namespace(fluxtest.Namespace).Delete(s.ctx, n, metav1.DeleteOptions{}); err != nil {
				s.t.Fatalf("delete the old shard %s: %v", n, err)
			}
		}
	}
	s.waitFor("old shards deleted", func() (bool, string) {
		for _, n := range gone {
			if _, err := s.dc.Resource(kustomizations).Namespace(fluxtest.Namespace).Get(s.ctx, n, metav1.GetOptions{}); err == nil {
				return false, n + " still there"
			}
		}
		return true, ""
	})
	s.checkMatches(want, owner)
	if got := s.uids(); !maps.Equal(got, uids) {
		s.t.Errorf("resharding changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
	}
}

// BenchmarkFluxOneTenantChangeBranches is BenchmarkFluxOneTenantChangeOCI
// with the shard-branch layout (git.flux_shard_branches,
// git.flux_reconcile): the times count from the end of the run, which
// pushed the commit and the changed shard's branch together, then asked for
// that shard's reconcile. full-kustomize-cpu-s is what the first sync (every
// shard applied) cost kustomize-controller, the yardstick of the issue's
// "under 25% of a full apply". The same $WALDUR_GITOPS_FLUX_BENCH sizes apply.
func BenchmarkFluxOneTenantChangeBranches(b *testing.B) {
	tenants, shards, keys := benchSize(b)
	s := startWith(b, tenants, shards, true, append([]string{"flux_shard_branches: true", "flux_shard_branches_secret_name: waldur-tenants-git"}, keys...)...)
	s.cfg.Git.FluxReconcile, s.cfg.Git.FluxKubeconfigPath = true, s.cluster.KubeconfigPath(kubetest.Admin)
	first := time.Now()
	full0 := s.flux.CPU()
	out, _ := s.syncBranches()
	s.limit = 30 * time.Minute // the first sync of 10,000 tenants
	s.trigger()
	s.waitBranchesApplied(out.Published.FluxRevisions)
	// A shard whose reconcile failed once (seen under heavy load) is retried
	// after its retryInterval, 2 minutes: wait past it.
	s.limit = 10 * time.Minute
	full1 := s.flux.CPU()
	b.Logf("first sync of %d tenants in %d shard branches: every shard Ready %.1fs after the start of the run", tenants, shards, time.Since(first).Seconds())
	r := s.firstResource()
	ns := s.namespaceOf(r.UUID)
	cpu, _ := strconv.Atoi(string(r.Limits["cpu"]))
	var toQuota, toReady, run time.Duration
	profiled := s.profile(b)
	cpu0 := s.flux.CPU()
	n, touched := 0, 0
	for b.Loop() {
		n++
		cpu++
		r.Limits["cpu"] = waldur.Amount(strconv.Itoa(cpu))
		start := time.Now()
		out, moved := s.syncBranches()
		at := time.Now()
		run += at.Sub(start)
		touched += len(moved)
		s.waitFor("quota changed", func() (bool, string) { return quotaIs(s, ns, strconv.Itoa(cpu)) })
		toQuota += time.Since(at)
		s.waitBranchesApplied(out.Published.FluxRevisions)
		toReady += time.Since(at)
	}
	cpu1 := s.flux.CPU()
	profiled()
	per := func(d time.Duration) float64 { return d.Seconds() / float64(n) }
	b.ReportMetric(per(run), "s-run")
	b.ReportMetric(per(toQuota), "s-to-quota")
	b.ReportMetric(per(toReady), "s-to-ready")
	b.ReportMetric(per(cpu1["kustomize-controller"]-cpu0["kustomize-controller"]), "kustomize-cpu-s/op")
	b.ReportMetric(per(cpu1["source-controller"]-cpu0["source-controller"]), "source-cpu-s/op")
	b.ReportMetric((full1["kustomize-controller"] - full0["kustomize-controller"]).Seconds(), "full-kustomize-cpu-s")
	b.ReportMetric(float64(touched)/float64(n), "branches-moved/op")
}
