package orders

import (
	"cmp"
	"context"
	"fmt"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Renderer renders a Waldur state; the sync's own renderer, so that the probe
// and the committed render judge resources alike.
type Renderer func(*waldur.State) (*render.Result, error)

// maxComment bounds the rejection comment shown to the consumer.
const maxComment = 1000

// Decision is what Approve does with one pending-provider order.
type Decision int

const (
	// Leave keeps the order pending (auto-approve is off, or its type is unknown).
	Leave Decision = iota
	// Approve approves it.
	Approve
	// Reject rejects it, with Pending.Problem as the comment's reason.
	Reject
)

// Pending is one pending-provider order and the verdict of the probe render.
type Pending struct {
	Offering *Offering
	// Index of the order in the offering's state.
	Index    int
	Order    waldur.Order
	Resource *waldur.Resource
	// Tenant labels the order's tenant (offering dir/name) or resource.
	Tenant string
	// Problem is why the resource cannot be rendered ("" when it can).
	Problem  string
	Decision Decision
	// Wait, set by capacity, is why an order approval would pass stays
	// pending (WaitCause: capacity_exceeded or capacity_unknown).
	Wait      string
	WaitCause changeset.Cause
	// Flag, for an order a person decides, says it would oversell its pool;
	// Note, for an approved one, which older order it went ahead of.
	Flag, Note string
}

// PlanApprovals decides the pending-provider orders of every offering from a
// probe render of the state with those orders counting as executing. It is pure.
func PlanApprovals(offerings []*Offering, st *waldur.State, probe *render.Result) []Pending {
	names := tenantNames(probe)
	var out []Pending
	for _, o := range offerings {
		ost, ok := st.Offering(o.Name)
		if !ok {
			continue
		}
		for _, i := range sortedOrders(ost, waldur.OrderPendingProvider) {
			ord := ost.Orders[i]
			p := Pending{Offering: o, Index: i, Order: ord, Resource: findResource(ost, ord.MarketplaceResourceUUID)}
			p.Tenant = resourceLabel(o, p.Resource, ord.MarketplaceResourceUUID)
			if n, ok := names[ord.MarketplaceResourceUUID]; ok {
				p.Tenant = o.Dir + "/" + n
			}
			switch ord.Type {
			case waldur.OrderCreate, waldur.OrderRestore, waldur.OrderUpdate:
				if probe != nil {
					p.Problem = probe.Skipped[ord.MarketplaceResourceUUID]
				}
				if p.Resource == nil && p.Problem == "" {
					p.Problem = "the order's resource " + string(ord.MarketplaceResourceUUID) + " is not among the offering's resources"
				}
				p.Decision = Approve
				if p.Problem != "" {
					p.Decision = Reject
				}
			case waldur.OrderTerminate:
				p.Decision = Approve
			default:
				p.Decision = Leave
			}
			if why, kept := keptBy(probe, ord.MarketplaceResourceUUID); kept {
				// Waldur's answer about the resource is in doubt: no decision.
				p.Decision, p.Problem = Leave, "kept as it is: "+why
			}
			if !o.AutoApprove {
				p.Decision = Leave
			}
			out = append(out, p)
		}
	}
	return out
}

// keptBy reports whether the render kept the resource as it is (an unknown
// state), and why.
func keptBy(res *render.Result, id waldur.UUID) (string, bool) {
	if res == nil {
		return "", false
	}
	why, ok := res.Kept[id]
	return why, ok
}

// heldBy reports whether the render holds an executing order (an Update
// order whose new limits are unknown) and why.
func heldBy(res *render.Result, order waldur.UUID) (string, changeset.Cause, bool) {
	if res == nil {
		return "", "", false
	}
	why, ok := res.Held[order]
	return why, cmp.Or(res.HeldCause[order], changeset.CauseNotApplied), ok
}

// tenantNames maps each rendered resource to its tenant's name.
func tenantNames(res *render.Result) map[waldur.UUID]string {
	out := map[waldur.UUID]string{}
	if res == nil {
		return out
	}
	for _, t := range res.Tenants {
		if _, ok := out[t.Resource]; !ok {
			out[t.Resource] = t.Name
		}
	}
	return out
}

// ProbeState returns a copy of st in which every pending-provider Create,
// Restore and Update order is executing: what the state will be once they are
// approved. Resources and other lists are shared with st, read-only.
func ProbeState(st *waldur.State) *waldur.State {
	out := &waldur.State{Offerings: make([]waldur.OfferingState, len(st.Offerings)), Unread: st.Unread}
	for i, o := range st.Offerings {
		o.Orders = append([]waldur.Order(nil), o.Orders...)
		for j := range o.Orders {
			ord := &o.Orders[j]
			if ord.State != waldur.OrderPendingProvider {
				continue
			}
			switch ord.Type {
			case waldur.OrderCreate, waldur.OrderRestore, waldur.OrderUpdate:
				ord.State = waldur.OrderExecuting
			}
		}
		out.Offerings[i] = o
	}
	return out
}

// hasPending reports whether any configured offering has a pending-provider order.
func (s *Stage) hasPending(st *waldur.State) bool {
	for _, o := range s.Offerings {
		if ost, ok := st.Offering(o.Name); ok && len(sortedOrders(ost, waldur.OrderPendingProvider)) > 0 {
			return true
		}
	}
	return false
}

// Approve decides the pending-provider orders and updates st in place: an
// approved order (and its resource) is read back from Waldur, so the render
// that follows includes its tenant; a rejected one drops out. It renders the
// state once more (with probe) only when there is a pending order.
//
// Approve never fails the run for one order: a failed transition is an entry
// with action skip and a reason starting "failed to", and the order simply
// stays pending (and unrendered) until a later run. The error is for a
// probe render that fails or a context that ends.
func (s *Stage) Approve(ctx context.Context, st *waldur.State, probe Renderer) (changeset.Result, error) {
	r := s.newRun(ApproveStage)
	if s.Capacity != nil {
		s.Capacity.Begin(ctx)
	}
	if !s.hasPending(st) {
		return changeset.Result{Changes: r.cs, Calls: r.calls}, nil
	}
	res, err := probe(ProbeState(st))
	if err != nil {
		return changeset.Result{Changes: r.cs, Calls: r.calls}, fmt.Errorf("probe render for order approval: %w", err)
	}
	plan := PlanApprovals(s.Offerings, st, res)
	capErr := s.gate(ctx, st, plan, res, probe)
	if capErr != nil && !failure.IsContained(capErr) {
		return changeset.Result{Changes: r.cs, Calls: r.calls}, capErr
	}
	for _, p := range plan {
		if err := ctx.Err(); err != nil {
			return changeset.Result{Changes: r.cs, Calls: r.calls}, err
		}
		r.approve(ctx, st, p)
	}
	r.cs.Sort()
	return changeset.Result{Changes: r.cs, Calls: r.calls}, capErr
}

func (r *run) approve(ctx context.Context, st *waldur.State, p Pending) {
	o, ord := p.Offering, &p.Order
	ost, _ := st.Offering(o.Name)
	res := ord.MarketplaceResourceUUID
	switch p.Decision {
	case Leave:
		reason, cause := "pending provider approval: auto_approve is off", changeset.CauseAwaitingApproval
		if o.AutoApprove {
			reason, cause = fmt.Sprintf("pending: waldur-gitops does not handle %q orders", ord.Type), changeset.CauseUnsupportedOrder
		}
		if p.Problem != "" {
			reason += "; the resource cannot be rendered: " + p.Problem
		}
		if p.Flag != "" {
			reason += "; it " + p.Flag
		}
		if p.Wait != "" {
			reason, cause = "pending: "+p.Wait, p.WaitCause
		}
		r.skip(o, ord, res, p.Tenant, reason, cause)
		return
	case Reject:
		comment := rejectionComment(p)
		if r.s.DryRun {
			ost.Orders[p.Index].State = "rejected"
			r.add(o, ord, res, p.Tenant, changeset.Update, "would reject: "+p.Problem)
			return
		}
		w := r.client(o)
		err := w.RejectOrder(ctx, ord.UUID, comment)
		if err != nil && waldur.IsConflict(err) {
			r.settled(ctx, w, ost, p, "reject")
			return
		}
		if err != nil {
			r.fail(o, ord, res, p.Tenant, "reject", err)
			return
		}
		r.refresh(ctx, w, ost, p.Index, "rejected")
		r.add(o, ord, res, p.Tenant, changeset.Update, "rejected: "+p.Problem)
		r.s.log().Info("rejected order", "offering", o.Name, "order", string(ord.UUID), "type", ord.Type, "reason", p.Problem)
	case Approve:
		if r.s.DryRun {
			ost.Orders[p.Index].State = waldur.OrderExecuting
			r.add(o, ord, res, p.Tenant, changeset.Update, withNote("would approve", p.Note))
			return
		}
		w := r.client(o)
		err := w.ApproveOrder(ctx, ord.UUID)
		if err != nil && waldur.IsConflict(err) {
			r.settled(ctx, w, ost, p, "approve")
			return
		}
		if err != nil {
			r.fail(o, ord, res, p.Tenant, "approve", err)
			return
		}
		r.refresh(ctx, w, ost, p.Index, waldur.OrderExecuting)
		r.add(o, ord, res, p.Tenant, changeset.Update, withNote("approved", p.Note))
		r.s.log().Info("approved order", "offering", o.Name, "order", string(ord.UUID), "type", ord.Type, "tenant", p.Tenant)
	}
}

// withNote adds capacity's note to an approval's reason.
func withNote(reason, note string) string {
	if note == "" {
		return reason
	}
	return reason + ": " + note
}

// settled handles a 409 on approve or reject: someone else moved the order
// first (or a retried request had in fact succeeded). The order is read back
// and reported as it is.
func (r *run) settled(ctx context.Context, w Waldur, ost *waldur.OfferingState, p Pending, what string) {
	r.refresh(ctx, w, ost, p.Index, ost.Orders[p.Index].State)
	now := ost.Orders[p.Index].State
	r.add(p.Offering, &p.Order, p.Order.MarketplaceResourceUUID, p.Tenant, changeset.Unchanged,
		fmt.Sprintf("not %sd here: the order is already %s", what, now))
}

// rejectionComment is what the consumer reads on a rejected order.
func rejectionComment(p Pending) string {
	c := "The service provider's automation (waldur-gitops) cannot provision this request: " + p.Problem
	if len(c) > maxComment {
		c = c[:maxComment-1] + "…"
	}
	return c
}
