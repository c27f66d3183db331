package engine

import (
	"context"
	"slices"

	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/waldur"
)

// EventRequest is the run a trigger asks for, given the engine's last run:
// the named resources, those of the named projects, and those of the
// projects whose teams list a named offering user (who is read again too),
// refreshed into the last state; a full run (Request.Full says why) when
// the trigger asks for one, there is no last state, or an offering user is
// one the last state does not know by a username. ok is false when there
// is nothing to do (only projects of which the last state has no resource).
func EventRequest(t events.Trigger, last *Outcome) (req Request, ok bool) {
	req = Request{Command: "serve"}
	switch {
	case t.Full:
		req.Full = t.Why
		return req, true
	case last == nil || last.State == nil:
		req.Full = events.FullNoLastRun
		return req, true
	}
	projects, known := userProjects(last.State, t.OfferingUsers)
	if !known {
		req.Full = events.FullUnattributed
		return req, true
	}
	projects = append(slices.Clone(t.Projects), projects...)
	slices.Sort(projects)
	ids := slices.Clone(t.Resources)
	for _, o := range last.State.Offerings {
		for _, r := range o.Resources {
			if _, found := slices.BinarySearch(projects, r.ProjectUUID); found && !slices.Contains(ids, r.UUID) {
				ids = append(ids, r.UUID)
			}
		}
	}
	if len(ids) == 0 {
		if len(t.OfferingUsers) > 0 {
			// A user in no team of ours still counts (offboarding, the
			// usernames a realm keeps): read everything.
			req.Full = events.FullUnattributed
			return req, true
		}
		return req, false
	}
	slices.Sort(ids)
	req.Resources, req.OfferingUsers = ids, t.OfferingUsers
	return req, true
}

// userProjects lists the projects whose teams, in st, list one of the
// offering users; known is false when one of them is not in st or has no
// username (its teams cannot be told).
func userProjects(st *waldur.State, users []waldur.UUID) (projects []waldur.UUID, known bool) {
	for _, id := range users {
		name := ""
		for _, o := range st.Offerings {
			if i := slices.IndexFunc(o.OfferingUsers, func(u waldur.OfferingUser) bool { return u.UUID == id }); i >= 0 {
				name = o.OfferingUsers[i].Username
			}
		}
		if name == "" {
			return nil, false
		}
		for _, o := range st.Offerings {
			for p, team := range o.Teams {
				if slices.ContainsFunc(team, func(m waldur.TeamMember) bool { return m.OfferingUserUsername == name }) {
					projects = append(projects, p)
				}
			}
		}
	}
	return projects, true
}

// read is the waldur stage's read: the resources and offering users req
// names, read again into the last run's state when the source can, else
// everything; an event run that reads everything says why at debug level.
func (e *Engine) read(ctx context.Context, req Request) (*waldur.State, error) {
	r, refresh := e.seams.Source.(Refresher)
	u, users := e.seams.Source.(UserRefresher)
	switch {
	case req.Full != "":
	case !refresh || len(req.Resources) == 0 || e.last == nil || e.last.State == nil:
		if len(req.Resources) > 0 {
			req.Full = events.FullNoLastRun
		}
	case len(req.OfferingUsers) > 0 && !users:
		req.Full = events.FullCannotRefresh
	default:
		st, err := r.Refresh(ctx, e.last.State, req.Resources)
		if err == nil && len(req.OfferingUsers) > 0 {
			err = u.RefreshUsers(ctx, st, req.OfferingUsers)
		}
		return st, err
	}
	if req.Full != "" {
		e.log.Debug("an event run reads and renders in full", "cause", string(req.Full))
	}
	return e.seams.Source.Read(ctx)
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
