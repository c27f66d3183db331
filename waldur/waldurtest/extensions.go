package waldurtest

import (
	"net/http"
	"regexp"

	"github.com/waldur/waldur-gitops/waldur"
)

// Extension endpoints are real Waldur endpoints that the selected OpenAPI
// subset does not contain: under Subset805, users/me, the provider offering,
// the plan and the offering's service and course account listings (all are
// contract operations of Subset81). The fake
// serves them only on paths a test allowed with AllowPath, so every test that
// depends on one says so; their answers are not validated (the subset has no
// schema for them) and carry the same fields as the contract operations.
type extension struct {
	method  string
	pattern *regexp.Regexp
	handle  func(s *Server, r *http.Request, id string) *response
}

var extensions = []extension{
	{http.MethodGet, regexp.MustCompile(`^/api/users/me/$`), func(s *Server, _ *http.Request, _ string) *response { return s.currentUser() }},
	{http.MethodGet, regexp.MustCompile(`^/api/marketplace-provider-offerings/([^/]+)/$`), func(s *Server, _ *http.Request, id string) *response { return s.providerOffering(id) }},
	{http.MethodGet, regexp.MustCompile(`^/api/marketplace-plans/([^/]+)/$`), func(s *Server, _ *http.Request, id string) *response { return s.plan(id) }},
	{http.MethodGet, regexp.MustCompile(`^/api/marketplace-provider-offerings/([^/]+)/list_project_service_accounts/$`), func(s *Server, r *http.Request, id string) *response {
		return s.accounts(r, nil, s.data.serviceAccounts, id)
	}},
	{http.MethodGet, regexp.MustCompile(`^/api/marketplace-provider-offerings/([^/]+)/list_course_accounts/$`), func(s *Server, r *http.Request, id string) *response {
		return s.accounts(r, nil, s.data.courseAccounts, id)
	}},
}

// serveExtension answers an allowed request outside the subset; nil when no
// extension serves it.
func (s *Server) serveExtension(r *http.Request) *response {
	for _, e := range extensions {
		m := e.pattern.FindStringSubmatch(r.URL.Path)
		if m == nil || r.Method != e.method {
			continue
		}
		if resp := s.authenticate(r); resp != nil {
			return resp
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		id := ""
		if len(m) > 1 {
			id = m[1]
		}
		return e.handle(s, r, id)
	}
	return nil
}

// currentUserOp serves users_me_retrieve.
func (s *Server) currentUserOp(*http.Request, []byte, *operation) *response { return s.currentUser() }

// providerOfferingOp serves marketplace_provider_offerings_retrieve.
func (s *Server) providerOfferingOp(_ *http.Request, _ []byte, op *operation) *response {
	return s.providerOffering(op.Params["uuid"])
}

// planOp serves marketplace_plans_retrieve.
func (s *Server) planOp(_ *http.Request, _ []byte, op *operation) *response {
	return s.plan(op.Params["uuid"])
}

func (s *Server) currentUser() *response {
	u := s.data.user
	if u.UUID == "" {
		u.UUID = waldur.UUID(s.data.id("", tagUser, 0))
	}
	if u.Username == "" {
		u.Username = "waldurtest.provider"
	}
	return jsonResponse(http.StatusOK, u)
}

func (s *Server) providerOffering(id string) *response {
	o, ok := s.data.offering(id)
	if !ok {
		return notFound()
	}
	if o.Components == nil {
		o.Components = []waldur.OfferingComponent{}
	}
	return jsonResponse(http.StatusOK, o)
}

// plan answers a plan with every field ProviderPlanDetails requires.
func (s *Server) plan(id string) *response {
	p, ok := s.data.plans[uuidKey(id)]
	if !ok {
		return notFound()
	}
	quotas := object{}
	for k, v := range p.Quotas {
		quotas[k] = v
	}
	return jsonResponse(http.StatusOK, object{
		"url": s.data.base + "/api/marketplace-plans/" + string(p.UUID) + "/", "uuid": p.UUID, "name": p.Name,
		"is_active": true, "init_price": 0, "switch_price": 0, "organization_groups": []any{}, "components": []any{},
		"offering": "", "prices": object{}, "future_prices": object{}, "quotas": quotas,
		"resources_count": 0, "plan_type": "usage", "minimal_price": "0",
	})
}

// SetCurrentUser sets the user GET /api/users/me/ answers with.
func (s *Server) SetCurrentUser(u waldur.User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data.user = u
}

// AddOffering stores a provider offering, read with GET
// /api/marketplace-provider-offerings/<uuid>/ (see store.offering for the
// offerings that exist without it); its components also restrict
// set_usage to the offering's usage- and limit-billed component types, as
// Waldur does. Without AddOffering any type is accepted.
func (s *Server) AddOffering(o waldur.ProviderOffering) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.data.id(o.UUID, tagOffering, s.data.next())
	o.UUID = waldur.UUID(id)
	if o.State == "" {
		o.State = "Active"
	}
	s.data.offerings[id] = o
	s.data.components[id] = o.Components
}

// AddPlan stores a plan, read with GET /api/marketplace-plans/<uuid>/; it
// returns the plan's uuid (generated when p has none).
func (s *Server) AddPlan(p waldur.Plan) waldur.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.data.id(p.UUID, tagPlan, s.data.next())
	p.UUID = waldur.UUID(id)
	s.data.plans[id] = p
	return p.UUID
}
