package engine

import (
	"context"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/ociship"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// shipShards publishes the shard artifacts of the pushed tree pub.After
// (the OCI layout), at commit: only the shards whose content differs from
// what the registry holds are pushed, so a run after a failed push pushes
// what is missing. It records the shards' revisions in pub.FluxRevisions and
// holds back (pub.Held) the orders of the tenants of a shard that could not
// be pushed. The commit is durable by now, so a failure is a contained
// ClassGit error naming it.
func (p *GitPublisher) shipShards(ctx context.Context, pub *Published, commit string) (changeset.Set, error) {
	var cs changeset.Set
	layout := Layout(p.Config)
	names, dirs := layout.ShardDirs()
	// A shard no longer generated gets an artifact without its directory
	// (ShardFiles of After finds none), so that it reports its path missing
	// rather than go on applying the tenants that moved away from it.
	on, od := layout.Orphans(pub.Before)
	names, dirs = append(names, on...), append(dirs, od...)
	shards := make([]ociship.Shard, len(names))
	for i := range names {
		shards[i] = ociship.Shard{Name: names[i], Dir: dirs[i]}
	}
	reg, err := ociship.FromConfig(p.Config.Git)
	if err != nil {
		// The registry password cannot be read: no shard is shipped.
		for _, d := range dirs {
			p.hold(pub, d, "the Flux shard artifacts are not pushed yet: "+err.Error())
		}
		return cs, Contained(Errorf(ClassConfig, "flux shard artifacts not pushed; commit %s was pushed, the next run pushes them: %w", commit, err))
	}
	results := reg.Publish(ctx, pub.After, shards, commit, p.repo.URL())
	pub.FluxRevisions = map[string]string{}
	var failed []string
	var firstErr error
	for _, r := range results {
		e := changeset.Entry{Stage: "git", Kind: "OCIArtifact", Subject: r.Ref + "@" + r.Digest, Action: changeset.Unchanged}
		switch {
		case r.Err != nil:
			e.Subject, e.Action, e.Reason, e.Cause = r.Ref, changeset.Skip, r.Err.Error(), changeset.CauseShipFailed
			failed = append(failed, r.Name)
			if firstErr == nil {
				firstErr = r.Err
			}
			p.hold(pub, r.Dir, "its Flux shard artifact "+r.Name+" is not pushed yet: "+r.Err.Error())
		case r.Pushed:
			e.Action = changeset.Create
			pub.FluxRevisions[r.Name] = r.Revision()
		default:
			pub.FluxRevisions[r.Name] = r.Revision()
		}
		cs.Add(e)
	}
	if p.Config.Git.FluxReconcile {
		p.requestOCIReconcile(ctx, pub, results)
	}
	if firstErr != nil {
		return cs, Contained(Errorf(ClassGit, "%d flux shard artifact(s) not pushed (%s); commit %s was pushed, the next run pushes them: %w",
			len(failed), strings.Join(failed, ", "), commit, firstErr))
	}
	return cs, nil
}

// hold keeps executing, with why, the orders of the tenants a shard lists
// before or after the commit (a removed tenant's namespace is not pruned
// before the artifact is pushed either).
func (p *GitPublisher) hold(pub *Published, shardDir, why string) {
	if pub.Held == nil {
		pub.Held = map[waldur.UUID]string{}
	}
	for _, tree := range []render.Tree{pub.Before, pub.After} {
		dirs := map[string]bool{}
		for f := range ociship.ShardFiles(tree, shardDir) {
			if parts := strings.SplitN(f, "/", 4); len(parts) == 4 && parts[0] != gitsync.FluxDir {
				dirs[strings.Join(parts[:3], "/")] = true
			}
		}
		for id, ds := range tree.TenantDirs() {
			for _, d := range ds {
				if dirs[d] {
					pub.Held[id] = why
				}
			}
		}
	}
}

// requestOCIReconcile asks source-controller to fetch, now, the artifacts
// just pushed (the OCIRepositories of the changed shards only), and the
// GitRepository when the commit changed the shard objects themselves. A
// failure only costs the wait for the poll, so it is a warning.
func (p *GitPublisher) requestOCIReconcile(ctx context.Context, pub *Published, results []ociship.Result) {
	g := p.Config.Git
	if pub.Wrote && fluxRootChanged(pub.Before, pub.After) {
		p.requestReconcile(ctx)
	}
	var pushed []string
	for _, r := range results {
		if r.Pushed {
			pushed = append(pushed, r.Name)
		}
	}
	if len(pushed) == 0 {
		return
	}
	if p.flux == nil {
		dyn, err := kube.Source{Path: g.FluxKubeconfigPath, Context: g.FluxKubeconfigContext}.Dynamic()
		if err != nil {
			logOrDiscard(p.Log).Warn("cannot ask Flux to fetch the new artifacts now; they come at the next poll", "error", err.Error())
			return
		}
		p.flux = dyn
	}
	now := time.Now()
	asked, absent := 0, 0
	for _, n := range pushed {
		err := kube.RequestFluxOCIReconcile(ctx, p.flux, g.FluxNamespace, n, now)
		switch {
		case err == nil:
			asked++
		case apierrors.IsNotFound(err):
			// A new shard whose OCIRepository waldur-shards has not applied
			// yet: it fetches when it is created. The others still get asked.
			absent++
		default:
			logOrDiscard(p.Log).Warn("cannot ask Flux to fetch the new artifacts now; they come at the next poll", "ocirepository", n, "error", err.Error())
			return
		}
	}
	logOrDiscard(p.Log).Info("asked Flux to fetch the new artifacts", "ocirepositories", asked, "not_created_yet", absent)
}

// fluxRootChanged reports whether the shard objects (_flux/*.yaml, applied
// from the GitRepository) differ between two trees.
func fluxRootChanged(before, after render.Tree) bool {
	for _, f := range []string{gitsync.FluxDir + "/" + render.KustomizationFile, gitsync.FluxDir + "/flux-kustomizations.yaml"} {
		if string(before[f]) != string(after[f]) {
			return true
		}
	}
	return false
}
