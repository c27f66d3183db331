package flux_test

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/testenv/fluxtest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
)

// Shards in parts (git.flux_shard_parts, docs/gitops.md#shard-parts) with
// the real Flux controllers. A site cut in parts in the plain Git layout
// applies every shard through one Kustomization per part, the cluster
// holding exactly the render; it moves to shard branches without an object
// changing (the parts building from the shard's one branch); a one-tenant
// change then moves one branch and reaches the cluster without touching
// another object; asking for another part count without a new generation
// changes nothing; the site moves through the OCI layout and back; a new
// generation applied whole takes every tenant over, and deleting the old
// parts and their sources deletes nothing; and back in the plain Git layout
// no namespace has a new UID.
func TestFluxShardParts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Flux controllers")
	}
	const shards, parts = 2, 3
	s := startWith(t, 30, shards, true, "flux_shard_parts: 3")
	g := &s.cfg.Git
	g.FluxReconcile, g.FluxKubeconfigPath = true, s.cluster.KubeconfigPath(kubetest.Admin)
	s.waitApplied(s.sync())
	if got := s.expectedShards(); len(got) != shards*parts {
		t.Fatalf("Kustomizations %v, want %d shards of %d parts", got, shards, parts)
	}
	want, owner := s.rendered()
	s.checkMatches(want, owner)
	uids, before := s.uids(), versions(s.live())

	// To shard branches: the parts keep their Kustomizations.
	g.FluxShardBranches, g.FluxShardBranchesSecretName = true, "waldur-tenants-git"
	out, moved := s.syncBranches()
	if len(moved) != shards {
		t.Fatalf("the switch moved %v, want %d shard branches", moved, shards)
	}
	s.waitBranchesApplied(out.Published.FluxRevisions)
	if after := versions(s.live()); !maps.Equal(after, before) {
		t.Errorf("switching a site in parts to shard branches moved %d of %d objects", differ(after, before), len(before))
	}
	s.checkMatches(want, owner)

	s.oneTenantBranchChange()

	// Another part count without a new generation: the generation keeps its.
	g.FluxShardParts = 2
	if _, moved := s.syncBranches(); len(moved) != 0 || gitsync.PartsOf(s.tip(), 0) != parts {
		t.Errorf("asking for 2 parts in a generation of %d moved %v; the tree has %d parts", parts, moved, gitsync.PartsOf(s.tip(), 0))
	}
	s.switchThroughOCI(uids)
	s.reshardParts(uids)

	// And back to the plain Git layout.
	before = versions(s.live())
	g.FluxShardBranches, g.FluxShardBranchesSecretName = false, ""
	s.waitApplied(s.sync())
	if got := s.uids(); !maps.Equal(got, uids) {
		t.Errorf("switching back to the Git layout changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
	}
	if after := versions(s.live()); !maps.Equal(after, before) {
		t.Errorf("switching back to the Git layout moved %d of %d objects", differ(after, before), len(before))
	}
}

// reshardParts starts generation 1, each shard applied whole, over a site
// in parts: the old parts report their path missing, the new shards take
// every tenant over, and deleting the old parts and their sources deletes
// no tenant object.
func (s *site) reshardParts(uids map[string]types.UID) {
	s.t.Helper()
	g := &s.cfg.Git
	old := gitsync.LayoutFor(s.cfg.Config)
	old.Previous = s.tip()
	oldKzs := old.Kustomizations()
	oldShards, _ := old.ShardDirs()
	g.FluxShardGeneration, g.FluxShardParts = 1, 1
	out, moved := s.syncBranches()
	newShards, _ := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	if len(moved) != len(newShards)+len(oldShards) {
		s.t.Errorf("a new generation moved %v, want %d new and %d emptied shard branches", moved, len(newShards), len(oldShards))
	}
	s.waitBranchesApplied(out.Published.FluxRevisions)
	for _, k := range oldKzs {
		s.waitPathMissing(k.Name)
	}
	want, owner := s.rendered()
	s.checkMatches(want, owner)
	del := func(gvr schema.GroupVersionResource, name string) {
		if err := s.dc.Resource(gvr).Namespace(fluxtest.Namespace).Delete(s.ctx, name, metav1.DeleteOptions{}); err != nil {
			s.t.Fatalf("delete the old %s %s: %v", gvr.Resource, name, err)
		}
	}
	for _, k := range oldKzs {
		del(kustomizations, k.Name)
	}
	for _, n := range oldShards {
		del(gitRepositories, n)
	}
	s.waitFor("old parts deleted", func() (bool, string) {
		for _, k := range oldKzs {
			if _, err := s.dc.Resource(kustomizations).Namespace(fluxtest.Namespace).Get(s.ctx, k.Name, metav1.GetOptions{}); err == nil {
				return false, k.Name + " still there"
			}
		}
		return true, ""
	})
	s.checkMatches(want, owner)
	if got := s.uids(); !maps.Equal(got, uids) {
		s.t.Errorf("resharding a site in parts changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
	}
}
