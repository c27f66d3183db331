package waldurtest

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

// templates are complete wire objects (invented example data in Waldur's 8.0.5
// shape, with the keys that the schema declares non-nullable but the examples
// set to null left out) onto which seeded values are laid.
//
//go:embed testdata/templates/*.json
var templates embed.FS

// object is one API object in wire form.
type object = map[string]any

// collection keeps objects in insertion order, indexed by uuid.
type collection struct {
	items []object
	pos   map[string]int
}

func newCollection() *collection { return &collection{pos: map[string]int{}} }

// put adds o, or replaces the object with the same uuid in place.
func (c *collection) put(o object) {
	id := uuidKey(o["uuid"])
	if i, ok := c.pos[id]; ok {
		c.items[i] = o
		return
	}
	c.pos[id] = len(c.items)
	c.items = append(c.items, o)
}

func (c *collection) get(id string) (object, bool) {
	i, ok := c.pos[uuidKey(id)]
	if !ok {
		return nil, false
	}
	return c.items[i], true
}

// registered returns the object registered under parent by name, the way a
// register call finds what an earlier one made: the last object whose
// parentKey is parent and whose nameKey is name, or nil.
func (c *collection) registered(parentKey string, parent any, nameKey string, name any) object {
	var found object
	for _, o := range c.items {
		if o[parentKey] == parent && o[nameKey] == name {
			found = o
		}
	}
	return found
}

// uuidKey normalises a uuid value (either spelling) for lookups and filters.
func uuidKey(v any) string {
	s, _ := v.(string)
	return strings.ToLower(strings.ReplaceAll(s, "-", ""))
}

// store is the fake's state.
type store struct {
	fail                              func(format string, args ...any)
	base                              string
	resources, orders, oUsers, usages *collection
	teams                             map[string][]object
	serviceAccounts, courseAccounts   map[string]*collection // by offering
	offerings                         map[string]waldur.ProviderOffering
	seeded                            map[string]string // offering uuid → name, from Seed
	components                        map[string][]waldur.OfferingComponent
	plans                             map[string]waldur.Plan
	user                              waldur.User
	memberStatuses                    map[string][]waldur.MemberSyncStatus
	agent                             agentState
	seq                               int
}

func newStore(base string, fail func(format string, args ...any)) *store {
	return &store{
		fail: fail, base: base,
		resources: newCollection(), orders: newCollection(), oUsers: newCollection(), usages: newCollection(),
		teams: map[string][]object{}, serviceAccounts: map[string]*collection{}, courseAccounts: map[string]*collection{},
		offerings: map[string]waldur.ProviderOffering{}, seeded: map[string]string{}, components: map[string][]waldur.OfferingComponent{},
		plans: map[string]waldur.Plan{}, memberStatuses: map[string][]waldur.MemberSyncStatus{}, agent: newAgentState(),
	}
}

// baseTime is the creation time of seeded objects that set none: one second
// apart in seeding order.
var baseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (d *store) next() int { d.seq++; return d.seq }

func (d *store) template(name string) object {
	b, err := templates.ReadFile("testdata/templates/" + name + ".json")
	if err != nil {
		panic(fmt.Sprintf("waldurtest: template %s: %v", name, err))
	}
	return decodeObject(b)
}

func decodeObject(b []byte) object {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var o object
	if err := dec.Decode(&o); err != nil {
		panic(fmt.Sprintf("waldurtest: decode object: %v", err))
	}
	return o
}

// overlay lays the JSON form of v over o.
func overlay(o object, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("waldurtest: encode %T: %v", v, err))
	}
	for k, x := range decodeObject(b) {
		o[k] = x
	}
}

// Tags that keep generated uuids of different kinds apart.
const (
	tagResource = iota + 1
	tagProject
	tagCustomer
	tagOffering
	tagOrder
	tagUser
	tagOfferingUser
	tagUsage
	tagPlan
	tagServiceAccount
	tagCourseAccount
)

// id returns the canonical form of u, or a generated uuid when u is empty.
func (d *store) id(u waldur.UUID, tag, seq int) string {
	if u == "" {
		return fmt.Sprintf("5eed%04x000040008000%012x", tag, seq)
	}
	p, err := waldur.ParseUUID(string(u))
	if err != nil {
		d.fail("waldurtest: %v (seed malformed uuids with the *JSON methods)", err)
	}
	return p.Hex()
}

