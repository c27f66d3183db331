// Package kctest is an in-process stand-in for the part of the Keycloak admin
// REST API that waldur-gitops uses, for tests and benchmarks: fast, and able to
// inject faults a real server cannot be made to produce on cue. The keycloak
// package's conformance tests send the same requests to it and to a real
// Keycloak 26.7.3 (internal/testenv/keycloaktest) and fail on any difference in
// status, Location or body, so it answers as that server does: JSON bodies, new
// ids in Location, 409 with Keycloak's texts on a duplicate name (names are
// case-sensitive), first/max paging with Keycloak's defaults per endpoint
// (members 100; children 10 and in full; top-level groups brief, with
// subGroupCount and no subgroups), exact search case-sensitive and non-exact
// case-insensitive, 204 for repeated membership calls, 404 bodies, 400
// missingNormalization for a path with an empty or dot segment, 401 for a
// missing or expired token, and the realm-management roles of realm-scoped
// service accounts (AddServiceClient): 403, or an empty listing for
// query-groups alone. Faults (5xx answers, dropped connections, lost answers)
// and latency (of every answer, or of writes alone) can be injected.
package kctest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// Default credentials of a new server: an admin of the master realm who logs in
// with the admin-cli client, as a fresh Keycloak has.
const (
	AdminRealm    = "master"
	AdminUser     = "admin"
	AdminPassword = "admin"
	AdminClient   = "admin-cli"
	// Realm is the realm a new server has besides master, the default
	// keycloak_realm.
	Realm = "waldur"
)

// Fault makes matching requests fail. Method "" and Path "" match any.
type Fault struct {
	// Method is the HTTP method to match, "" for any.
	Method string
	// Path is a substring the request path must contain, "" for any.
	Path string
	// Status is the answer; 0 closes the connection without one.
	Status int
	// Times is how many matching requests fail; below 1 means once.
	Times int
	// After lets the request take effect before it fails, as when the answer
	// is lost on the way back.
	After bool
}

// Server is the fake Keycloak. Its zero value is not usable: call NewServer.
type Server struct {
	// URL is the base URL to give gocloak.NewClient (no /auth prefix).
	URL string
	// TokenLifetime is the lifetime of the access tokens issued from now on
	// (default 60 seconds, Keycloak's default for the master realm).
	TokenLifetime time.Duration

	srv *httptest.Server

	mu      sync.Mutex
	realms  map[string]*realm
	access  map[string]time.Time  // access token → expiry
	who     map[string]*principal // access token → whom it was issued to
	refresh map[string]*principal // refresh token → whom
	// cur and curRealm are the caller and realm of the request being served
	// (under mu), for the access maps of the answers.
	cur      *principal
	curRealm string
	faults   []*Fault
	latency  time.Duration
	// writeLatency delays the admin requests that change something.
	writeLatency time.Duration
	calls        map[string]int
	writes       int
	requests     int
	// expireIn counts requests down to the moment every access token expires.
	expireIn int
	// capacity, when set, makes the server a Keycloak of limited capacity
	// (SetCapacity).
	capacity *capacity
}

// capacity models a Keycloak that serves workers admin requests at a time,
// each taking service; the others queue (their answers slow down), and
// beyond queue waiting ones it answers 503 at once.
type capacity struct {
	workers          chan struct{}
	service          time.Duration
	queue            int
	waiting, peak    int
	overloaded, seen int
}

// SetCapacity makes the server serve at most workers admin requests at a
// time, each taking service, queueing up to queue more and answering 503
// beyond that: a Keycloak that slows down, then refuses, under load.
// workers 0 removes the limit.
func (s *Server) SetCapacity(workers int, service time.Duration, queue int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if workers == 0 {
		s.capacity = nil
		return
	}
	s.capacity = &capacity{workers: make(chan struct{}, workers), service: service, queue: queue}
}

// CapacityStats are what SetCapacity's model saw: the most requests in
// the server at once (served and queued), and the 503s it answered.
func (s *Server) CapacityStats() (peak, overloaded, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capacity == nil {
		return 0, 0, 0
	}
	return s.capacity.peak, s.capacity.overloaded, s.capacity.seen
}

// admit waits for a worker of the capacity model; false: answer 503.
func (s *Server) admit(r *http.Request) (release func(), ok bool) {
	s.mu.Lock()
	c := s.capacity
	if c == nil {
		s.mu.Unlock()
		return func() {}, true
	}
	c.seen++
	if c.waiting >= cap(c.workers)+c.queue {
		c.overloaded++
		s.mu.Unlock()
		return nil, false
	}
	c.waiting++
	c.peak = max(c.peak, c.waiting)
	s.mu.Unlock()
	done := func() {
		s.mu.Lock()
		c.waiting--
		s.mu.Unlock()
	}
	select {
	case c.workers <- struct{}{}:
	case <-r.Context().Done():
		done()
		return nil, false
	}
	time.Sleep(c.service)
	return func() { <-c.workers; done() }, true
}

