package waldurtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/waldur"
)

// Resource write-backs of a provider (set_as_ok, set_as_erred,
// set_backend_metadata, refresh_last_sync, set_membership_sync_statuses),
// with the effects Waldur's resource state machine gives them.

// okSources are the states set_as_ok moves a resource from; any other answers
// 409 like Waldur's state transition check.
var okSources = []string{waldur.ResourceCreating, waldur.ResourceUpdating, waldur.ResourceTerminating, waldur.ResourceErred}

func (s *Server) withResource(op *operation) (object, *response) {
	res, ok := s.data.resources.get(op.Params["uuid"])
	if !ok {
		return nil, notFound()
	}
	return res, nil
}

func (s *Server) setResourceOK(_ *http.Request, _ []byte, op *operation) *response {
	res, bad := s.withResource(op)
	if bad != nil {
		return bad
	}
	if !slices.Contains(okSources, fmt.Sprint(res["state"])) {
		return detail(http.StatusConflict, "Valid states for operation: "+strings.Join(okSources, ", ")+".")
	}
	res["state"], res["error_message"], res["error_traceback"], res["modified"] = waldur.ResourceOK, "", "", now()
	return emptyResponse(http.StatusOK)
}

func (s *Server) setResourceErred(_ *http.Request, body []byte, op *operation) *response {
	res, b, bad := target(s.data.resources, op, body)
	if bad != nil {
		return bad
	}
	if fmt.Sprint(res["state"]) == waldur.ResourceTerminated {
		return detail(http.StatusConflict, "Valid states for operation: "+strings.Join(okSources[:3], ", ")+", OK, Erred.")
	}
	msg, _ := b["error_message"].(string)
	tb, _ := b["error_traceback"].(string)
	res["state"], res["error_message"], res["error_traceback"], res["modified"] = waldur.ResourceErred, msg, tb, now()
	return emptyResponse(http.StatusOK)
}

func (s *Server) setResourceBackendMetadata(_ *http.Request, body []byte, op *operation) *response {
	res, b, bad := target(s.data.resources, op, body)
	if bad != nil {
		return bad
	}
	m, ok := b["backend_metadata"].(map[string]any)
	if !ok {
		return jsonResponse(http.StatusBadRequest, map[string][]string{"backend_metadata": {"This field is required."}})
	}
	res["backend_metadata"] = m
	return jsonResponse(http.StatusOK, map[string]string{"status": "Resource backend_metadata has been changed."})
}

func (s *Server) refreshLastSync(_ *http.Request, _ []byte, op *operation) *response {
	res, bad := s.withResource(op)
	if bad != nil {
		return bad
	}
	res["last_sync"] = now()
	return emptyResponse(http.StatusOK)
}

// setMembershipSyncStatuses stores the statuses; like Waldur it answers 409
// when the resource's offering does not enable membership sync statuses.
func (s *Server) setMembershipSyncStatuses(_ *http.Request, body []byte, op *operation) *response {
	res, bad := s.withResource(op)
	if bad != nil {
		return bad
	}
	opts, _ := res["offering_plugin_options"].(map[string]any)
	if on, _ := opts["enable_membership_sync_status"].(bool); !on {
		return detail(http.StatusConflict, "Membership sync status reporting is not enabled for this offering.")
	}
	var b struct {
		Statuses []waldur.MemberSyncStatus `json:"statuses"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return detail(http.StatusBadRequest, "JSON parse error - "+err.Error())
	}
	s.data.memberStatuses[uuidKey(op.Params["uuid"])] = b.Statuses
	return jsonResponse(http.StatusOK, map[string]any{"stored": len(b.Statuses), "skipped": []string{}})
}

// MembershipSyncStatuses returns the statuses last reported for a resource.
func (s *Server) MembershipSyncStatuses(id waldur.UUID) []waldur.MemberSyncStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.data.memberStatuses[uuidKey(string(id))])
}

// ResourceError returns the error message Waldur holds for a resource.
func (s *Server) ResourceError(id waldur.UUID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.data.resources.get(string(id))
	if !ok {
		return ""
	}
	m, _ := res["error_message"].(string)
	return m
}
