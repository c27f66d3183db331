package waldurtest

import (
	"net/http"
	"regexp"

	"github.com/waldur/waldur-gitops/waldur"
)

// Extension endpoints are real Waldur endpoints that the OpenAPI subset does not
// contain. The fake serves them only on paths a test allowed with AllowPath,
// so every test that depends on one says so; their answers are not validated
// (there is no schema for them here) and carry the fields that the shared
// Waldur API notes document:
//
//   - GET /api/users/me/ (§1.1): the token's user.
//   - GET /api/marketplace-provider-offerings/<uuid>/ (§6.1): the offering as
//     its provider sees it, with its components.
type extension struct {
	method  string
	pattern *regexp.Regexp
	handle  func(s *Server, m []string) *response
}

var extensions = []extension{
	{http.MethodGet, regexp.MustCompile(`^/api/users/me/$`), (*Server).currentUser},
	{http.MethodGet, regexp.MustCompile(`^/api/marketplace-provider-offerings/([^/]+)/$`), (*Server).providerOffering},
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
		return e.handle(s, m)
	}
	return nil
}

func (s *Server) currentUser([]string) *response {
	u := s.data.user
	if u.UUID == "" {
		u.UUID = waldur.UUID(s.data.id("", tagUser, 0))
	}
	if u.Username == "" {
		u.Username = "waldurtest.provider"
	}
	return jsonResponse(http.StatusOK, u)
}

func (s *Server) providerOffering(m []string) *response {
	o, ok := s.data.offerings[uuidKey(m[1])]
	if !ok {
		return notFound()
	}
	if o.Components == nil {
		o.Components = []waldur.OfferingComponent{}
	}
	return jsonResponse(http.StatusOK, o)
}

// SetCurrentUser sets the user GET /api/users/me/ answers with (an extension
// endpoint: allow it with AllowPath("/api/users/me/")).
func (s *Server) SetCurrentUser(u waldur.User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data.user = u
}

// AddOffering stores a provider offering. GET on it is an extension endpoint
// (allow it with AllowPath("/api/marketplace-provider-offerings/")); its
// components also restrict set_usage to the offering's usage- and limit-billed
// component types, as Waldur does. Without AddOffering any type is accepted.
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
