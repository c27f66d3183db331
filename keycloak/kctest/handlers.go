package kctest

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// handler serves one route with the realm resolved; it runs with s.mu held.
type handler func(w http.ResponseWriter, r *http.Request, rl *realm) int

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /realms/{realm}/protocol/openid-connect/token", s.wrap("POST /token", permNone, s.token))
	admin := func(method, route string, perm permission, h handler) {
		mux.HandleFunc(method+" /admin/realms/{realm}"+route, s.wrap(method+" "+route, perm, h))
	}
	mux.HandleFunc("POST /admin/realms", s.wrap("POST /admin/realms", permServer, s.createRealm))
	mux.HandleFunc("POST /admin/realms/{$}", s.wrap("POST /admin/realms", permServer, s.createRealm))
	admin("DELETE", "", permServer, s.deleteRealm)
	admin("GET", "", permRealm, s.getRealm)
	admin("PUT", "", permServer, s.updateRealm)
	admin("GET", "/admin-events", permEvents, s.adminEvents)
	admin("POST", "/users", permManage, s.createUser)
	admin("GET", "/groups", permListGroups, s.listGroups)
	admin("POST", "/groups", permManage, s.createTopGroup)
	admin("GET", "/groups/{id}", permView, s.getGroup)
	admin("PUT", "/groups/{id}", permManage, s.updateGroup)
	admin("DELETE", "/groups/{id}", permManage, s.deleteGroup)
	admin("GET", "/groups/{id}/children", permView, s.listChildren)
	admin("POST", "/groups/{id}/children", permManage, s.createChildGroup)
	admin("GET", "/groups/{id}/members", permView, s.listMembers)
	admin("GET", "/group-by-path/{path...}", permView, s.groupByPath)
	admin("GET", "/users", permListUsers, s.listUsers)
	admin("GET", "/users/{id}", permView, s.getUser)
	admin("GET", "/users/{id}/groups", permView, s.userGroups)
	admin("PUT", "/users/{id}/groups/{groupId}", permManage, s.joinGroup)
	admin("DELETE", "/users/{id}/groups/{groupId}", permManage, s.leaveGroup)
	admin("POST", "/clients", permServer, s.createClient)
	admin("GET", "/clients", permServer, s.listClients)
	admin("GET", "/clients/{id}/service-account-user", permServer, s.serviceAccountUser)
	admin("GET", "/clients/{id}/roles/{role}", permServer, s.clientRole)
	admin("POST", "/users/{id}/role-mappings/clients/{client}", permServer, s.mapClientRoles)
	return normalized(mux)
}

// normalized refuses a request path with an empty, "." or ".." segment as
// Keycloak 26 does (400 missingNormalization), where ServeMux would redirect
// to the cleaned path and a client following the redirect would never learn
// that the real server refuses it.
func normalized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if strings.Contains(p, "//") || slices.ContainsFunc(strings.Split(p, "/"), func(seg string) bool { return seg == "." || seg == ".." }) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "missingNormalization", "error_description": "Request path not normalized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wrap adds latency, faults, counting, the realm lookup and, for admin routes,
// the bearer token check.
func (s *Server) wrap(route string, perm permission, h handler) http.HandlerFunc {
	admin := perm != permNone
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		latency, writeLatency := s.latency, s.writeLatency
		s.requests++
		s.calls[route]++
		if s.expireIn > 0 {
			if s.expireIn--; s.expireIn == 0 {
				clear(s.access)
			}
		}
		f, faulted := s.takeFault(r)
		s.mu.Unlock()
		if admin {
			release, ok := s.admit(r)
			if !ok {
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "overloaded"})
				return
			}
			defer release()
		}
		if latency > 0 {
			time.Sleep(latency)
		}
		if admin && r.Method != http.MethodGet && writeLatency > 0 {
			// With the body read, the server notices a client that hangs up.
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			select {
			case <-time.After(writeLatency):
			case <-r.Context().Done():
				return // the client gave up: the write never happens
			}
		}
		if faulted && f.After {
			s.mu.Lock()
			if rl := s.realms[r.PathValue("realm")]; rl != nil && (!admin || s.caller(r) != nil) {
				s.cur, s.curRealm = s.caller(r), rl.name
				h(discard{header: http.Header{}}, r, rl)
			}
			s.mu.Unlock()
		}
		if faulted {
			if f.Status == 0 {
				if hj, ok := w.(http.Hijacker); ok {
					if conn, _, err := hj.Hijack(); err == nil {
						_ = conn.Close()
						return
					}
				}
				f.Status = http.StatusBadGateway
			}
			writeJSON(w, f.Status, map[string]string{"error": "injected fault"})
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		rl := s.realms[r.PathValue("realm")]
		if r.PathValue("realm") == "" {
			rl = s.realms[AdminRealm] // the realm collection itself
		}
		p := s.caller(r)
		if admin && p == nil {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "HTTP 401 Unauthorized"})
			return
		}
		if rl == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "Realm not found."})
			return
		}
		s.cur, s.curRealm = p, rl.name
		if admin {
			switch p.may(perm, rl.name) {
			case refuse:
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "HTTP 403 Forbidden"})
				return
			case nothingVisible:
				writeJSON(w, http.StatusOK, []any{})
				return
			}
		}
		status := h(w, r, rl)
		if admin && r.Method != http.MethodGet && status < 400 {
			s.writes++
		}
	}
}