// realm holds one realm's users, groups, admins and clients.
type realm struct {
	name    string
	admins  map[string]string // username → password
	clients map[string]string // client id → secret ("" for a public client)
	// saRoles are the realm-management roles of the service account of a
	// client made through the API or AddServiceClient; a client without an
	// entry (AddClient) may do everything.
	saRoles   map[string]map[string]bool
	clientIDs map[string]string // internal id → client id, of clients made through the API
	groups    map[string]*group // by id
	top       children
	users     map[string]*user // by id
	// adminEvents records admin events, kept in events, oldest first;
	// eventsExpiration is their retention in seconds (0: forever).
	adminEvents      bool
	eventsExpiration int
	events           []adminEvent
	// tokenLifespan is accessTokenLifespan in seconds (0: Keycloak's
	// default, 300).
	tokenLifespan int
}

// adminEvent is one recorded admin event.
type adminEvent struct {
	time                           int64
	op, resourceType, path, userID string
}

// event records an admin event of the caller of the request being served
// (s.mu held), when the realm records them.
func (s *Server) event(rl *realm, op, resourceType, path string) {
	who := "console"
	if s.cur != nil {
		who = s.cur.id
	}
	s.record(rl, op, resourceType, path, who)
}

func (s *Server) record(rl *realm, op, resourceType, path, who string) {
	if !rl.adminEvents {
		return
	}
	t := time.Now().UnixMilli()
	if n := len(rl.events); n > 0 && rl.events[n-1].time > t {
		t = rl.events[n-1].time
	}
	rl.events = append(rl.events, adminEvent{time: t, op: op, resourceType: resourceType, path: path, userID: who})
}

// EnableAdminEvents makes realm record admin events, as the realm setting
// adminEventsEnabled does, kept for expiration seconds (0: forever).
func (s *Server) EnableAdminEvents(realm string, expiration int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.realm(realm)
	r.adminEvents, r.eventsExpiration = true, expiration
}

// SetTokenLifespan sets the realm's accessTokenLifespan, in seconds.
func (s *Server) SetTokenLifespan(realm string, seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.realm(realm).tokenLifespan = seconds
}

type group struct {
	id, name string
	parent   *group
	attrs    map[string][]string
	kids     children
	members  map[string]*user // by user id
}

type user struct {
	id, username, email string
	created             int64             // milliseconds since the epoch
	groups              map[string]*group // by group id
	client              string            // the client whose service account this is
}

// children is a set of sibling groups kept sorted by name on demand.
type children struct {
	byName map[string]*group
	sorted []*group
}

func (c *children) add(g *group) {
	if c.byName == nil {
		c.byName = map[string]*group{}
	}
	c.byName[g.name] = g
	c.sorted = nil
}

func (c *children) remove(g *group) {
	delete(c.byName, g.name)
	c.sorted = nil
}

// list returns the siblings in Keycloak's order: by name.
func (c *children) list() []*group {
	if c.sorted == nil {
		c.sorted = make([]*group, 0, len(c.byName))
		for _, g := range c.byName {
			c.sorted = append(c.sorted, g)
		}
		slices.SortFunc(c.sorted, func(a, b *group) int { return strings.Compare(a.name, b.name) })
	}
	return c.sorted
}

func (g *group) path() string {
	if g.parent == nil {
		return "/" + g.name
	}
	return g.parent.path() + "/" + g.name
}

