package engine

import (
	"context"
	"sync"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// checkQuotas is the quota stage of the cycle: the Quotas seam checks the
// render, and the holds it finds are rendered in (the Holding hook), the
// tenants it routes to review marked on the result.
func (e *Engine) checkQuotas(ctx context.Context, o *Outcome) (changeset.Set, map[string]int, error) {
	r, err := e.seams.Quotas.Check(ctx, o.State, o.Result)
	if r == nil {
		return changeset.Set{}, nil, err
	}
	if err == nil && len(r.Holds) > 0 && e.Holding != nil {
		res, rerr := e.renderWith(e.Holding(r.Holds), o.State)
		if rerr != nil {
			return r.Changes, r.Calls, rerr
		}
		o.Result = res
	}
	if len(r.Review) > 0 {
		o.Result.Review = r.Review
	}
	return r.Changes, r.Calls, err
}

// watchInPlace sets this run's view of what is at the destination, read
// from the publisher the first time a render settles claimed names.
func (e *Engine) watchInPlace(ctx context.Context) {
	e.inPlace = nil
	if p, ok := e.seams.Publisher.(InPlacer); ok && e.Claims != nil {
		var once sync.Once
		var in render.InPlace
		e.inPlace = func(id waldur.UUID) bool {
			once.Do(func() { in = p.InPlace(ctx) })
			return in != nil && in(id)
		}
	}
}