// caller returns who the request's bearer token was issued to; nil when it
// has no valid token.
func (s *Server) caller(r *http.Request) *principal {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil
	}
	exp, ok := s.access[tok]
	if !ok || !time.Now().Before(exp) {
		return nil
	}
	return s.who[tok]
}

// discard is a ResponseWriter that drops the answer.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
	return status
}

func noContent(w http.ResponseWriter) int {
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}

func errorMessage(w http.ResponseWriter, status int, msg string) int {
	return writeJSON(w, status, map[string]string{"errorMessage": msg})
}

// cannotParse is Keycloak's answer to a body that does not bind to the
// representation (an attribute value that is not a list, for one).
func cannotParse(w http.ResponseWriter) int {
	return writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unknown_error", "error_description": "Cannot parse the JSON"})
}

func notFound(w http.ResponseWriter, msg string) int {
	return writeJSON(w, http.StatusNotFound, map[string]string{"error": msg})
}

// token serves the password, client_credentials and refresh_token grants.
func (s *Server) token(w http.ResponseWriter, r *http.Request, rl *realm) int {
	if err := r.ParseForm(); err != nil {
		return writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
	}
	clientID, secret, basic := r.BasicAuth()
	if !basic {
		clientID, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	want, known := rl.clients[clientID]
	var p *principal
	clientOK := known && (want == "" || want == secret)
	badClient := func() int {
		return writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized_client", "error_description": "Invalid client or Invalid client credentials"})
	}
	switch r.PostForm.Get("grant_type") {
	case "password":
		if !clientOK {
			return badClient()
		}
		pw, ok := rl.admins[r.PostForm.Get("username")]
		if !ok || pw != r.PostForm.Get("password") {
			return writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_grant", "error_description": "Invalid user credentials"})
		}
		p = &principal{realm: rl.name, all: true, id: "user-" + rl.name + "-" + r.PostForm.Get("username")}
	case "client_credentials":
		if !clientOK || want == "" {
			return badClient()
		}
		p = &principal{realm: rl.name, all: rl.saRoles[clientID] == nil, roles: maps.Clone(rl.saRoles[clientID]), id: "service-account-" + rl.name + "-" + clientID}
	case "refresh_token":
		if !clientOK {
			return badClient()
		}
		rt := r.PostForm.Get("refresh_token")
		if p = s.refresh[rt]; p == nil {
			return writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "Invalid refresh token"})
		}
		delete(s.refresh, rt)
	default:
		return writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Unsupported grant_type"})
	}
	// A JWT in shape, whose payload names the subject as Keycloak's does.
	claims, _ := json.Marshal(map[string]string{"sub": p.id})
	access, refresh := "eyJhbGciOiJub25lIn0."+base64.RawURLEncoding.EncodeToString(claims)+"."+randomToken(), randomToken()
	life := s.TokenLifetime
	s.access[access] = time.Now().Add(life)
	s.who[access] = p
	s.refresh[refresh] = p
	return writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "expires_in": int(life.Seconds()), "refresh_expires_in": 1800, "refresh_token": refresh,
		"token_type": "Bearer", "not-before-policy": 0, "session_state": randomToken()[:16], "scope": "profile email",
	})
}

func randomToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// page reads first and max, with def as the default max (-1: no limit).
func page(r *http.Request, def int) (first, max int) {
	q := r.URL.Query()
	first, max = 0, def
	if v, err := strconv.Atoi(q.Get("first")); err == nil && v > 0 {
		first = v
	}
	if v, err := strconv.Atoi(q.Get("max")); err == nil && v >= 0 {
		max = v
	}
	return first, max
}

func paged[T any](items []T, first, max int) []T {
	if first >= len(items) {
		return []T{}
	}
	items = items[first:]
	if max >= 0 && max < len(items) {
		items = items[:max]
	}
	return items
}

// brief reads briefRepresentation, true unless given as false.
func brief(r *http.Request) bool { return r.URL.Query().Get("briefRepresentation") != "false" }

// groupAccess is the access map Keycloak adds to a group, for the caller of
// the request being served.
func (s *Server) groupAccess() map[string]bool {
	view, manage := s.cur.may(permView, s.curRealm) == allow, s.cur.may(permManage, s.curRealm) == allow
	return map[string]bool{"view": view, "viewMembers": view, "manage": manage, "manageMembers": manage, "manageMembership": manage}
}

// groupJSON is a group's representation as listings and GET by id give it;
// subs are the subgroups to include.
func (s *Server) groupJSON(g *group, brief bool, subs []map[string]any) map[string]any {
	m := map[string]any{
		"id": g.id, "name": g.name, "path": g.path(), "subGroupCount": len(g.kids.byName),
		"access": s.groupAccess(),
	}
	if subs == nil {
		subs = []map[string]any{}
	}
	m["subGroups"] = subs
	if g.parent != nil {
		m["parentId"] = g.parent.id
	}
	if !brief {
		m["attributes"] = copyAttrs(g.attrs)
		m["realmRoles"] = []string{}
		m["clientRoles"] = map[string][]string{}
	}
	return m
}

// userJSON is a user's representation: brief (what searches and member
// lists give when asked for briefRepresentation) or full, with the access map
// Keycloak adds where it adds one (nil: none).
func userJSON(u *user, brief bool, access map[string]bool) map[string]any {
	m := map[string]any{
		"id": u.id, "username": u.username, "enabled": true, "emailVerified": false, "createdTimestamp": u.created,
	}
	if u.email != "" {
		m["email"] = u.email
	}
	if !brief {
		m["totp"], m["disableableCredentialTypes"], m["requiredActions"], m["notBefore"] = false, []string{}, []string{}, 0
	}
	if access != nil {
		m["access"] = access
	}
	return m
}

// userAccess is the access map of GET /users/{id} for the caller; only a
// server administrator may impersonate.
func (s *Server) userAccess() map[string]bool {
	view, manage := s.cur.may(permView, s.curRealm) == allow, s.cur.may(permManage, s.curRealm) == allow
	return map[string]bool{"view": view, "manage": manage, "manageGroupMembership": manage, "mapRoles": manage, "impersonate": s.cur.all, "resetPassword": manage}
}

// matcher returns the search predicate of search and exact.
func matcher(search string, exact bool) func(string) bool {
	if exact {
		return func(name string) bool { return name == search }
	}
	search = strings.ToLower(search)
	return func(name string) bool { return strings.Contains(strings.ToLower(name), search) }
}

// searchTree returns g as found by a search: g itself if it matches, with the
// subgroups that lead to matches below it; nil when nothing in g's subtree matches.
func (s *Server) searchTree(g *group, match func(string) bool, brief bool) map[string]any {
	var subs []map[string]any
	for _, c := range g.kids.list() {
		if t := s.searchTree(c, match, brief); t != nil {
			subs = append(subs, t)
		}
	}
	if subs == nil && !match(g.name) {
		return nil
	}
	return s.groupJSON(g, brief, subs)
}

