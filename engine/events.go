package engine

import (
	"slices"

	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/waldur"
)

// EventRequest is the run a trigger asks for, given the engine's last run:
// the named resources and those of the named projects, refreshed into the
// last state; a full run when the trigger asks for one or there is no last
// state. ok is false when there is nothing to do (only projects of which
// the last state has no resource).
func EventRequest(t events.Trigger, last *Outcome) (req Request, ok bool) {
	req = Request{Command: "serve"}
	if t.Full || last == nil || last.State == nil {
		return req, true
	}
	ids := slices.Clone(t.Resources)
	for _, o := range last.State.Offerings {
		for _, r := range o.Resources {
			if _, found := slices.BinarySearch(t.Projects, r.ProjectUUID); found && !slices.Contains(ids, r.UUID) {
				ids = append(ids, r.UUID)
			}
		}
	}
	if len(ids) == 0 {
		return req, false
	}
	slices.Sort(ids)
	req.Resources = ids
	return req, true
}

// restrictTo returns a copy of st in which every offering holds only the
// named resources.
func restrictTo(st *waldur.State, ids []waldur.UUID) *waldur.State {
	if st == nil {
		return nil
	}
	out := *st
	out.Offerings = make([]waldur.OfferingState, len(st.Offerings))
	for i, o := range st.Offerings {
		o.Resources = slices.DeleteFunc(slices.Clone(o.Resources), func(r waldur.Resource) bool { return !slices.Contains(ids, r.UUID) })
		out.Offerings[i] = o
	}
	return &out
}
