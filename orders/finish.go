package orders

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Outcome is what Finish does with one executing order.
type Outcome int

const (
	// Wait leaves the order executing: its effect is not (yet) durable.
	Wait Outcome = iota
	// Done sets it done (Create and Restore: after setting the backend id).
	Done
	// Erred sets it erred.
	Erred
)

// Executing is one executing order and what its effect looks like in the pushed
// tree.
type Executing struct {
	Offering *Offering
	Order    waldur.Order
	Resource *waldur.Resource
	// Tenant labels the order's tenant or resource.
	Tenant  string
	Outcome Outcome
	// BackendID is set on the resource before a Create or Restore order is done.
	BackendID string
	// PlanLimits, for an Update order without limits (a plan switch), are its
	// plan's quotas, which the tenant was rendered with: they are recorded as
	// the resource's limits (set_limits) before the order is done, so that the
	// tenant keeps them once the order is no longer executing.
	PlanLimits waldur.Limits
	// Reason explains Wait; Message and Traceback are sent with Erred.
	Reason, Message, Traceback string
	// Cause is why it waits; not_applied when unset.
	Cause changeset.Cause
	// Expect is what the cluster must show before the order is done when the
	// offering waits for order_done_on: applied.
	Expect *Expectation
}

// ReadsTree reports whether Finish reads the pushed tree for st: only an
// executing order makes it look.
func ReadsTree(st *waldur.State) bool {
	for _, o := range st.Offerings {
		for _, ord := range o.Orders {
			if ord.State == waldur.OrderExecuting {
				return true
			}
		}
	}
	return false
}

// PlanFinish decides the executing orders of every offering from the render
// result and the tree that is now durable on the remote branch (the pushed
// tree, or the current one when nothing was committed). It is pure.
func PlanFinish(offerings []*Offering, st *waldur.State, res *render.Result, pushed render.Tree) []Executing {
	tenants := map[waldur.UUID][]*render.Tenant{}
	for _, t := range res.Tenants {
		tenants[t.Resource] = append(tenants[t.Resource], t)
	}
	// Only a Terminate order looks for its tenant in the tree: reading every
	// tenant's kustomization is left until one does.
	inGit := sync.OnceValue(pushed.TenantDirs)
	var out []Executing
	for _, o := range offerings {
		ost, ok := st.Offering(o.Name)
		if !ok {
			continue
		}
		for _, i := range sortedOrders(ost, waldur.OrderExecuting) {
			ord := ost.Orders[i]
			id := ord.MarketplaceResourceUUID
			e := Executing{Offering: o, Order: ord, Resource: findResource(ost, id), Tenant: resourceLabel(o, findResource(ost, id), id)}
			ts := tenants[id]
			if len(ts) > 0 {
				e.Tenant = o.Dir + "/" + ts[0].Name
			}
			if why, kept := keptBy(res, id); kept {
				e.Reason = "the resource is kept as it is: " + why
				out = append(out, e)
				continue
			}
			if why, cause, held := heldBy(res, ord.UUID); held {
				e.Reason, e.Cause = why, cause
				out = append(out, e)
				continue
			}
			switch ord.Type {
			case waldur.OrderCreate, waldur.OrderRestore, waldur.OrderUpdate:
				planFulfil(&e, res, ts, pushed)
				if e.Outcome == Done && ord.Type == waldur.OrderUpdate && len(ord.Limits) == 0 {
					e.PlanLimits = ost.PlanQuotas[ord.PlanUUID]
				}
			case waldur.OrderTerminate:
				planTerminate(&e, ts, inGit()[id])
			default:
				e.Reason = fmt.Sprintf("waldur-gitops does not handle %q orders", ord.Type)
			}
			out = append(out, e)
		}
	}
	return out
}

