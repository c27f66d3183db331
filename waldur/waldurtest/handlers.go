package waldurtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

// handler answers one operation; it runs with s.mu held.
type handler func(s *Server, r *http.Request, body []byte, op *operation) *response

// handlers maps the operationIds the fake serves to their handlers.
var handlers = map[string]handler{
	"marketplace_provider_resources_list":                               (*Server).listResources,
	"marketplace_provider_resources_retrieve":                           (*Server).getResource,
	"marketplace_provider_resources_team_list":                          (*Server).team,
	"marketplace_provider_resources_set_backend_id":                     (*Server).setResourceBackendID,
	"marketplace_provider_resources_set_limits":                         (*Server).setResourceLimits,
	"marketplace_provider_resources_set_as_ok":                          (*Server).setResourceOK,
	"marketplace_provider_resources_set_as_erred":                       (*Server).setResourceErred,
	"marketplace_provider_resources_set_backend_metadata":               (*Server).setResourceBackendMetadata,
	"marketplace_provider_resources_refresh_last_sync":                  (*Server).refreshLastSync,
	"marketplace_provider_resources_set_membership_sync_statuses":       (*Server).setMembershipSyncStatuses,
	"marketplace_orders_list":                                           (*Server).listOrders,
	"marketplace_orders_retrieve":                                       (*Server).getOrder,
	"marketplace_orders_approve_by_provider":                            (*Server).approveOrder,
	"marketplace_orders_reject_by_provider":                             (*Server).rejectOrder,
	"marketplace_orders_set_state_executing":                            (*Server).setOrderExecuting,
	"marketplace_orders_set_state_done":                                 (*Server).setOrderDone,
	"marketplace_orders_set_state_erred":                                (*Server).setOrderErred,
	"marketplace_orders_set_backend_id":                                 (*Server).setOrderBackendID,
	"marketplace_offering_users_list":                                   (*Server).listOfferingUsers,
	"marketplace_provider_offerings_list_project_service_accounts_list": (*Server).listServiceAccounts,
	"marketplace_provider_offerings_list_course_accounts_list":          (*Server).listCourseAccounts,
	"version_retrieve":                                                  (*Server).version,
	"users_me_retrieve":                                                 (*Server).currentUserOp,
	"marketplace_provider_offerings_retrieve":                           (*Server).providerOfferingOp,
	"marketplace_plans_retrieve":                                        (*Server).planOp,
	"marketplace_component_usages_list":                                 (*Server).listUsages,
	"marketplace_component_usages_set_usage":                            (*Server).setUsage,
	"marketplace_site_agent_identities_list":                            (*Server).listAgentIdentities,
	"marketplace_site_agent_identities_create":                          (*Server).createAgentIdentity,
	"marketplace_site_agent_identities_update":                          (*Server).updateAgentIdentity,
	"marketplace_site_agent_identities_register_service":                (*Server).registerAgentService,
	"marketplace_site_agent_services_register_processor":                (*Server).registerAgentProcessor,
	"marketplace_site_agent_identities_register_queue":                  (*Server).registerQueue,
	"marketplace_site_agent_identities_register_event_subscription":     (*Server).registerEventSubscription,
	"event_subscriptions_create_queue":                                  (*Server).createEventQueue,
	"event_subscriptions_destroy":                                       (*Server).deleteEventSubscription,
}

// handle authenticates the request and dispatches it by operationId.
func (s *Server) handle(r *http.Request, body []byte, op *operation) *response {
	if resp := s.authenticate(r); resp != nil {
		return resp
	}
	h, ok := handlers[op.ID()]
	if !ok {
		s.violation(r, "unimplemented", fmt.Errorf("operation %s is in the subset but waldurtest does not serve it", op.ID()))
		return detail(http.StatusNotImplemented, "Not implemented by waldurtest.")
	}
	defer s.flushEvents()
	s.mu.Lock()
	if r.Method != http.MethodGet {
		defer s.mu.Unlock()
		return h(s, r, body, op)
	}
	defer s.mu.unlockRead() // a read changes nothing a listing shows
	if len(s.listFaults) > 0 {
		return h(s, r, body, op) // a fault's answer is neither given nor kept
	}
	if resp, ok := s.answers.get(r, s.mu.gen); ok {
		return resp
	}
	resp := h(s, r, body, op)
	s.answers.put(r, s.mu.gen, resp)
	return resp
}

