package engine

import (
	"context"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/offboard"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
)

// offboardStage is the Offboarding seam over offboard.Workflow: it hands
// over what the publish left (applied: the publisher is the clusters').
type offboardStage struct {
	*offboard.Workflow
	applied bool
}

func (s offboardStage) Prove(ctx context.Context, res *render.Result, pub *Published, dryRun bool) (changeset.Result, []report.Offboard, error) {
	var p *offboard.Published
	if pub != nil {
		p = &offboard.Published{Before: pub.Before, After: pub.After, Ref: pub.Ref, Base: pub.Base, Applied: s.applied, Incomplete: pub.Incomplete}
	}
	r, recs, err := s.Workflow.Prove(ctx, res, p, dryRun)
	return r, recs, Classify(ClassWaldur, err)
}