func planFulfil(e *Executing, res *render.Result, ts []*render.Tenant, pushed render.Tree) {
	id := e.Order.MarketplaceResourceUUID
	if problem, skipped := res.Skipped[id]; skipped {
		e.Outcome = Erred
		e.Message, e.Traceback = erredText(e, problem)
		return
	}
	switch {
	case e.Resource == nil:
		e.Reason = "the resource is not among the offering's resources"
		return
	case len(ts) == 0:
		e.Reason = fmt.Sprintf("the resource is not rendered (state %s)", e.Resource.State)
		return
	}
	for _, t := range ts {
		if f := missingFile(t, pushed); f != "" {
			e.Reason = "not in the pushed tree yet: " + f
			return
		}
	}
	e.Outcome = Done
	if e.Order.Type != waldur.OrderUpdate {
		e.BackendID = ts[0].BackendID
	}
	e.Expect = expectation(ts)
}

func planTerminate(e *Executing, ts []*render.Tenant, inGit []string) {
	switch {
	case len(ts) > 0:
		state := "unknown"
		if e.Resource != nil {
			state = e.Resource.State
		}
		e.Reason = fmt.Sprintf("the resource is still rendered (state %s)", state)
	case len(inGit) > 0:
		e.Reason = "its manifests are still in Git: " + strings.Join(inGit, ", ")
	default:
		e.Outcome = Done
		exp := &Expectation{Resource: e.Order.MarketplaceResourceUUID, Gone: true}
		if e.Resource != nil && e.Resource.BackendID != "" && !strings.Contains(e.Resource.BackendID, ":") {
			exp.Namespace = e.Resource.BackendID
		}
		e.Expect = exp
	}
}

// missingFile returns the first file of t that the pushed tree lacks or holds
// with other content, "" when all are there.
func missingFile(t *render.Tenant, pushed render.Tree) string {
	for _, f := range t.Files {
		p := t.Dir + "/" + f.Name
		if got, ok := pushed[p]; !ok || !bytes.Equal(got, f.Data) {
			return p
		}
	}
	return ""
}

// erredText is the error message and traceback an order whose resource failed
// validation is set erred with.
func erredText(e *Executing, problem string) (string, string) {
	r := e.Resource
	name, slug := "", ""
	if r != nil {
		name, slug = r.Name, r.Slug
	}
	msg := fmt.Sprintf("waldur-gitops cannot render resource %q (slug %q): %s", name, slug, problem)
	var tb strings.Builder
	fmt.Fprintf(&tb, "waldur-gitops validation failed; nothing was written to Git for this order.\n")
	fmt.Fprintf(&tb, "offering: %s\n", e.Offering.Name)
	fmt.Fprintf(&tb, "order: %s (%s)\n", e.Order.UUID, e.Order.Type)
	fmt.Fprintf(&tb, "resource: %s\n", e.Order.MarketplaceResourceUUID)
	fmt.Fprintf(&tb, "resource name: %q\n", name)
	fmt.Fprintf(&tb, "resource slug: %q\n", slug)
	fmt.Fprintf(&tb, "problem: %s\n", problem)
	return msg, tb.String()
}

// Finish moves the executing orders whose effect is durable: pushed is the tree
// of the owned directory as the remote branch holds it after the push (or as it
// was fetched, when the run committed nothing). Call it only after a successful
// push; it must not run when the push failed.
//
// A failed transition is reported (an entry with action skip whose reason
// starts "failed to") and the others go on; the error then summarises the
// failures. The orders concerned stay executing and the next run retries them.
func (s *Stage) Finish(ctx context.Context, st *waldur.State, res *render.Result, pushed render.Tree) (changeset.Result, error) {
	r := s.newRun(FinishStage)
	plan := PlanFinish(s.Offerings, st, res, pushed)
	s.Flux.expect(plan, pushed)
	s.Argo.expect(plan, s.ArgoCommit, pushed)
	s.refuse(plan)
	if !s.DryRun {
		r.waitApplied(ctx, plan)
	}
	for i := range plan {
		if err := ctx.Err(); err != nil {
			return changeset.Result{Changes: r.cs, Calls: r.calls}, err
		}
		r.finish(ctx, &plan[i])
	}
	r.cs.Sort()
	return changeset.Result{Changes: r.cs, Calls: r.calls}, r.finishErr("order feedback")
}