// authenticate mirrors Waldur's TokenAuthentication: keyword "Token" in any case,
// exactly two space-separated parts, then the key.
func (s *Server) authenticate(r *http.Request) *response {
	parts := strings.Fields(r.Header.Get("Authorization"))
	var msg string
	switch {
	case len(parts) == 0 || !strings.EqualFold(parts[0], "token"):
		msg = "Authentication credentials were not provided."
	case len(parts) == 1:
		msg = "Invalid token header. No credentials provided."
	case len(parts) > 2:
		msg = "Invalid token header. Token string should not contain spaces."
	case parts[1] != s.token:
		msg = "Invalid token."
	default:
		return nil
	}
	resp := detail(http.StatusUnauthorized, msg)
	resp.header.Set("WWW-Authenticate", "Token")
	return resp
}

func (s *Server) listResources(r *http.Request, _ []byte, op *operation) *response {
	return s.list(r, op, s.data.resources.items, resourceFilters)
}

func (s *Server) listOrders(r *http.Request, _ []byte, op *operation) *response {
	return s.list(r, op, s.data.orders.items, orderFilters)
}

func (s *Server) listOfferingUsers(r *http.Request, _ []byte, op *operation) *response {
	return s.list(r, op, s.data.oUsers.items, offeringUserFilters)
}

// listServiceAccounts lists the offering's project service accounts. The
// endpoint's query parameters filter offerings, not accounts: none is applied.
func (s *Server) listServiceAccounts(r *http.Request, _ []byte, op *operation) *response {
	return s.accounts(r, op, s.data.serviceAccounts, op.Params["uuid"])
}

// listCourseAccounts lists the offering's course accounts, like listServiceAccounts.
func (s *Server) listCourseAccounts(r *http.Request, _ []byte, op *operation) *response {
	return s.accounts(r, op, s.data.courseAccounts, op.Params["uuid"])
}

func (s *Server) accountsOf(by map[string]*collection, offering string) []object {
	if c := by[uuidKey(offering)]; c != nil {
		return c.items
	}
	return nil
}

// accounts answers an offering's account listing; an offering that does not
// exist answers 404, as the detail action of an unknown object does in Waldur.
func (s *Server) accounts(r *http.Request, op *operation, by map[string]*collection, offering string) *response {
	if _, ok := s.data.offering(offering); !ok {
		return notFound()
	}
	return s.list(r, op, s.accountsOf(by, offering), nil)
}

func (s *Server) getResource(r *http.Request, _ []byte, op *operation) *response {
	return retrieve(r, s.data.resources, op)
}

func (s *Server) getOrder(r *http.Request, _ []byte, op *operation) *response {
	return retrieve(r, s.data.orders, op)
}

func retrieve(r *http.Request, c *collection, op *operation) *response {
	o, ok := c.get(op.Params["uuid"])
	if !ok {
		return notFound()
	}
	return jsonResponse(http.StatusOK, selectFields(o, r.URL.Query()["field"]))
}

func notFound() *response { return detail(http.StatusNotFound, "Not found.") }

// team answers the team of a resource's project: a bare list, not paginated.
func (s *Server) team(_ *http.Request, _ []byte, op *operation) *response {
	res, ok := s.data.resources.get(op.Params["uuid"])
	if !ok {
		return notFound()
	}
	members := s.data.teams[uuidKey(res["project_uuid"])]
	if members == nil {
		members = []object{}
	}
	return jsonResponse(http.StatusOK, members)
}

func (s *Server) version(*http.Request, []byte, *operation) *response {
	return jsonResponse(http.StatusOK, map[string]string{"version": s.answerVersion})
}