// listGroups lists the top-level groups (Keycloak 23 and later: no subgroups,
// subGroupCount set), or with search the groups whose subtree matches, with the
// path down to the matches.
func (s *Server) listGroups(w http.ResponseWriter, r *http.Request, rl *realm) int {
	first, max := page(r, -1)
	q := r.URL.Query()
	b := brief(r)
	out := []map[string]any{}
	if search := q.Get("search"); q.Has("search") {
		match := matcher(search, q.Get("exact") == "true")
		var found []map[string]any
		for _, g := range rl.top.list() {
			if t := s.searchTree(g, match, b); t != nil {
				found = append(found, t)
			}
		}
		return writeJSON(w, http.StatusOK, append(out, paged(found, first, max)...))
	}
	for _, g := range paged(rl.top.list(), first, max) {
		out = append(out, s.groupJSON(g, b, nil))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request, rl *realm) int {
	g := rl.groups[r.PathValue("id")]
	if g == nil {
		return notFound(w, "Could not find group by id")
	}
	return writeJSON(w, http.StatusOK, s.groupJSON(g, false, nil))
}

func (s *Server) groupByPath(w http.ResponseWriter, r *http.Request, rl *realm) int {
	g := rl.byPath(r.PathValue("path"))
	if g == nil {
		return notFound(w, "Group path does not exist")
	}
	m := s.groupJSON(g, false, nil)
	delete(m, "access") // Keycloak 26 sends none here
	return writeJSON(w, http.StatusOK, m)
}

// listChildren pages through a group's direct subgroups: by default 10 and
// in full (briefRepresentation defaults to false here, unlike /groups).
func (s *Server) listChildren(w http.ResponseWriter, r *http.Request, rl *realm) int {
	g := rl.groups[r.PathValue("id")]
	if g == nil {
		return notFound(w, "Could not find group by id")
	}
	first, max := page(r, 10)
	q := r.URL.Query()
	kids := g.kids.list()
	if q.Has("search") {
		match := matcher(q.Get("search"), q.Get("exact") == "true")
		kids = slices.DeleteFunc(slices.Clone(kids), func(c *group) bool { return !match(c.name) })
	}
	out := []map[string]any{}
	for _, c := range paged(kids, first, max) {
		out = append(out, s.groupJSON(c, r.URL.Query().Get("briefRepresentation") == "true", nil))
	}
	return writeJSON(w, http.StatusOK, out)
}

// groupBody is the part of a posted group representation the server reads.
type groupBody struct {
	ID         string               `json:"id"`
	Name       string               `json:"name"`
	Attributes *map[string][]string `json:"attributes"`
}

func readGroup(r *http.Request) (groupBody, bool) {
	var b groupBody
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return b, false
	}
	return b, json.NewDecoder(r.Body).Decode(&b) == nil
}

func (s *Server) createTopGroup(w http.ResponseWriter, r *http.Request, rl *realm) int {
	return s.create(w, r, rl, nil)
}

func (s *Server) createChildGroup(w http.ResponseWriter, r *http.Request, rl *realm) int {
	parent := rl.groups[r.PathValue("id")]
	if parent == nil {
		return notFound(w, "Could not find group by id")
	}
	return s.create(w, r, rl, parent)
}