// refuse errs the orders of the resources the destination refused
// (Stage.Refused) with the destination's reason, and holds back those of the
// tenants that are not usable yet (Stage.Waiting).
func (s *Stage) refuse(plan []Executing) {
	for i := range plan {
		e := &plan[i]
		if why, ok := s.Reviewing[e.Order.MarketplaceResourceUUID]; ok && e.Outcome != Erred {
			e.Outcome, e.Expect, e.BackendID = Wait, nil, ""
			e.Reason, e.Cause = why, changeset.CauseAwaitingReview
		} else if why, ok := s.Held[e.Order.MarketplaceResourceUUID]; ok && e.Outcome != Erred {
			e.Outcome, e.Expect, e.BackendID = Wait, nil, ""
			e.Reason, e.Cause = why, changeset.CauseNotApplied
		}
		if why, ok := s.Waiting[e.Order.MarketplaceResourceUUID]; ok && e.Outcome == Done && e.Order.Type != waldur.OrderTerminate {
			e.Outcome, e.Expect, e.BackendID = Wait, nil, ""
			e.Reason, e.Cause = "published, but not usable yet: "+why, changeset.CauseNotApplied
		}
		reason, ok := s.Refused[e.Order.MarketplaceResourceUUID]
		if !ok || e.Outcome == Erred {
			continue
		}
		e.Outcome, e.Expect, e.BackendID = Erred, nil, ""
		e.Message = fmt.Sprintf("waldur-gitops could not apply %s: %s", e.Tenant, reason)
		e.Traceback = fmt.Sprintf("waldur-gitops apply failed for this order.\noffering: %s\norder: %s (%s)\nresource: %s\nproblem: %s\n",
			e.Offering.Name, e.Order.UUID, e.Order.Type, e.Order.MarketplaceResourceUUID, reason)
	}
}

func (r *run) finish(ctx context.Context, e *Executing) {
	o, ord := e.Offering, &e.Order
	id := ord.MarketplaceResourceUUID
	if e.Outcome == Wait {
		r.skip(o, ord, id, e.Tenant, "left executing: "+e.Reason, cmp.Or(e.Cause, changeset.CauseNotApplied))
		return
	}
	if r.s.DryRun {
		switch e.Outcome {
		case Done:
			r.add(o, ord, id, e.Tenant, changeset.Update, "would set done"+backendNote(e))
		case Erred:
			r.add(o, ord, id, e.Tenant, changeset.Update, "would set erred: "+e.Message)
		}
		return
	}
	w := r.client(o)
	cur, err := w.GetOrder(ctx, ord.UUID)
	if err != nil {
		r.fail(o, ord, id, e.Tenant, "re-read the order", err)
		return
	}
	if cur.State != waldur.OrderExecuting {
		r.add(o, ord, id, e.Tenant, changeset.Unchanged, "already "+cur.State)
		return
	}
	switch e.Outcome {
	case Erred:
		if err := w.SetOrderErred(ctx, ord.UUID, e.Message, e.Traceback); err != nil {
			r.fail(o, ord, id, e.Tenant, "set erred", err)
			return
		}
		r.add(o, ord, id, e.Tenant, changeset.Update, "erred: "+e.Message)
		r.s.log().Warn("order erred", "offering", o.Name, "order", string(ord.UUID), "type", ord.Type, "reason", e.Message)
	case Done:
		if e.BackendID != "" && (e.Resource == nil || e.Resource.BackendID != e.BackendID) {
			if err := w.SetResourceBackendID(ctx, id, e.BackendID); err != nil {
				r.fail(o, ord, id, e.Tenant, "set the backend id", err)
				return
			}
		}
		if len(e.PlanLimits) > 0 && (e.Resource == nil || !sameLimits(e.Resource.Limits, e.PlanLimits)) {
			if err := w.SetResourceLimits(ctx, id, e.PlanLimits); err != nil {
				r.fail(o, ord, id, e.Tenant, "set the plan's quotas as the resource's limits", err)
				return
			}
		}
		if err := w.SetOrderDone(ctx, ord.UUID); err != nil {
			if waldur.IsConflict(err) {
				if again, rerr := w.GetOrder(ctx, ord.UUID); rerr == nil && again.State != waldur.OrderExecuting {
					r.add(o, ord, id, e.Tenant, changeset.Unchanged, "already "+again.State)
					return
				}
			}
			r.fail(o, ord, id, e.Tenant, "set done", err)
			return
		}
		r.add(o, ord, id, e.Tenant, changeset.Update, "done"+backendNote(e))
		r.s.log().Info("order done", "offering", o.Name, "order", string(ord.UUID), "type", ord.Type, "tenant", e.Tenant)
	}
}