// decodeBody reads an optional JSON object body.
func decodeBody(body []byte) (object, *response) {
	if len(bytes.TrimSpace(body)) == 0 {
		return object{}, nil
	}
	var o object
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, detail(http.StatusBadRequest, "JSON parse error - "+err.Error())
	}
	return o, nil
}

// target is what a write handler starts with: the object of c that the
// operation's uuid path parameter names, and the request's optional JSON
// object body. A missing object answers 404 (before the body is read), a
// body that is not JSON 400; bad is that answer.
func target(c *collection, op *operation, body []byte) (o, req object, bad *response) {
	o, ok := c.get(op.Params["uuid"])
	if !ok {
		return nil, nil, notFound()
	}
	if req, bad = decodeBody(body); bad != nil {
		return nil, nil, bad
	}
	return o, req, nil
}

func (s *Server) setResourceBackendID(_ *http.Request, body []byte, op *operation) *response {
	res, b, bad := target(s.data.resources, op, body)
	if bad != nil {
		return bad
	}
	id, _ := b["backend_id"].(string)
	if res["backend_id"] == id {
		return jsonResponse(http.StatusOK, map[string]string{"status": "Resource backend_id is not changed."})
	}
	res["backend_id"] = id
	return jsonResponse(http.StatusOK, map[string]string{"status": "Resource backend_id has been changed."})
}

// hasLimits reports whether a stored limits value holds any component.
func hasLimits(v any) bool {
	switch l := v.(type) {
	case waldur.Limits:
		return len(l) > 0
	case map[string]any:
		return len(l) > 0
	}
	return false
}

// setResourceLimits replaces a resource's limits with the body's.
func (s *Server) setResourceLimits(_ *http.Request, body []byte, op *operation) *response {
	res, b, bad := target(s.data.resources, op, body)
	if bad != nil {
		return bad
	}
	l, ok := b["limits"].(map[string]any)
	if !ok {
		return jsonResponse(http.StatusBadRequest, map[string][]string{"limits": {"This field is required."}})
	}
	res["limits"] = l
	return jsonResponse(http.StatusOK, map[string]string{"status": "OK"})
}

// Order state machine (provider side), after waldur-api.md §3.3.

// withOrder looks the order up and checks its state, answering 404 or 409 like
// Waldur (409 "Valid states for operation: …").
func (s *Server) withOrder(op *operation, valid ...string) (object, *response) {
	o, ok := s.data.orders.get(op.Params["uuid"])
	if !ok {
		return nil, notFound()
	}
	if len(valid) > 0 && !slices.Contains(valid, fmt.Sprint(o["state"])) {
		return nil, detail(http.StatusConflict, "Valid states for operation: "+strings.Join(valid, ", ")+".")
	}
	return o, nil
}

// setResourceState updates the order's resource, if the fake knows it.
func (s *Server) setResourceState(order object, state string) object {
	res, ok := s.data.resources.get(fmt.Sprint(order["marketplace_resource_uuid"]))
	if !ok {
		return nil
	}
	res["state"] = state
	res["modified"] = now()
	return res
}

func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

func (s *Server) approveOrder(_ *http.Request, body []byte, op *operation) *response {
	o, bad := s.withOrder(op, waldur.OrderPendingProvider)
	if bad != nil {
		return bad
	}
	b, bad := decodeBody(body)
	if bad != nil {
		return bad
	}
	if attrs, ok := b["attributes"].(map[string]any); ok {
		merged, _ := o["attributes"].(map[string]any)
		if merged == nil {
			merged = object{}
		}
		for k, v := range attrs {
			merged[k] = v
		}
		o["attributes"] = merged
	}
	o["state"] = waldur.OrderExecuting
	o["provider_reviewed_at"], o["provider_reviewed_by"] = now(), "waldurtest.provider"
	defer s.orderEvent(o)
	switch o["type"] {
	case waldur.OrderUpdate:
		s.setResourceState(o, waldur.ResourceUpdating)
	case waldur.OrderTerminate:
		s.setResourceState(o, waldur.ResourceTerminating)
	}
	return jsonResponse(http.StatusOK, map[string]string{"detail": "Order has been approved and is being processed."})
}

