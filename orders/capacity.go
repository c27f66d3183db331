package orders

import (
	"context"

	"github.com/waldur/waldur-gitops/capacity"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// gate lets capacity decide the orders approval would pass: a Create,
// Restore or Update order that would oversell its pool waits (or is
// rejected), a Terminate frees its tenant's share; the orders a person
// decides (auto_approve: false) are only flagged. plan is updated in place.
// The error is the baseline render's, which approves nothing, or a
// contained cluster failure, which leaves the orders of the unreadable
// pools waiting and the others decided.
func (s *Stage) gate(ctx context.Context, st *waldur.State, plan []Pending, probe *render.Result, rnd Renderer) error {
	if s.Capacity == nil {
		return nil
	}
	var in []capacity.Order
	for i := range plan {
		p := &plan[i]
		grows, frees := grows(p.Order.Type), p.Order.Type == waldur.OrderTerminate
		flagged := p.Decision == Leave && !p.Offering.AutoApprove && p.Problem == "" && grows
		if !(p.Decision == Approve && (grows || frees)) && !flagged {
			continue
		}
		in = append(in, capacity.Order{UUID: p.Order.UUID, Resource: p.Order.MarketplaceResourceUUID, Offering: p.Offering.Name,
			Created: p.Order.Created, Frees: frees, Auto: p.Decision == Approve})
	}
	if len(in) == 0 {
		return nil
	}
	verdicts, err := s.Capacity.Decide(ctx, in, probe, func() (*render.Result, error) { return rnd(st) }, s.now())
	if err != nil && !failure.IsContained(err) {
		return err
	}
	for i := range plan {
		p := &plan[i]
		v, ok := verdicts[p.Order.UUID]
		switch {
		case !ok:
		case p.Decision == Leave:
			p.Flag = v.Reason
		case v.Fits:
			p.Note = v.Note
		case v.Reject:
			p.Decision, p.Problem = Reject, v.Reason
		default:
			p.Decision, p.Wait, p.WaitCause = Leave, v.Reason, v.Cause
		}
	}
	return err
}

// grows reports whether an order of the type may add to a tenant's quota.
func grows(typ string) bool {
	return typ == waldur.OrderCreate || typ == waldur.OrderRestore || typ == waldur.OrderUpdate
}
