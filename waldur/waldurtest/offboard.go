package waldurtest

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/waldur/waldur-gitops/waldur"
)

// The offering-user deletion workflow, with Waldur's state machine: a
// consumer (or staff) requests deletion, the provider claims the request
// (set_deleting from Requested deletion or Error deleting), then reports it
// done (set_deleted) or failed (set_error_deleting), both from Deleting.
// Any other transition answers 400, as Waldur does.
var offeringUserTransitions = map[string]struct {
	from []string
	to   string
}{
	"marketplace_offering_users_request_deletion":   {[]string{"OK", "Requested", "Creating", "Error creating", "Pending account linking", "Pending additional validation"}, waldur.OfferingUserRequestedDeletion},
	"marketplace_offering_users_set_deleting":       {[]string{waldur.OfferingUserRequestedDeletion, waldur.OfferingUserErrorDeleting}, waldur.OfferingUserDeleting},
	"marketplace_offering_users_set_deleted":        {[]string{waldur.OfferingUserDeleting}, waldur.OfferingUserDeleted},
	"marketplace_offering_users_set_error_deleting": {[]string{waldur.OfferingUserDeleting}, waldur.OfferingUserErrorDeleting},
}

func init() {
	for id := range offeringUserTransitions {
		handlers[id] = (*Server).offeringUserTransition
	}
	handlers["marketplace_offering_users_retrieve"] = func(s *Server, r *http.Request, _ []byte, op *operation) *response {
		return retrieve(r, s.data.oUsers, op)
	}
}

// offeringUserTransition moves an offering user along the deletion workflow.
func (s *Server) offeringUserTransition(_ *http.Request, _ []byte, op *operation) *response {
	u, ok := s.data.oUsers.get(op.Params["uuid"])
	if !ok {
		return notFound()
	}
	t := offeringUserTransitions[op.ID()]
	if cur := fmt.Sprint(u["state"]); !slices.Contains(t.from, cur) {
		return jsonResponse(http.StatusBadRequest, []string{fmt.Sprintf("Offering user in state %s cannot be moved to %s.", cur, t.to)})
	}
	s.setOfferingUserState(u, t.to)
	return emptyResponse(http.StatusOK)
}

// setOfferingUserState sets an offering user's state, in the team entries
// that name it too, and tells the offering's event queues (with s.mu held).
func (s *Server) setOfferingUserState(u object, state string) {
	u["state"], u["modified"] = state, now()
	name, _ := u["username"].(string)
	for _, team := range s.data.teams {
		for _, m := range team {
			if name != "" && m["offering_user_username"] == name {
				m["offering_user_state"] = state
			}
		}
	}
	s.publishEvent(uuidKey(u["offering_uuid"]), "offering_user", object{
		"action": "update", "offering_user_uuid": u["uuid"], "user_uuid": u["user_uuid"],
		"username": u["username"], "offering_uuid": u["offering_uuid"], "changed_attributes": []string{"state"},
	})
}

// SetOfferingUserState puts an offering user in a state directly, as Waldur
// would after an action the provider does not make (a deletion request, a
// grant restored), and in the team entries that name it.
func (s *Server) SetOfferingUserState(user waldur.UUID, state string) {
	defer s.flushEvents()
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.data.oUsers.get(string(user))
	if !ok {
		s.t.Errorf("waldurtest: no offering user %s", user)
		return
	}
	s.setOfferingUserState(u, state)
}

// OfferingUserState returns an offering user's state, "" when there is none.
func (s *Server) OfferingUserState(user waldur.UUID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.data.oUsers.get(string(user))
	if !ok {
		return ""
	}
	return fmt.Sprint(u["state"])
}
