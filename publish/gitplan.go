package publish

import (
	"context"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/review"
)

// publishRun is one Git publish: its plan, made again on every attempt,
// and what the last attempt planned.
type publishRun struct {
	p         *Git
	ctx       context.Context
	res       *render.Result
	o         Options
	useReview bool
	pub       *Published
	tenants   changeset.Set
	routed    *review.Routing
	// cause is why the plan is made from the whole tree; "" while the
	// re-rendered tenants alone may be compared (planScoped).
	cause  ScopeCause
	scoped *scoped // the last attempt's scoped plan, nil when it was whole
}

// plan is the gitsync.Plan of the publish: from the re-rendered tenants
// alone when it may be, else from the whole render and tree.
func (u *publishRun) plan(cur render.Tree) (render.Tree, string, error) {
	u.scoped = nil
	if u.cause == "" {
		s, cause := u.p.planScoped(u.res, cur)
		if s != nil {
			return u.planned(s, cur)
		}
		u.cause = cause
	}
	return u.planWhole(cur)
}

// planned finishes a scoped plan: the guards, and the hint that lets the
// commit rewrite only the trees of the changed files.
func (u *publishRun) planned(s *scoped, cur render.Tree) (render.Tree, string, error) {
	u.tenants, u.routed, u.pub.Review = s.tenants, nil, nil
	u.pub.Before, u.pub.After, u.pub.Base = cur, s.next, u.p.repo.Tip()
	if err := u.p.checkScoped(u.res, s, cur, u.o); err != nil {
		return nil, "", err
	}
	u.scoped = s
	u.p.repo.Changed(s.next, s.paths)
	msg := s.tenants
	msg.Merge(u.res.Changes)
	return s.next, gitsync.Message(msg), nil
}

// planWhole lays the whole render over the whole tree and compares every
// tenant.
func (u *publishRun) planWhole(cur render.Tree) (render.Tree, string, error) {
	p, res, ctx := u.p, u.res, u.ctx
	explained, kept := confirm.Removals(ctx, p.Config, res, cur, u.o.Confirm, p.Stage())
	res.Share(cur) // one copy of every unchanged file, not two
	layout := gitsync.LayoutFor(p.Config)
	layout.Previous = cur
	next := layout.Apply(res.Tree(cur))
	layout.WarnMoves(p.Log, next)
	tenants := res.Compare(cur, next)
	u.routed, u.pub.Review = nil, nil
	if u.useReview {
		if u.routed = review.Route(p.Config, res, layout, cur, next, tenants); u.routed != nil {
			next, tenants = u.routed.Main, res.Compare(cur, u.routed.Main)
			tenants.Merge(u.routed.Entries)
			u.pub.Review = u.routed.Waiting
		}
	}
	tenants.Merge(kept)
	u.tenants = tenants
	u.pub.Before, u.pub.After, u.pub.Base = cur, next, p.repo.Tip()
	gone := guard.TenantRemovals(guard.Tenants, tenants, explained, confirm.Scopes)
	if err := guard.Check(guard.Tenants, gone, guard.TenantsInPlace(tenants, confirm.Scopes), u.o.Guard); err != nil {
		return nil, "", err
	}
	if err := guard.CheckTreeAccess(cur, next, tenants, u.o.Guard); err != nil {
		return nil, "", err
	}
	msg := tenants
	msg.Merge(res.Changes)
	return next, gitsync.Message(msg), nil
}

// done records the outcome of the publish at tip (err: it failed) for the
// next one, and says at debug how this one compared.
func (u *publishRun) done(tip string, err error) {
	p := u.p
	log := logOrDiscard(p.Log)
	switch {
	case err != nil:
		p.last = nil
	case u.scoped != nil:
		p.last = u.scoped.after(p.last, u.pub.Before, tip)
		log.Debug("published what changed", "compared", len(u.scoped.changed), "files", len(u.scoped.paths))
	default:
		p.last = p.remembered(u.res, u.pub.After, tip, u.cause)
		log.Debug("published in full", "cause", string(u.cause))
	}
}