// NewServer starts a server with the master realm (admin/admin through
// admin-cli) and an empty realm "waldur". Close it when done.
func NewServer() *Server {
	s := &Server{
		TokenLifetime: 60 * time.Second,
		realms:        map[string]*realm{},
		access:        map[string]time.Time{},
		who:           map[string]*principal{},
		refresh:       map[string]*principal{},
		calls:         map[string]int{},
	}
	s.AddRealm(AdminRealm)
	s.AddRealm(Realm)
	s.AddAdmin(AdminRealm, AdminUser, AdminPassword)
	s.srv = httptest.NewServer(s.routes())
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// AddRealm creates a realm (with the public admin-cli client) if it does not exist.
func (s *Server) AddRealm(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.realms[name] == nil {
		s.realms[name] = &realm{name: name, admins: map[string]string{}, clients: map[string]string{AdminClient: ""},
			groups: map[string]*group{}, users: map[string]*user{}, saRoles: map[string]map[string]bool{}, clientIDs: map[string]string{}}
	}
}

// AddAdmin lets username log in to realm with password and use the admin API.
func (s *Server) AddAdmin(realm, username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.realm(realm).admins[username] = password
}

// AddClient registers a confidential client of realm whose service account may
// use the admin API.
func (s *Server) AddClient(realm, clientID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.realm(realm).clients[clientID] = secret
}

// AddServiceClient registers a confidential client of realm whose service
// account has only the given roles of the realm's realm-management client
// (manage-users, view-users, query-groups, query-users), and only in realm,
// as a realm-scoped service account has in Keycloak.
func (s *Server) AddServiceClient(realm, clientID, secret string, roles ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.realm(realm)
	r.clients[clientID] = secret
	r.saRoles[clientID] = map[string]bool{}
	for _, role := range roles {
		r.saRoles[clientID][role] = true
	}
}

// AddUser creates a user with a new id and returns the id.
func (s *Server) AddUser(realm, username string) string {
	return s.AddUserWithID(realm, newID(), username)
}

// AddUserWithID creates a user with the given id (Keycloak keeps the ids of
// imported or federated users, which need not be UUIDs).
func (s *Server) AddUserWithID(realm, id, username string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.realm(realm)
	r.users[id] = &user{id: id, username: strings.ToLower(username), created: time.Now().UnixMilli(), groups: map[string]*group{}}
	return id
}

// AddGroup creates a group under parentPath ("" for top level) without going
// through the API, for example one waldur-gitops did not make.
func (s *Server) AddGroup(realm, parentPath, name string, attrs map[string][]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.realm(realm)
	var parent *group
	if parentPath != "" {
		if parent = r.byPath(parentPath); parent == nil {
			return "", fmt.Errorf("no group %s", parentPath)
		}
	}
	g, err := r.create(parent, name, attrs)
	if err != nil {
		return "", err
	}
	return g.id, nil
}

// AddMember makes the user named username a direct member of the group at path.
func (s *Server) AddMember(realm, path, username string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, g, err := s.groupAt(realm, path)
	if err != nil {
		return err
	}
	for _, u := range r.users {
		if u.username == strings.ToLower(username) {
			g.members[u.id], u.groups[g.id] = u, g
			s.record(r, "CREATE", "GROUP_MEMBERSHIP", "users/"+u.id+"/groups/"+g.id, "console")
			return nil
		}
	}
	return fmt.Errorf("no user %s", username)
}

// RemoveMember ends the direct membership of the user named username in the
// group at path, as someone working in the admin console would.
func (s *Server) RemoveMember(realm, path, username string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, g, err := s.groupAt(realm, path)
	if err != nil {
		return err
	}
	for id, u := range g.members {
		if u.username == strings.ToLower(username) {
			delete(g.members, id)
			delete(u.groups, g.id)
			s.record(r, "DELETE", "GROUP_MEMBERSHIP", "users/"+u.id+"/groups/"+g.id, "console")
			return nil
		}
	}
	return fmt.Errorf("user %s is not a member of %s", username, path)
}

// SetAttributes replaces the attributes of the group at path.
func (s *Server) SetAttributes(realm, path string, attrs map[string][]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, g, err := s.groupAt(realm, path)
	if err != nil {
		return err
	}
	g.attrs = copyAttrs(attrs)
	s.record(r, "UPDATE", "GROUP", "groups/"+g.id, "console")
	return nil
}

// DeleteGroup deletes the group at path with its subgroups.
func (s *Server) DeleteGroup(realm, path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, g, err := s.groupAt(realm, path)
	if err != nil {
		return err
	}
	r.remove(g)
	s.record(r, "DELETE", "GROUP", "groups/"+g.id, "console")
	return nil
}

// GroupInfo is what Group reports about a group.
type GroupInfo struct {
	ID         string
	Attributes map[string][]string
	// Members are the usernames of the direct members, sorted.
	Members []string
	// Children are the names of the subgroups, sorted.
	Children []string
}

// Group describes the group at path.
func (s *Server) Group(realm, path string) (GroupInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.realm(realm).byPath(path)
	if g == nil {
		return GroupInfo{}, false
	}
	info := GroupInfo{ID: g.id, Attributes: copyAttrs(g.attrs), Members: []string{}, Children: []string{}}
	for _, u := range g.members {
		info.Members = append(info.Members, u.username)
	}
	slices.Sort(info.Members)
	for _, c := range g.kids.list() {
		info.Children = append(info.Children, c.name)
	}
	return info, true
}

// Paths lists the paths of every group of realm, sorted.
func (s *Server) Paths(realm string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, g := range s.realm(realm).groups {
		out = append(out, g.path())
	}
	slices.Sort(out)
	return out
}

// Inject adds a fault. Faults are matched in the order they were added.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Times < 1 {
		f.Times = 1
	}
	s.faults = append(s.faults, &f)
}