// create makes a group under parent (nil: top level) and answers 201 with its
// Location; a body naming an existing group's id moves that group instead.
func (s *Server) create(w http.ResponseWriter, r *http.Request, rl *realm, parent *group) int {
	b, ok := readGroup(r)
	if !ok {
		return cannotParse(w)
	}
	if existing := rl.groups[b.ID]; b.ID != "" && existing != nil {
		for p := parent; p != nil; p = p.parent {
			if p == existing {
				return errorMessage(w, http.StatusBadRequest, "Cannot move group into one of its own subgroups")
			}
		}
		if other := rl.siblings(parent).byName[existing.name]; other != nil && other != existing {
			return errorMessage(w, http.StatusConflict, dupMessage(parent, existing.name))
		}
		rl.siblings(existing.parent).remove(existing)
		existing.parent = parent
		rl.siblings(parent).add(existing)
		return noContent(w)
	}
	if strings.TrimSpace(b.Name) == "" {
		return errorMessage(w, http.StatusBadRequest, "Group name is missing")
	}
	var attrs map[string][]string
	if b.Attributes != nil {
		attrs = *b.Attributes
	}
	g, err := rl.create(parent, b.Name, attrs)
	if err != nil {
		return errorMessage(w, http.StatusConflict, err.Error())
	}
	w.Header().Set("Location", s.URL+"/admin/realms/"+rl.name+"/groups/"+g.id)
	if parent == nil {
		s.event(rl, "CREATE", "GROUP", "groups/"+g.id)
	} else {
		s.event(rl, "CREATE", "GROUP", "groups/"+parent.id+"/children")
	}
	if parent == nil {
		w.WriteHeader(http.StatusCreated)
		return http.StatusCreated
	}
	m := s.groupJSON(g, false, nil)
	delete(m, "subGroupCount") // the answer to a creation has none
	return writeJSON(w, http.StatusCreated, m)
}

func dupMessage(parent *group, name string) string {
	if parent == nil {
		return "Top level group named '" + name + "' already exists."
	}
	return "Sibling group named '" + name + "' already exists."
}

// updateGroup renames a group and, when the body has attributes, replaces them.
func (s *Server) updateGroup(w http.ResponseWriter, r *http.Request, rl *realm) int {
	g := rl.groups[r.PathValue("id")]
	if g == nil {
		return notFound(w, "Could not find group by id")
	}
	b, ok := readGroup(r)
	if !ok {
		return cannotParse(w)
	}
	if b.Name != "" && b.Name != g.name {
		sib := rl.siblings(g.parent)
		if _, dup := sib.byName[b.Name]; dup {
			return errorMessage(w, http.StatusConflict, dupMessage(g.parent, b.Name))
		}
		sib.remove(g)
		g.name = b.Name
		sib.add(g)
	}
	if b.Attributes != nil {
		g.attrs = copyAttrs(*b.Attributes)
	}
	s.event(rl, "UPDATE", "GROUP", "groups/"+g.id)
	return noContent(w)
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request, rl *realm) int {
	g := rl.groups[r.PathValue("id")]
	if g == nil {
		return notFound(w, "Could not find group by id")
	}
	rl.remove(g)
	s.event(rl, "DELETE", "GROUP", "groups/"+g.id)
	return noContent(w)
}

// sortedUsers orders users as Keycloak lists them: by username.
func sortedUsers(m map[string]*user) []*user {
	out := make([]*user, 0, len(m))
	for _, u := range m {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *user) int { return strings.Compare(a.username, b.username) })
	return out
}

// listMembers pages through a group's direct members (default max 100).
func (s *Server) listMembers(w http.ResponseWriter, r *http.Request, rl *realm) int {
	g := rl.groups[r.PathValue("id")]
	if g == nil {
		return notFound(w, "Could not find group by id")
	}
	first, max := page(r, 100)
	out := []map[string]any{}
	for _, u := range paged(sortedUsers(g.members), first, max) {
		out = append(out, userJSON(u, r.URL.Query().Get("briefRepresentation") == "true", nil))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, rl *realm) int {
	u := rl.users[r.PathValue("id")]
	if u == nil {
		return notFound(w, "User not found")
	}
	return writeJSON(w, http.StatusOK, userJSON(u, false, s.userAccess()))
}

// listUsers searches users: username is a case-insensitive substring match
// unless exact=true; search matches username or email.
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, rl *realm) int {
	q := r.URL.Query()
	first, max := page(r, 100)
	exact := q.Get("exact") == "true"
	var found []*user
	for _, u := range sortedUsers(rl.users) {
		switch {
		case u.client != "": // service accounts are not listed
		case q.Has("username") && exact && u.username != strings.ToLower(q.Get("username")):
		case q.Has("username") && !exact && !strings.Contains(u.username, strings.ToLower(q.Get("username"))):
		case q.Has("search") && !strings.Contains(u.username+" "+strings.ToLower(u.email), strings.ToLower(q.Get("search"))):
		default:
			found = append(found, u)
		}
	}
	out := []map[string]any{}
	for _, u := range paged(found, first, max) {
		out = append(out, userJSON(u, r.URL.Query().Get("briefRepresentation") == "true", map[string]bool{"manage": s.cur.may(permManage, s.curRealm) == allow}))
	}
	return writeJSON(w, http.StatusOK, out)
}

