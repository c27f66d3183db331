package orders

import (
	"context"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/render"
)

// argoShards is what the applied check of Argo CD needs in the per-shard
// form (git.flux_shard_branches, examples/argocd/applicationset-shards.yaml):
// the shard layout that places a tenant, and the tip of every shard branch
// after the push, by shard name.
type argoShards struct {
	layout gitsync.FluxLayout
	tips   map[string]string
}

// shardTips maps every shard to the commit its branch's revision names:
// revisions are publish.Published.FluxRevisions of the shard-branch layout,
// "waldur-gitops/shards/<name>@sha1:<commit>" by shard name.
func shardTips(revisions map[string]string) map[string]string {
	out := make(map[string]string, len(revisions))
	for name, rev := range revisions {
		if branch, commit, ok := strings.Cut(rev, "@sha1:"); ok && branch == gitsync.ShardBranch(name) {
			out[name] = commit
		}
	}
	return out
}

// target is the wait for the shard name: its Application Synced at the
// branch's tip ("" when the branch has none, which nothing matches).
func (s *argoShards) target(name string) Target {
	return Target{Branch: gitsync.ShardBranch(name), Commit: s.tips[name]}
}

// expect adds the shard targets of a Done order: for a tenant in the pushed
// tree, the shard of each of its offering's targets that holds it; for a
// termination, whose tenant no shard names any more, every shard of its
// offering's targets, one of which held it and prunes it.
func (s *argoShards) expect(e *Executing, placed map[string]map[string]int) {
	for _, tg := range s.layout.Targets {
		if tg.Offering != e.Offering.Dir {
			continue
		}
		if e.Expect.Gone {
			for n := 0; n < s.layout.Shards; n++ {
				e.Expect.Argo = append(e.Expect.Argo, s.target(s.layout.ShardName(tg, n)))
			}
			continue
		}
		if shard, ok := placed[tg.Offering+"/"+tg.Target][e.Expect.tenant]; ok {
			e.Expect.Argo = append(e.Expect.Argo, s.target(s.layout.ShardName(tg, shard)))
		}
	}
}

// expect adds to every Done order of an offering with order_done_on:
// applied what Argo CD must show. With one Application per tenant directory
// that is each of the tenant's directories at commit (not for a
// termination: the namespace going proves the resources finalizer ran).
// In the per-shard form it is the Application of each shard that holds the
// tenant, at its branch's tip, for a termination too (pushed places them).
func (a *ArgoCD) expect(plan []Executing, commit string, pushed render.Tree) {
	if a == nil || commit == "" {
		return
	}
	var placed map[string]map[string]int
	if a.shards != nil {
		placed = gitsync.Placement(pushed, a.shards.layout.Generation)
	}
	for i := range plan {
		e := &plan[i]
		if e.Outcome != Done || e.Expect == nil || e.Offering.DoneOn != config.DoneOnApplied {
			continue
		}
		switch {
		case a.shards != nil:
			e.Expect.argo = a
			a.shards.expect(e, placed)
		case !e.Expect.Gone:
			e.Expect.argo = a
			for _, d := range e.Expect.dirs {
				e.Expect.Argo = append(e.Expect.Argo, Target{Dir: d, Commit: commit})
			}
		}
	}
}

// shardAppliedAt is AppliedAt for a Target with a Branch: the one
// Application following that branch of RepoURL must be Synced at Commit.
// Its health is the shard's, not the tenant's, so it is not asked: a
// degraded neighbour would hold back every order of the shard, while the
// tenant's own objects are checked in the cluster.
func (a *ArgoCD) shardAppliedAt(ctx context.Context, lists *argoLists, t Target) (bool, string, error) {
	mine, err := lists.following(ctx, a.Namespace, a.RepoURL, t.Branch)
	if err != nil {
		return false, "", err
	}
	switch len(mine) {
	case 0:
		return false, "no argo cd application follows branch " + t.Branch + " yet", nil
	case 1:
	default:
		return false, "argo cd applications " + appNames(mine) + " all follow branch " + t.Branch + ": want one", nil
	}
	app := mine[0]
	switch {
	case t.Commit == "":
		return false, "branch " + t.Branch + " has no commit yet", nil
	case app.Deleting:
		return false, "argo cd application " + app.Name + " is being deleted", nil
	case app.SyncStatus != "Synced" || !slices.Contains(app.SyncRevisions, t.Commit):
		return false, "argo cd application " + app.Name + " of branch " + t.Branch + " is " + orUnknown(app.SyncStatus) + " at " + short(app.SyncRevisions) +
			", want Synced at " + shortRev(t.Commit), nil
	}
	return true, "", nil
}
