package engine

import (
	"context"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/offboard"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
)

// offboardStage is the Offboarding seam over offboard.Workflow: it hands
// over what the publish left (applied: the publisher is the clusters').
type offboardStage struct {
	*offboard.Workflow
	applied bool
}

func (s offboardStage) Prove(ctx context.Context, res *render.Result, pub *publish.Published, dryRun bool) (changeset.Result, []report.Offboard, error) {
	var p *offboard.Published
	if pub != nil {
		before, after, err := pub.Trees(s.Workflow.Leaving()) // the proof reads what still grants access
		if err != nil {
			return changeset.Result{}, nil, failure.Classify(failure.ClassRender, err)
		}
		p = &offboard.Published{Before: before, After: after, Ref: pub.Ref, Base: pub.Base, Applied: s.applied, Incomplete: pub.Incomplete}
	}
	r, recs, err := s.Workflow.Prove(ctx, res, p, dryRun)
	return r, recs, failure.Classify(failure.ClassWaldur, err)
}

// claimStage is the offboard stage, before the render (none without the
// Offboarding seam): the leavers' names go to the run's guard g.
func (e *Engine) claimStage(req Request, g *guard.Options) []stage {
	s := e.seams.Offboarding
	if s == nil {
		return nil
	}
	return []stage{{name: "offboard", class: failure.ClassWaldur, goOn: true, run: func(ctx context.Context, o *Outcome) (r changeset.Result, err error) {
		r, g.Offboarded, err = s.Claim(ctx, o.State, req.DryRun)
		return r, err
	}}}
}

// proofStage is the proof stage, after the Keycloak pass: its records are
// the report's offboarding.
func (e *Engine) proofStage(req Request) []stage {
	s := e.seams.Offboarding
	if s == nil {
		return nil
	}
	return []stage{{name: "proof", class: failure.ClassWaldur, goOn: true, run: func(ctx context.Context, o *Outcome) (r changeset.Result, err error) {
		r, o.Report.Offboarding, err = s.Prove(ctx, o.Result, o.Published, req.DryRun)
		return r, err
	}}}
}