// ClearFaults removes every fault not used up yet.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// SetLatency delays every answer by d.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// SetWriteLatency delays every admin request that changes something (POST,
// PUT, DELETE; not the token endpoint) by d before it takes effect, on top of
// SetLatency: a Keycloak whose writes are slow or rate-limited while reads
// stay quick. A request whose client gives up while it waits is dropped and
// changes nothing, as one still queued would.
func (s *Server) SetWriteLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeLatency = d
}

// ExpireTokens makes every access token issued so far invalid, as if its
// lifetime had passed; refresh tokens stay valid.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// ExpireTokensAfter makes every access token expire once n more requests have
// come in, as if their lifetime ran out in the middle of a run.
func (s *Server) ExpireTokensAfter(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireIn = n
}

// Calls returns how many requests each route got, keyed like "GET /groups" or
// "PUT /users/{id}/groups/{groupId}" (admin routes without their realm prefix),
// faulted requests included.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// Writes returns how many admin requests that change something (POST, PUT,
// DELETE) were answered with success.
func (s *Server) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Requests returns the number of requests received, token requests included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// ResetCounts zeroes Calls, Writes and Requests.
func (s *Server) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
	s.writes, s.requests = 0, 0
}

// realm returns the named realm, creating it; the caller holds s.mu.
func (s *Server) realm(name string) *realm {
	r := s.realms[name]
	if r == nil {
		r = &realm{name: name, admins: map[string]string{}, clients: map[string]string{AdminClient: ""},
			groups: map[string]*group{}, users: map[string]*user{}, saRoles: map[string]map[string]bool{}, clientIDs: map[string]string{}}
		s.realms[name] = r
	}
	return r
}

// groupAt returns the realm named name (made if new, as realm does) and its
// group at path, or an error naming the path; the caller holds s.mu.
func (s *Server) groupAt(name, path string) (*realm, *group, error) {
	r := s.realm(name)
	g := r.byPath(path)
	if g == nil {
		return nil, nil, fmt.Errorf("no group %s", path)
	}
	return r, g, nil
}

// byPath finds a group by its /a/b path.
func (r *realm) byPath(p string) *group {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	sib := &r.top
	var g *group
	for _, name := range parts {
		if g = sib.byName[name]; g == nil {
			return nil
		}
		sib = &g.kids
	}
	return g
}

// siblings returns the set a child of parent belongs to.
func (r *realm) siblings(parent *group) *children {
	if parent == nil {
		return &r.top
	}
	return &parent.kids
}

// create adds a group, refusing a duplicate sibling name as Keycloak does.
func (r *realm) create(parent *group, name string, attrs map[string][]string) (*group, error) {
	if _, dup := r.siblings(parent).byName[name]; dup {
		if parent == nil {
			//lint:ignore ST1005 the exact text Keycloak answers
			return nil, fmt.Errorf("Top level group named '%s' already exists.", name)
		}
		//lint:ignore ST1005 the exact text Keycloak answers
		return nil, fmt.Errorf("Sibling group named '%s' already exists.", name)
	}
	g := &group{id: newID(), name: name, parent: parent, attrs: copyAttrs(attrs), members: map[string]*user{}}
	r.groups[g.id] = g
	r.siblings(parent).add(g)
	return g, nil
}

// remove deletes a group with its subtree and memberships.
func (r *realm) remove(g *group) {
	for _, c := range slices.Clone(g.kids.list()) {
		r.remove(c)
	}
	for _, u := range g.members {
		delete(u.groups, g.id)
	}
	r.siblings(g.parent).remove(g)
	delete(r.groups, g.id)
}

func copyAttrs(a map[string][]string) map[string][]string {
	if a == nil {
		return map[string][]string{}
	}
	out := make(map[string][]string, len(a))
	for k, v := range a {
		out[k] = slices.Clone(v)
	}
	return out
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// takeFault returns the first fault matching the request and uses it up.
func (s *Server) takeFault(r *http.Request) (*Fault, bool) {
	for i, f := range s.faults {
		if (f.Method == "" || f.Method == r.Method) && strings.Contains(r.URL.Path, f.Path) {
			f.Times--
			if f.Times == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
			return f, true
		}
	}
	return nil, false
}
