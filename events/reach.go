package events

import (
	"slices"

	"github.com/waldur/waldur-gitops/waldur"
)

// Reach is what a trigger reaches in the last run's state st: the named
// resources, those of the named projects, and those of the projects whose
// teams list a named offering user. full is set when the trigger cannot be
// served by those alone (it asks for a full run, or an offering user is one
// st does not know by a username, or is in no team of ours); ok is false
// when there is nothing to do (only projects of which st has no resource).
func (t Trigger) Reach(st *waldur.State) (ids []waldur.UUID, full FullCause, ok bool) {
	if t.Full {
		return nil, t.Why, true
	}
	projects, known := userProjects(st, t.OfferingUsers)
	if !known {
		return nil, FullUnattributed, true
	}
	projects = append(slices.Clone(t.Projects), projects...)
	slices.Sort(projects)
	ids = slices.Clone(t.Resources)
	for _, o := range st.Offerings {
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
			return nil, FullUnattributed, true
		}
		return nil, "", false
	}
	slices.Sort(ids)
	return ids, "", true
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