// userGroups lists a user's direct groups, brief unless
// briefRepresentation=false asks for their attributes too.
func (s *Server) userGroups(w http.ResponseWriter, r *http.Request, rl *realm) int {
	full := r.URL.Query().Get("briefRepresentation") == "false"
	u := rl.users[r.PathValue("id")]
	if u == nil {
		return notFound(w, "User not found")
	}
	gs := make([]*group, 0, len(u.groups))
	for _, g := range u.groups {
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b *group) int { return strings.Compare(a.name, b.name) })
	first, max := page(r, 100)
	out := []map[string]any{}
	for _, g := range paged(gs, first, max) {
		m := map[string]any{"id": g.id, "name": g.name, "path": g.path()}
		if g.parent != nil {
			m["parentId"] = g.parent.id
		}
		if full {
			m["attributes"] = g.attrs
		}
		out = append(out, m)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) membership(w http.ResponseWriter, r *http.Request, rl *realm) (*user, *group, int) {
	u := rl.users[r.PathValue("id")]
	if u == nil {
		return nil, nil, notFound(w, "User not found")
	}
	g := rl.groups[r.PathValue("groupId")]
	if g == nil {
		return nil, nil, notFound(w, "Group not found")
	}
	return u, g, 0
}

// joinGroup makes a user a direct member; an existing member also gets 204.
func (s *Server) joinGroup(w http.ResponseWriter, r *http.Request, rl *realm) int {
	u, g, status := s.membership(w, r, rl)
	if status != 0 {
		return status
	}
	g.members[u.id], u.groups[g.id] = u, g
	s.event(rl, "CREATE", "GROUP_MEMBERSHIP", "users/"+u.id+"/groups/"+g.id)
	return noContent(w)
}

// leaveGroup ends a direct membership; a non-member also gets 204.
func (s *Server) leaveGroup(w http.ResponseWriter, r *http.Request, rl *realm) int {
	u, g, status := s.membership(w, r, rl)
	if status != 0 {
		return status
	}
	delete(g.members, u.id)
	delete(u.groups, g.id)
	s.event(rl, "DELETE", "GROUP_MEMBERSHIP", "users/"+u.id+"/groups/"+g.id)
	return noContent(w)
}

