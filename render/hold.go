package render

import (
	"slices"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/waldur"
)

// QuotaHold is what the render keeps of one resource's quota while the
// namespace uses more than a cut allows (quota_shrink: hold).
type QuotaHold struct {
	// Keep maps ResourceQuota keys to the value rendered instead of the new,
	// lower one: the value in place. Keys the new quota does not set are
	// ignored.
	Keep map[string]string
	// Reason says why, for the executing Update orders of the resource,
	// which stay executing (Result.Held) while the hold lasts.
	Reason string
}

// QuotaHolds are the holds of a render by resource. The engine decides them
// from what the cluster uses; the render only applies them, so it stays a
// pure function of its inputs.
type QuotaHolds map[waldur.UUID]QuotaHold

// Holding makes Render keep the quota values of holds: each held key is
// rendered with its kept value, and the resource's executing Update orders
// are not fulfilled but held with the hold's reason.
func (r *Renderer) Holding(holds QuotaHolds) *Renderer {
	c := *r
	c.holds = holds
	return &c
}

// holdUpdates takes the executing Update orders of a resource with a quota
// hold out of the orders its tenant fulfils and records them in res.Held.
func (in *offeringInput) holdUpdates(id waldur.UUID, orders []waldur.UUID, res *Result) []waldur.UUID {
	h, ok := in.holds[id]
	if !ok || len(h.Keep) == 0 {
		return orders
	}
	for _, o := range in.orders[id] {
		if o.Type != waldur.OrderUpdate || o.State != waldur.OrderExecuting || !slices.Contains(orders, o.UUID) {
			continue
		}
		if res.Held == nil {
			res.Held = map[waldur.UUID]string{}
		}
		res.Held[o.UUID] = h.Reason
		res.hold(o.UUID, changeset.CauseQuotaHeld)
		orders = slices.DeleteFunc(orders, func(u waldur.UUID) bool { return u == o.UUID })
	}
	return orders
}

// hold records why order is held.
func (res *Result) hold(order waldur.UUID, c changeset.Cause) {
	if res.HeldCause == nil {
		res.HeldCause = map[waldur.UUID]changeset.Cause{}
	}
	res.HeldCause[order] = c
}