// sameLimits reports whether two limit sets hold the same amounts.
func sameLimits(a, b waldur.Limits) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok {
			return false
		}
		x, errX := v.Float()
		y, errY := w.Float()
		if errX != nil || errY != nil || x != y {
			return false
		}
	}
	return true
}

func backendNote(e *Executing) string {
	if e.BackendID == "" {
		return ""
	}
	return " (backend id " + e.BackendID + ")"
}

// waitApplied holds back, for offerings with order_done_on: applied, the Done
// orders whose effect the cluster does not show yet, polling until all show or
// the offering's timeout passes. Orders still not applied then are turned into
// Wait with the reason.
func (r *run) waitApplied(ctx context.Context, plan []Executing) {
	type check struct {
		e      *Executing
		detail string
	}
	byOffering := map[*Offering][]*check{}
	var offerings []*Offering
	for i := range plan {
		e := &plan[i]
		if e.Outcome != Done || e.Offering.DoneOn != config.DoneOnApplied {
			continue
		}
		if e.Offering.Cluster == nil {
			e.Outcome, e.Reason = Wait, "order_done_on is applied but no cluster is configured"
			continue
		}
		if _, seen := byOffering[e.Offering]; !seen {
			offerings = append(offerings, e.Offering)
		}
		byOffering[e.Offering] = append(byOffering[e.Offering], &check{e: e})
	}
	log := r.s.log()
	for _, o := range offerings {
		pending := byOffering[o]
		deadline := r.s.now().Add(o.DoneTimeout)
		for attempt := 1; ; attempt++ {
			var still []*check
			var argo *argoLists // Argo CD's Applications, listed once a round
			if apps, ok := o.Cluster.(ArgoApplications); ok {
				argo = listOnce(apps)
			}
			for _, c := range pending {
				ok, detail, err := appliedIn(ctx, o.Cluster, c.e.Expect, argo)
				switch {
				case err != nil:
					c.detail = "cannot read the cluster: " + err.Error()
					still = append(still, c)
				case !ok:
					c.detail = detail
					still = append(still, c)
				}
			}
			pending = still
			if len(pending) == 0 {
				break
			}
			if !r.s.now().Before(deadline) || ctx.Err() != nil {
				for _, c := range pending {
					c.e.Outcome = Wait
					c.e.Reason = fmt.Sprintf("not applied in the cluster after %s: %s", o.DoneTimeout, c.detail)
					if o.ApplyTimeout > 0 && !c.e.Order.Created.IsZero() && r.s.now().Sub(c.e.Order.Created) > o.ApplyTimeout {
						// Argo CD or Flux never applied it: say so in Waldur.
						c.e.Outcome, c.e.Expect, c.e.BackendID = Erred, nil, ""
						c.e.Message = fmt.Sprintf("waldur-gitops: %s is committed but not applied in the cluster %s after the order was created (orders.apply_timeout): %s",
							c.e.Tenant, o.ApplyTimeout, c.detail)
						c.e.Traceback = fmt.Sprintf("waldur-gitops apply timeout.\noffering: %s\norder: %s (%s)\nresource: %s\nmissing: %s\n",
							o.Name, c.e.Order.UUID, c.e.Order.Type, c.e.Order.MarketplaceResourceUUID, c.detail)
					}
				}
				log.Warn("gave up waiting for the cluster; the orders stay executing", "offering", o.Name, "orders", len(pending), "first", pending[0].detail)
				break
			}
			log.Info("waiting for the cluster to apply the pushed tenants", "offering", o.Name, "pending", len(pending),
				"attempt", attempt, "first", pending[0].e.Tenant+": "+pending[0].detail)
			if err := r.s.sleep(ctx, r.s.pollInterval()); err != nil {
				continue // the context ended: the next round gives up
			}
		}
	}
}