func (s *Server) rejectOrder(_ *http.Request, body []byte, op *operation) *response {
	o, bad := s.withOrder(op, waldur.OrderPendingProvider)
	if bad != nil {
		return bad
	}
	b, bad := decodeBody(body)
	if bad != nil {
		return bad
	}
	o["state"] = "rejected"
	defer s.orderEvent(o)
	if c, ok := b["provider_rejection_comment"].(string); ok {
		o["provider_rejection_comment"] = c
	}
	if o["type"] == waldur.OrderCreate {
		// Assumed: a rejected creation leaves no live resource behind.
		s.setResourceState(o, waldur.ResourceTerminated)
	}
	return emptyResponse(http.StatusOK)
}

func (s *Server) setOrderExecuting(_ *http.Request, _ []byte, op *operation) *response {
	o, bad := s.withOrder(op, "pending-consumer", waldur.OrderPendingProvider, waldur.OrderErred)
	if bad != nil {
		return bad
	}
	o["state"] = waldur.OrderExecuting
	return emptyResponse(http.StatusOK)
}

func (s *Server) setOrderDone(_ *http.Request, _ []byte, op *operation) *response {
	o, bad := s.withOrder(op, waldur.OrderExecuting)
	if bad != nil {
		return bad
	}
	o["state"], o["completed_at"] = waldur.OrderDone, now()
	defer s.orderEvent(o)
	switch o["type"] {
	case waldur.OrderCreate, waldur.OrderRestore:
		s.setResourceState(o, waldur.ResourceOK)
	case waldur.OrderUpdate:
		// The order's limits, when it has any, and its plan become the
		// resource's; a plan switch without limits leaves the limits alone.
		if res := s.setResourceState(o, waldur.ResourceOK); res != nil {
			if hasLimits(o["limits"]) {
				res["limits"] = o["limits"]
			}
			if p, _ := o["plan_uuid"].(string); p != "" {
				res["plan_uuid"] = p
			}
		}
	case waldur.OrderTerminate:
		s.setResourceState(o, waldur.ResourceTerminated)
	}
	return emptyResponse(http.StatusOK)
}

// setOrderErred needs both keys in the body (the 2024 server reads them
// unconditionally and fails with 500 otherwise); only an executing order changes.
func (s *Server) setOrderErred(_ *http.Request, body []byte, op *operation) *response {
	o, b, bad := target(s.data.orders, op, body)
	if bad != nil {
		return bad
	}
	msg, okMsg := b["error_message"]
	tb, okTB := b["error_traceback"]
	if !okMsg || !okTB {
		return &response{status: http.StatusInternalServerError, header: http.Header{"Content-Type": {"text/html"}},
			body: []byte("<h1>Server Error (500)</h1>\n")}
	}
	if o["state"] != waldur.OrderExecuting {
		return emptyResponse(http.StatusOK)
	}
	o["state"], o["error_message"], o["error_traceback"] = waldur.OrderErred, msg, tb
	switch o["type"] {
	case waldur.OrderCreate, waldur.OrderUpdate:
		s.setResourceState(o, waldur.ResourceErred)
	case waldur.OrderTerminate:
		s.setResourceState(o, waldur.ResourceOK)
	}
	return emptyResponse(http.StatusOK)
}

func (s *Server) setOrderBackendID(_ *http.Request, body []byte, op *operation) *response {
	o, b, bad := target(s.data.orders, op, body)
	if bad != nil {
		return bad
	}
	id, ok := b["backend_id"].(string)
	if !ok || id == "" {
		return jsonResponse(http.StatusBadRequest, map[string][]string{"backend_id": {"This field is required."}})
	}
	if o["backend_id"] == id {
		return jsonResponse(http.StatusOK, map[string]string{"status": "Order backend_id is not changed."})
	}
	o["backend_id"] = id
	return jsonResponse(http.StatusOK, map[string]string{"status": "Order backend_id has been changed."})
}
