package engine

import (
	"cmp"
	"context"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// OrderStage is the Orders seam over package orders: each step builds its
// orders.Stage from the Site, with the clients of the run's source.API.
type OrderStage struct{ *orders.Site }

// Approve approves (or rejects) the pending-provider orders and updates st.
func (s *OrderStage) Approve(ctx context.Context, st *waldur.State, probe Renderer, dryRun bool) (changeset.Result, error) {
	os, err := s.Stage(dryRun, false)
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
	os, err := s.Stage(dryRun, !dryRun)
	if err != nil {
		return changeset.Result{}, err
	}
	// A held change waits as a reviewed one does: executing, with why.
	os.Refused, os.Waiting, os.Reviewing, os.Held = pub.Failed, waiting, pub.Review, pub.Held
	s.Consumers(os, cmp.Or(pub.Ref, pub.Base), pub.FluxRevisions)
	_, pushed, err := pub.Trees(orders.ReadsTree(st))
	if err != nil {
		return changeset.Result{}, failure.Classify(failure.ClassRender, err)
	}
	r, err := os.Finish(ctx, st, res, pushed)
	if err != nil {
		err = failure.Errorf(failure.ClassWaldur, "%w", err)
	}
	return r, err
}

var _ Orders = (*OrderStage)(nil)
