package engine

import (
	"context"

	"github.com/waldur/waldur-gitops/changeset"
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