func (d *store) created(t time.Time, seq int) string {
	if t.IsZero() {
		t = baseTime.Add(time.Duration(seq) * time.Second)
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func limitsOf(l waldur.Limits) any {
	if l == nil {
		return object{}
	}
	return l
}

func (d *store) resourceWire(r waldur.Resource) object {
	seq := d.next()
	o := d.template("resource")
	overlay(o, r)
	id := d.id(r.UUID, tagResource, seq)
	project, customer := d.id(r.ProjectUUID, tagProject, seq), d.id(r.CustomerUUID, tagCustomer, seq)
	offering := d.id(r.OfferingUUID, tagOffering, seq)
	created := d.created(r.Created, seq)
	for k, v := range map[string]any{
		"uuid": id, "url": d.base + "/api/marketplace-resources/" + id + "/",
		"project_uuid": project, "project": d.base + "/api/projects/" + project + "/",
		"customer_uuid": customer, "offering_uuid": offering,
		"offering":  d.base + "/api/marketplace-public-offerings/" + offering + "/",
		"plan_uuid": orNull(string(r.PlanUUID)), "project_description": r.ProjectDescription,
		"end_date": orNull(r.EndDate), "limits": limitsOf(r.Limits),
		"created": created, "modified": created, "attributes": object{"name": r.Name},
		"state": cmpOr(r.State, waldur.ResourceOK), "slug": cmpOr(r.Slug, fmt.Sprintf("resource-%d", seq)),
	} {
		o[k] = v
	}
	return o
}

func (d *store) orderWire(offering waldur.UUID, ord waldur.Order) object {
	seq := d.next()
	o := d.template("order")
	overlay(o, ord)
	id, off := d.id(ord.UUID, tagOrder, seq), d.id(offering, tagOffering, seq)
	created := d.created(ord.Created, seq)
	for k, v := range map[string]any{
		"uuid": id, "url": d.base + "/api/marketplace-orders/" + id + "/",
		"offering_uuid": off, "offering": d.base + "/api/marketplace-public-offerings/" + off + "/",
		"marketplace_resource_uuid": d.id(ord.MarketplaceResourceUUID, tagResource, seq),
		"plan_uuid":                 orNull(string(ord.PlanUUID)), "limits": limitsOf(ord.Limits),
		"resource_name": ord.ResourceName, "project_slug": ord.ProjectSlug,
		"attributes": object{"name": ord.ResourceName},
		"created":    created, "modified": created,
		"type": cmpOr(ord.Type, waldur.OrderCreate), "state": cmpOr(ord.State, waldur.OrderPendingProvider),
		"slug": fmt.Sprintf("order-%d", seq),
	} {
		o[k] = v
	}
	return o
}

func (d *store) offeringUserWire(offering waldur.UUID, u waldur.OfferingUser) object {
	seq := d.next()
	o := d.template("offering-user")
	overlay(o, u)
	id, off := d.id(u.UUID, tagOfferingUser, seq), d.id(offering, tagOffering, seq)
	user := d.id(u.UserUUID, tagUser, seq)
	created := d.created(time.Time{}, seq)
	for k, v := range map[string]any{
		"uuid": id, "url": d.base + "/api/marketplace-offering-users/" + id + "/",
		"offering_uuid": off, "offering": d.base + "/api/marketplace-provider-offerings/" + off + "/",
		"user_uuid": user, "user": d.base + "/api/users/" + user + "/",
		"username": orNull(u.Username), "user_civil_number": orNull(u.UserCivilNumber),
		"user_username": u.UserUsername, "user_email": u.UserEmail, "user_full_name": u.UserFullName,
		"user_first_name": u.UserFirstName, "user_last_name": u.UserLastName,
		"state": cmpOr(u.State, "OK"), "created": created, "modified": created,
	} {
		o[k] = v
	}
	return o
}

// accountWire is the wire form of a project service account or course
// account: the keys that both schemas require, then the kind's own.
func (d *store) accountWire(tag int, a waldur.CourseAccount, path string) object {
	seq := d.next()
	id, project := d.id(a.UUID, tag, seq), d.id(a.ProjectUUID, tagProject, seq)
	customer := d.id("", tagCustomer, seq)
	created := d.created(time.Time{}, seq)
	o := object{
		"url": d.base + "/api/" + path + "/" + id + "/", "uuid": id, "created": created, "modified": created,
		"project_uuid": project, "project_name": fmt.Sprintf("project-%d", seq),
		"customer_uuid": customer, "customer_name": fmt.Sprintf("customer-%d", seq),
		"state": cmpOr(a.State, waldur.AccountOK), "error_message": "",
	}
	if a.Email != "" {
		o["email"] = a.Email
	}
	return o
}

// AddServiceAccount stores a project service account of the offering, as
// listed by list_project_service_accounts (state defaults to OK).
func (s *Server) AddServiceAccount(offering waldur.UUID, a waldur.ServiceAccount) waldur.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.data
	o := d.accountWire(tagServiceAccount, waldur.CourseAccount(a), "marketplace-project-service-accounts")
	for k, v := range map[string]any{
		"project": o["project_uuid"], "token": nil, "expires_at": nil,
		"customer_abbreviation": "", "description": "",
	} {
		o[k] = v
	}
	if a.Username != "" {
		o["username"] = a.Username
	}
	return d.putAccount(d.serviceAccounts, offering, o)
}

// AddCourseAccount stores a course account of the offering, as listed by
// list_course_accounts (state defaults to OK; an empty username is sent as
// null).
func (s *Server) AddCourseAccount(offering waldur.UUID, a waldur.CourseAccount) waldur.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.data
	o := d.accountWire(tagCourseAccount, a, "marketplace-course-accounts")
	for k, v := range map[string]any{
		"project": o["project_uuid"], "project_slug": "course", "project_start_date": nil, "project_end_date": nil,
		"user_uuid": nil, "username": orNull(a.Username), "error_traceback": "",
	} {
		o[k] = v
	}
	return d.putAccount(d.courseAccounts, offering, o)
}

