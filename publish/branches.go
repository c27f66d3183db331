package publish

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/ociship"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// shardSource is what the shard branches hold in the shard-branch layout
// (git.flux_shard_branches): per shard generated, the files of its OCI
// artifact (ociship.ArtifactFiles), and no files for a shard no longer
// generated — one the tree on the tip still has, or whose branch (named
// with this site's prefix) is still on the server — so that its
// Kustomization reports its path missing and does nothing, as in the other
// layouts.
func shardSource(cfg *config.Config) gitsync.ShardSource {
	return func(cur, next render.Tree, existing []string) []gitsync.ShardContent {
		layout := gitsync.LayoutFor(cfg)
		names, dirs := layout.ShardDirs()
		out := make([]gitsync.ShardContent, 0, len(names))
		for i, n := range names {
			out = append(out, gitsync.ShardContent{Name: n, Files: ociship.ArtifactFiles(next, dirs[i])})
		}
		orphans, _ := layout.Orphans(cur)
		for _, n := range existing {
			if ours(layout, n) {
				orphans = append(orphans, n)
			}
		}
		slices.Sort(orphans)
		for _, n := range slices.Compact(orphans) {
			if !slices.Contains(names, n) {
				out = append(out, gitsync.ShardContent{Name: n, Files: map[string][]byte{}})
			}
		}
		return out
	}
}

// ours reports whether a shard name is of one of the layout's targets
// (<prefix><offering>-<target>-…), whatever its generation or number: a
// branch of another installation in the same repository is left alone.
func ours(l gitsync.FluxLayout, name string) bool {
	prefix := cmp.Or(l.NamePrefix, gitsync.DefaultFluxNamePrefix)
	for _, tg := range l.Targets {
		if strings.HasPrefix(name, prefix+tg.Offering+"-"+tg.Target+"-") {
			return true
		}
	}
	return false
}

// shardBranches records what the push did to the shard branches: one
// ShardBranch entry per branch moved (or not, with the reason), the
// revision Flux reports for every shard, and, when they failed after the
// branch, the tenants they hold back. It asks Flux to fetch the moved
// shards.
func (p *Git) shardBranches(ctx context.Context, pub *Published, calls map[string]int) (changeset.Set, error) {
	var cs changeset.Set
	err := p.repo.ShardErr()
	moves := p.repo.ShardMoves()
	if err == nil && pub.Ref == "" {
		// Nothing committed: push what a failed run left behind, if anything.
		err = p.repo.PushShards(ctx)
		moves = p.repo.ShardMoves()
	}
	pub.FluxRevisions = map[string]string{}
	for name, tip := range p.repo.ShardTips() {
		pub.FluxRevisions[name] = gitsync.ShardBranch(name) + "@sha1:" + tip
	}
	for _, m := range moves {
		cs.Add(changeset.Entry{Stage: "git", Kind: "ShardBranch", Subject: m.Branch + " " + m.To, Action: changeset.Create})
	}
	calls["shard_branches"] = len(moves)
	if err != nil {
		p.holdShards(pub, err)
		cs.Add(changeset.Entry{Stage: "git", Kind: "ShardBranch", Subject: gitsync.ShardBranchPrefix + "*", Action: changeset.Skip,
			Reason: err.Error(), Cause: changeset.CauseShipFailed})
		return cs, failure.Contained(failure.Errorf(failure.ClassGit, "flux shard branches not pushed; commit %s is on %s, the next run pushes them: %w",
			cmp.Or(pub.Ref, pub.Base), p.Config.Git.Branch, err))
	}
	// The shard objects changing with no shard moving (a switch back from
	// another layout) still needs the site's GitRepository fetched.
	root := pub.Wrote && ociship.RootChanged(pub.Before, pub.After)
	if p.Config.Git.FluxReconcile && (len(moves) > 0 || root) {
		p.requestBranchReconcile(ctx, root, moves)
		calls["flux_reconcile"] = 1
	}
	return cs, nil
}

// holdShards keeps executing the orders of the tenants of every shard
// whose branch the push left behind.
func (p *Git) holdShards(pub *Published, err error) {
	if pub.Held == nil {
		pub.Held = map[waldur.UUID]string{}
	}
	layout := gitsync.LayoutFor(p.Config)
	names, dirs := layout.ShardDirs()
	on, od := layout.Orphans(pub.Before)
	names, dirs = append(names, on...), append(dirs, od...)
	for _, m := range p.repo.ShardPending() {
		if i := slices.Index(names, m.Name); i >= 0 {
			for _, id := range ociship.ShardResources(pub.Before, pub.After, dirs[i]) {
				pub.Held[id] = "its Flux shard branch " + m.Branch + " is not pushed yet: " + err.Error()
			}
		}
	}
}

// requestBranchReconcile asks source-controller to fetch, now, the shard
// branches just moved (their GitRepositories only), and the site's own
// GitRepository when the commit changed the shard objects (root). A
// failure only costs the wait for the poll, so it is a warning.
func (p *Git) requestBranchReconcile(ctx context.Context, root bool, moves []gitsync.ShardMove) {
	g := p.Config.Git
	if root {
		p.requestReconcile(ctx)
	}
	if len(moves) == 0 {
		return
	}
	log := logOrDiscard(p.Log)
	if p.flux == nil {
		dyn, err := kube.Source{Path: g.FluxKubeconfigPath, Context: g.FluxKubeconfigContext}.Dynamic()
		if err != nil {
			log.Warn("cannot ask Flux to fetch the shard branches now; they come at the next poll", "error", err.Error())
			return
		}
		p.flux = dyn
	}
	now := time.Now()
	asked, absent := 0, 0
	for _, m := range moves {
		err := kube.RequestFluxReconcile(ctx, p.flux, g.FluxNamespace, m.Name, now)
		switch {
		case err == nil:
			asked++
		case apierrors.IsNotFound(err):
			absent++ // created by waldur-shards later; it fetches then
		default:
			log.Warn("cannot ask Flux to fetch the shard branches now; they come at the next poll", "gitrepository", m.Name, "error", err.Error())
			return
		}
	}
	log.Info("asked Flux to fetch the shard branches", "gitrepositories", asked, "not_created_yet", absent)
}

// dryRunShards lists, in a dry run, the shard branches a sync would move.
func (p *Git) dryRunShards(ctx context.Context, pub *Published, cs *changeset.Set) error {
	moves, err := p.repo.PlanShards(ctx, pub.After)
	if err != nil {
		return err
	}
	for _, m := range moves {
		subject := m.Branch + " from " + m.From
		if m.From == "" {
			subject = m.Branch + " (a new branch)"
		}
		cs.Add(changeset.Entry{Stage: "git", Kind: "ShardBranch", Subject: subject, Action: changeset.Create})
	}
	return nil
}
