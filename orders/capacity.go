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
	updates, creating := false, map[waldur.UUID]bool{}
	for i := range plan {
		p := &plan[i]
		grows, frees := grows(p.Order.Type), p.Order.Type == waldur.OrderTerminate
		// What the probe renders differently from the state before approval.
		updates = updates || p.Order.Type == waldur.OrderUpdate
		if grows && p.Order.Type != waldur.OrderUpdate {
			creating[p.Order.MarketplaceResourceUUID] = true
		}
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
	verdicts, err := s.Capacity.Decide(ctx, in, probe, baseline(st, probe, rnd, updates, creating), s.now())
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

// baseline returns how to render the state before any approval: without
// a pending Update, the probe less the tenants of the pending Creates and
// Restores (the only difference between the two); with one, a render of st.
func baseline(st *waldur.State, probe *render.Result, rnd Renderer, updates bool, creating map[waldur.UUID]bool) func() (*render.Result, error) {
	if updates {
		return func() (*render.Result, error) { return rnd(st) }
	}
	return func() (*render.Result, error) {
		out := &render.Result{}
		for _, t := range probe.Tenants {
			if !creating[t.Resource] {
				out.Tenants = append(out.Tenants, t)
			}
		}
		return out, nil
	}
}

// grows reports whether an order of the type may add to a tenant's quota.
func grows(typ string) bool {
	return typ == waldur.OrderCreate || typ == waldur.OrderRestore || typ == waldur.OrderUpdate
}