func (d *store) putAccount(by map[string]*collection, offering waldur.UUID, o object) waldur.UUID {
	key := d.id(offering, tagOffering, 0)
	if by[key] == nil {
		by[key] = newCollection()
	}
	by[key].put(o)
	return waldur.UUID(o["uuid"].(string))
}

func (d *store) teamMemberWire(m waldur.TeamMember) object {
	id := d.id(m.UUID, tagUser, d.next())
	o := object{
		"url": d.base + "/api/users/" + id + "/", "uuid": id, "username": m.Username,
		"full_name": m.FullName, "role": m.Role, "expiration_time": orNull(m.ExpirationTime),
		"offering_user_username": orNull(m.OfferingUserUsername), "offering_user_state": orNull(m.OfferingUserState),
	}
	if m.Email != "" {
		o["email"] = m.Email
	}
	return o
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// decodeObjects accepts one JSON object or an array of them.
func decodeObjects(raw []byte) ([]object, error) {
	raw = bytes.TrimSpace(raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(raw) > 0 && raw[0] == '[' {
		var list []object
		if err := dec.Decode(&list); err != nil {
			return nil, err
		}
		return list, nil
	}
	var o object
	if err := dec.Decode(&o); err != nil {
		return nil, err
	}
	return []object{o}, nil
}

// Seeding. The typed methods build complete, schema-valid wire objects from the
// given values (empty UUIDs and creation times are generated) and return the
// object's uuid; the *JSON methods store payloads exactly as given, to imitate
// other server versions.

// Seed stores everything a recorded state holds: the resources, orders,
// offering users and teams of every offering (a snapshot served as the API).
func (s *Server) Seed(st *waldur.State) {
	for _, o := range st.Offerings {
		s.mu.Lock()
		s.data.seeded[uuidKey(string(o.OfferingUUID))] = o.Name
		s.mu.Unlock()
		for _, r := range o.Resources {
			s.AddResource(r)
		}
		for _, ord := range o.Orders {
			s.AddOrder(o.OfferingUUID, ord)
		}
		for _, u := range o.OfferingUsers {
			s.AddOfferingUser(o.OfferingUUID, u)
		}
		for project, team := range o.Teams {
			s.SetTeam(project, team)
		}
	}
}

// AddResource stores a provider resource (state defaults to OK).
func (s *Server) AddResource(r waldur.Resource) waldur.UUID {
	defer s.flushEvents()
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.data.resourceWire(r)
	s.data.resources.put(o)
	s.publishEvent(uuidKey(o["offering_uuid"]), "resource", object{"resource_uuid": o["uuid"], "offering_uuid": o["offering_uuid"]})
	return waldur.UUID(o["uuid"].(string))
}

// AddOrder stores an order of the offering (type defaults to Create, state to
// pending-provider).
func (s *Server) AddOrder(offering waldur.UUID, o waldur.Order) waldur.UUID {
	defer s.flushEvents()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.data.orderWire(offering, o)
	s.data.orders.put(w)
	s.orderEvent(w)
	return waldur.UUID(w["uuid"].(string))
}

// AddOfferingUser stores an offering user of the offering (state defaults to OK).
func (s *Server) AddOfferingUser(offering waldur.UUID, u waldur.OfferingUser) waldur.UUID {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.data.offeringUserWire(offering, u)
	s.data.oUsers.put(w)
	return waldur.UUID(w["uuid"].(string))
}

// SetTeam sets the users of a project, as returned by the team endpoint of every
// resource of the project.
func (s *Server) SetTeam(project waldur.UUID, members []waldur.TeamMember) {
	defer s.flushEvents()
	s.mu.Lock()
	defer s.mu.Unlock()
	list := make([]object, 0, len(members))
	for _, m := range members {
		list = append(list, s.data.teamMemberWire(m))
	}
	key := uuidKey(string(project))
	s.data.teams[key] = list
	// A role changed in the project: every offering with a resource there hears of it.
	if s.ev.broker == nil || len(s.ev.queues) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, r := range s.data.resources.items {
		if off := uuidKey(r["offering_uuid"]); uuidKey(r["project_uuid"]) == key && !seen[off] {
			seen[off] = true
			s.publishEvent(off, "user_role", object{"project_uuid": key, "project_name": r["project_name"], "offering_uuid": off})
		}
	}
}

// AddResourceJSON stores resources given as a JSON object or array, verbatim.
func (s *Server) AddResourceJSON(raw []byte) {
	s.putJSON(raw, func(d *store) *collection { return d.resources })
}

// AddOrderJSON stores orders given as a JSON object or array, verbatim.
func (s *Server) AddOrderJSON(raw []byte) {
	s.putJSON(raw, func(d *store) *collection { return d.orders })
}

// AddOfferingUserJSON stores offering users given as a JSON object or array, verbatim.
func (s *Server) AddOfferingUserJSON(raw []byte) {
	s.putJSON(raw, func(d *store) *collection { return d.oUsers })
}

// SetTeamJSON sets a project's team from a JSON array, verbatim.
func (s *Server) SetTeamJSON(project waldur.UUID, raw []byte) {
	list, err := decodeObjects(raw)
	if err != nil {
		s.t.Fatalf("waldurtest: team JSON: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data.teams[uuidKey(string(project))] = list
}

func (s *Server) putJSON(raw []byte, coll func(*store) *collection) {
	list, err := decodeObjects(raw)
	if err != nil {
		s.t.Fatalf("waldurtest: seed JSON: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range list {
		coll(s.data).put(o)
	}
}

// Inspection.

// Resource returns the stored resource, decoded.
func (s *Server) Resource(id waldur.UUID) (waldur.Resource, bool) {
	var r waldur.Resource
	return r, s.decodeStored(s.data.resources, id, &r)
}

// Order returns the stored order, decoded.
func (s *Server) Order(id waldur.UUID) (waldur.Order, bool) {
	var o waldur.Order
	return o, s.decodeStored(s.data.orders, id, &o)
}

// RawOrder returns a copy of the stored order in wire form (nil if unknown).
func (s *Server) RawOrder(id waldur.UUID) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.data.orders.get(string(id))
	if !ok {
		return nil
	}
	b, _ := json.Marshal(o)
	return decodeObject(b)
}

func (s *Server) decodeStored(c *collection, id waldur.UUID, v any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := c.get(string(id))
	if !ok {
		return false
	}
	b, err := json.Marshal(o)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		s.t.Errorf("waldurtest: decode stored %s: %v", id, err)
		return false
	}
	return true
}

// offering is the provider offering id, if it exists. As in Waldur, an
// offering exists before anything of it does: one added with AddOffering,
// one Seed named (empty or not), or one a resource, order, offering user or
// account was added for (such data cannot exist without its offering). Any
// other uuid does not exist: reading it answers 404, while a listing
// filtered by it answers an empty page.
func (d *store) offering(id string) (waldur.ProviderOffering, bool) {
	key := uuidKey(id)
	if o, ok := d.offerings[key]; ok {
		return o, true
	}
	name, ok := d.seeded[key]
	if !ok && !d.referenced(key) {
		return waldur.ProviderOffering{}, false
	}
	return waldur.ProviderOffering{UUID: waldur.UUID(key), Name: cmpOr(name, "Offering "+key[:8]), Type: "Marketplace.Basic", State: "Active"}, true
}

// referenced reports whether any stored object belongs to the offering key.
func (d *store) referenced(key string) bool {
	if d.serviceAccounts[key] != nil || d.courseAccounts[key] != nil {
		return true
	}
	for _, c := range []*collection{d.resources, d.orders, d.oUsers} {
		for _, o := range c.items {
			if uuidKey(o["offering_uuid"]) == key {
				return true
			}
		}
	}
	return false
}
