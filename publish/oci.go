package publish

import (
	"context"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/ociship"
	"github.com/waldur/waldur-gitops/waldur"
)

// shipShards ships the shard artifacts of the pushed tree (ociship.Ship),
// records their revisions and the tenants held back in pub, and asks Flux
// to fetch them. The commit is durable by now, so a failure is contained.
func (p *Git) shipShards(ctx context.Context, pub *Published, commit string) (changeset.Set, error) {
	s := ociship.Ship(ctx, ociship.Shipment{Git: p.Config.Git, Layout: gitsync.LayoutFor(p.Config), Before: pub.Before, After: pub.After, Commit: commit, Source: p.repo.URL()})
	if len(s.Held) > 0 {
		if pub.Held == nil {
			pub.Held = map[waldur.UUID]string{}
		}
		maps.Copy(pub.Held, s.Held)
	}
	if s.Config {
		return s.Changes, failure.Contained(failure.Errorf(failure.ClassConfig, "%w", s.Err))
	}
	pub.FluxRevisions = s.Revisions
	if p.Config.Git.FluxReconcile {
		p.requestOCIReconcile(ctx, pub, s.Results)
	}
	if s.Err != nil {
		return s.Changes, failure.Contained(failure.Errorf(failure.ClassGit, "%w", s.Err))
	}
	return s.Changes, nil
}

// requestOCIReconcile asks source-controller to fetch, now, the artifacts
// just pushed (the OCIRepositories of the changed shards only), and the
// GitRepository when the commit changed the shard objects themselves. A
// failure only costs the wait for the poll, so it is a warning.
func (p *Git) requestOCIReconcile(ctx context.Context, pub *Published, results []ociship.Result) {
	g := p.Config.Git
	if pub.Wrote && ociship.RootChanged(pub.Before, pub.After) {
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
	log := logOrDiscard(p.Log)
	if p.flux == nil {
		dyn, err := kube.Source{Path: g.FluxKubeconfigPath, Context: g.FluxKubeconfigContext}.Dynamic()
		if err != nil {
			log.Warn("cannot ask Flux to fetch the new artifacts now; they come at the next poll", "error", err.Error())
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
			log.Warn("cannot ask Flux to fetch the new artifacts now; they come at the next poll", "ocirepository", n, "error", err.Error())
			return
		}
	}
	log.Info("asked Flux to fetch the new artifacts", "ocirepositories", asked, "not_created_yet", absent)
}