// createRealm creates an empty realm (the body's "realm" names it).
func (s *Server) createRealm(w http.ResponseWriter, r *http.Request, _ *realm) int {
	var b struct {
		Realm string `json:"realm"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Realm == "" {
		return errorMessage(w, http.StatusBadRequest, "Realm name is missing")
	}
	if s.realms[b.Realm] != nil {
		return errorMessage(w, http.StatusConflict, "Conflict detected. See logs for details")
	}
	s.realm(b.Realm)
	w.Header().Set("Location", s.URL+"/admin/realms/"+b.Realm)
	w.WriteHeader(http.StatusCreated)
	return http.StatusCreated
}

func (s *Server) deleteRealm(w http.ResponseWriter, r *http.Request, rl *realm) int {
	delete(s.realms, rl.name)
	return noContent(w)
}

// createUser creates a user from the body's username.
func (s *Server) createUser(w http.ResponseWriter, r *http.Request, rl *realm) int {
	var b struct {
		Username string `json:"username"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Username == "" {
		return errorMessage(w, http.StatusBadRequest, "User name is missing")
	}
	name := strings.ToLower(b.Username)
	for _, u := range rl.users {
		if u.username == name {
			return errorMessage(w, http.StatusConflict, "User exists with same username")
		}
	}
	id := newID()
	rl.users[id] = &user{id: id, username: name, created: time.Now().UnixMilli(), groups: map[string]*group{}}
	w.Header().Set("Location", s.URL+"/admin/realms/"+rl.name+"/users/"+id)
	w.WriteHeader(http.StatusCreated)
	return http.StatusCreated
}

// permission is what a route asks of the caller.
type permission int

const (
	permNone       permission = iota // no token needed (the token endpoint)
	permServer                       // an administrator of the whole server
	permListGroups                   // list or search groups: query-groups shows none, view-users all
	permListUsers                    // search users: query-users finds none, view-users all
	permView                         // read a group, its members or a user: view-users or manage-users
	permManage                       // change anything: manage-users
	permRealm                        // read the realm: any role; view-realm shows the settings
	permEvents                       // read admin events: view-events
)

// verdict is the outcome of a permission check.
type verdict int

const (
	allow verdict = iota
	refuse
	// nothingVisible: the listing is allowed but shows nothing, as Keycloak
	// answers a caller with query-groups (query-users) only: 200 and [].
	nothingVisible
)

// principal is who a token was issued to: an administrator who may do
// everything, or a service account with roles of its realm's
// realm-management client.
type principal struct {
	realm string
	all   bool
	roles map[string]bool
	// id is the user id admin events record as authDetails.userId.
	id string
}

// may decides as Keycloak 26 does (as measured: see the conformance and
// contract tests) whether p may do perm in realm.
func (p *principal) may(perm permission, realm string) verdict {
	if p == nil {
		return refuse
	}
	if p.all {
		return allow
	}
	if perm == permServer || p.realm != realm {
		return refuse
	}
	manage := p.roles["manage-users"]
	view := manage || p.roles["view-users"]
	switch perm {
	case permRealm:
		return allow
	case permEvents:
		if p.roles["view-events"] || p.roles["manage-events"] {
			return allow
		}
	case permManage:
		if manage {
			return allow
		}
	case permView:
		if view {
			return allow
		}
	case permListGroups:
		if view {
			return allow
		}
		if p.roles["query-groups"] {
			return nothingVisible
		}
	case permListUsers:
		if view {
			return allow
		}
		if p.roles["query-users"] {
			return nothingVisible
		}
	}
	return refuse
}

// realmManagement is the id the fake gives every realm's realm-management client.
const realmManagement = "realm-management-client"

// createClient registers a confidential client from the body; with
// serviceAccountsEnabled it gets a service account user with no roles.
func (s *Server) createClient(w http.ResponseWriter, r *http.Request, rl *realm) int {
	var b struct {
		ClientID               string `json:"clientId"`
		Secret                 string `json:"secret"`
		PublicClient           bool   `json:"publicClient"`
		ServiceAccountsEnabled bool   `json:"serviceAccountsEnabled"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.ClientID == "" {
		return cannotParse(w)
	}
	if _, dup := rl.clients[b.ClientID]; dup {
		return errorMessage(w, http.StatusConflict, "Client "+b.ClientID+" already exists")
	}
	id := newID()
	rl.clients[b.ClientID] = b.Secret
	if b.PublicClient {
		rl.clients[b.ClientID] = ""
	}
	rl.clientIDs[id] = b.ClientID
	if b.ServiceAccountsEnabled {
		rl.saRoles[b.ClientID] = map[string]bool{}
		uid := newID()
		rl.users[uid] = &user{id: uid, username: "service-account-" + strings.ToLower(b.ClientID), created: time.Now().UnixMilli(),
			groups: map[string]*group{}, client: b.ClientID}
	}
	w.Header().Set("Location", s.URL+"/admin/realms/"+rl.name+"/clients/"+id)
	w.WriteHeader(http.StatusCreated)
	return http.StatusCreated
}

// listClients answers clientId=realm-management, the one lookup the tests make.
func (s *Server) listClients(w http.ResponseWriter, r *http.Request, rl *realm) int {
	out := []map[string]any{}
	if q := r.URL.Query().Get("clientId"); q == "realm-management" {
		out = append(out, map[string]any{"id": realmManagement, "clientId": "realm-management"})
	}
	for id, cid := range rl.clientIDs {
		if cid == r.URL.Query().Get("clientId") {
			out = append(out, map[string]any{"id": id, "clientId": cid})
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) serviceAccountUser(w http.ResponseWriter, r *http.Request, rl *realm) int {
	cid := rl.clientIDs[r.PathValue("id")]
	for _, u := range rl.users {
		if cid != "" && u.client == cid {
			return writeJSON(w, http.StatusOK, userJSON(u, false, nil))
		}
	}
	return notFound(w, "Client not found")
}

// clientRole describes a role of the realm-management client.
func (s *Server) clientRole(w http.ResponseWriter, r *http.Request, rl *realm) int {
	if r.PathValue("id") != realmManagement {
		return notFound(w, "Could not find role")
	}
	name := r.PathValue("role")
	return writeJSON(w, http.StatusOK, map[string]any{"id": "role-" + name, "name": name, "clientRole": true, "composite": false, "containerId": realmManagement})
}

// mapClientRoles gives a service account roles of the realm-management client.
func (s *Server) mapClientRoles(w http.ResponseWriter, r *http.Request, rl *realm) int {
	u := rl.users[r.PathValue("id")]
	if u == nil {
		return notFound(w, "User not found")
	}
	var roles []struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&roles); err != nil {
		return cannotParse(w)
	}
	if u.client == "" || r.PathValue("client") != realmManagement {
		return errorMessage(w, http.StatusBadRequest, "kctest maps realm-management roles to service accounts only")
	}
	for _, role := range roles {
		rl.saRoles[u.client][role.Name] = true
	}
	return noContent(w)
}

// getRealm answers the realm's representation: in full (with its event
// settings) to a caller with view-realm, else the short one Keycloak 26 gives
// any admin.
func (s *Server) getRealm(w http.ResponseWriter, r *http.Request, rl *realm) int {
	m := map[string]any{"realm": rl.name}
	if p := s.cur; p.all || p.roles["view-realm"] || p.roles["manage-realm"] {
		m["id"], m["enabled"], m["adminEventsEnabled"] = rl.name, true, rl.adminEvents
		m["attributes"] = map[string]string{}
		m["accessTokenLifespan"] = cmp.Or(rl.tokenLifespan, 300)
		if rl.eventsExpiration > 0 {
			m["attributes"] = map[string]string{"adminEventsExpiration": strconv.Itoa(rl.eventsExpiration)}
		}
	}
	return writeJSON(w, http.StatusOK, m)
}

// updateRealm takes adminEventsEnabled from the body.
func (s *Server) updateRealm(w http.ResponseWriter, r *http.Request, rl *realm) int {
	var b struct {
		AdminEventsEnabled *bool `json:"adminEventsEnabled"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		return cannotParse(w)
	}
	if b.AdminEventsEnabled != nil {
		rl.adminEvents = *b.AdminEventsEnabled
	}
	return noContent(w)
}

// adminEvents pages through the realm's admin events, newest first, filtered
// by dateFrom (milliseconds) and resourceTypes as Keycloak 26 does.
func (s *Server) adminEvents(w http.ResponseWriter, r *http.Request, rl *realm) int {
	q := r.URL.Query()
	from, _ := strconv.ParseInt(q.Get("dateFrom"), 10, 64)
	types := q["resourceTypes"]
	var out []map[string]any
	for i := len(rl.events) - 1; i >= 0; i-- {
		e := rl.events[i]
		if e.time < from || len(types) > 0 && !slices.Contains(types, e.resourceType) {
			continue
		}
		out = append(out, map[string]any{
			"time": e.time, "operationType": e.op, "resourceType": e.resourceType, "resourcePath": e.path,
			"authDetails": map[string]string{"userId": e.userID},
		})
	}
	first, max := page(r, 100)
	if out == nil {
		out = []map[string]any{}
	}
	return writeJSON(w, http.StatusOK, paged(out, first, max))
}
