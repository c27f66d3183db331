package engine

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
)

// OrderStage is the Orders seam over package orders, with the clients of the
// run's source.API.
type OrderStage struct {
	Source    *source.API
	Offerings []config.Offering
	// ApplyTimeout is orders.apply_timeout (0: never err a waiting order).
	ApplyTimeout time.Duration
	// Flux, set when Flux consumes the pushed repository (git.flux_shards),
	// makes order_done_on: applied also wait for the tenant's shard
	// Kustomization to report the pushed commit applied; Branch is git.branch.
	Flux   *gitsync.FluxLayout
	Branch string
	// Argo, set when Argo CD consumes the pushed repository
	// (git.argocd_namespace), makes order_done_on: applied also wait for the
	// tenant's Applications to be Synced at the pushed commit and Healthy.
	Argo *orders.ArgoCD
	Log  *slog.Logger
}

// stage builds the orders.Stage of one step. clusters opens a reader of the
// cluster of every offering with order_done_on: applied.
func (s *OrderStage) stage(dryRun, clusters bool) (*orders.Stage, error) {
	st := &orders.Stage{DryRun: dryRun, Log: s.Log}
	for i := range s.Offerings {
		o := &s.Offerings[i]
		c, err := s.Source.Client(o)
		if err != nil {
			return nil, err
		}
		var cluster orders.Cluster
		if clusters && o.OrderDoneOn == config.DoneOnApplied {
			cs := o.Settings.Common()
			r, err := kube.Open(kube.Source{Path: cs.KubeconfigPath, Context: cs.KubeconfigContext})
			if err != nil {
				// Its orders wait, saying no cluster is configured; the others go on.
				logOrDiscard(s.Log).Warn("cannot read the cluster: orders that wait for it stay executing", "offering", o.Name, "error", err.Error())
			} else {
				cluster = r
			}
		}
		of := orders.OfferingFromConfig(o, c, cluster)
		of.ApplyTimeout = s.ApplyTimeout
		st.Offerings = append(st.Offerings, of)
	}
	return st, nil
}

// Approve approves (or rejects) the pending-provider orders and updates st.
func (s *OrderStage) Approve(ctx context.Context, st *waldur.State, probe Renderer, dryRun bool) (changeset.Result, error) {
	os, err := s.stage(dryRun, false)
	if err != nil {
		return changeset.Result{}, err
	}
	return os.Approve(ctx, st, orders.Renderer(probe))
}

// Finish moves the executing orders whose effect pub carries.
func (s *OrderStage) Finish(ctx context.Context, st *waldur.State, res *render.Result, pub *publish.Published, waiting map[waldur.UUID]string, dryRun bool) (changeset.Result, error) {
	if pub == nil || pub.Incomplete {
		return changeset.Result{}, failure.Errorf(failure.ClassWaldur, "orders left executing: the publish did not complete")
	}
	os, err := s.stage(dryRun, !dryRun)
	if err != nil {
		return changeset.Result{}, err
	}
	// A held change waits as a reviewed one does: executing, with why.
	os.Refused, os.Waiting, os.Reviewing, os.Held = pub.Failed, waiting, pub.Review, pub.Held
	if ref := cmp.Or(pub.Ref, pub.Base); s.Flux != nil && ref != "" {
		os.Flux = &orders.Flux{Layout: *s.Flux, Revision: s.Branch + "@sha1:" + ref, Revisions: pub.FluxRevisions}
	}
	if ref := cmp.Or(pub.Ref, pub.Base); s.Argo != nil && ref != "" {
		os.Argo, os.ArgoCommit = s.Argo, ref
	}
	r, err := os.Finish(ctx, st, res, pub.After)
	if err != nil {
		err = failure.Errorf(failure.ClassWaldur, "%w", err)
	}
	return r, err
}

var _ Orders = (*OrderStage)(nil)
