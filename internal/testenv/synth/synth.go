// Package synth generates synthetic, deterministic Waldur state and a matching
// config, sized for benchmarks and load tests of the render pipeline.
//
// The same Options always give the same state: every name, UUID, limit and
// timestamp comes from a random source seeded by Options.Seed and the offering's
// backend type, and no wall-clock time or map iteration order is consulted.
//
// The shape follows what a busy Waldur site looks like: customers own several
// projects, projects hold several resources of the offering, every project has a
// team of 2–8 users drawn mostly from its customer's staff (plus a few support
// users who sit in many teams), with project roles in both spellings Waldur uses
// (PROJECT.MANAGER and manager). Around 2% of resources are paused, 2%
// downscaled, a few percent carry an executing Update order, some are still
// Creating with an executing Create order, and a few are Terminating or waiting
// for approval (those two are extra: they are in the state but not rendered).
package synth

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// Options select what to generate.
type Options struct {
	// Tenants is the number of resources the default config renders, summed over
	// all offerings and split as evenly as possible between them (the first
	// offerings take the remainder). Terminating resources and Creating
	// resources whose order is not yet approved come on top of it.
	Tenants int
	// Seed makes the output reproducible; equal options give equal state.
	Seed uint64
	// BackendTypes lists the offerings to generate, one per backend type, in this
	// order; empty means only k8s-ut-namespace. Use config.BackendTypes for all.
	BackendTypes []string
	// DisableKeycloak turns keycloak_enabled off; by default it is on, which adds
	// Keycloak groups to every tenant.
	DisableKeycloak bool
	// DisableUserSync turns the k8s-ut-namespace sync_users_to_cr off; by default
	// it is on, which lists every team member in the ManagedNamespace.
	DisableUserSync bool
}

// Base is the time the generated history starts; resources are created after it.
var Base = time.Date(2024, time.January, 8, 9, 0, 0, 0, time.UTC)

// Offering describes one generated offering; Generate and Config agree on it.
type Offering struct {
	// Name is the offering's config name.
	Name string
	// BackendType is its backend type.
	BackendType string
	// UUID is its Waldur offering UUID.
	UUID waldur.UUID
	// Tenants is how many of its resources render.
	Tenants int
}

// Offerings returns the offerings opts generates.
func Offerings(opts Options) []Offering {
	types := opts.BackendTypes
	if len(types) == 0 {
		types = []string{config.BackendK8sUTNamespace}
	}
	out := make([]Offering, len(types))
	for i, t := range types {
		n := opts.Tenants / len(types)
		if i < opts.Tenants%len(types) {
			n++
		}
		r := newRand(opts.Seed, "offering/"+t)
		out[i] = Offering{Name: "Synthetic " + t, BackendType: t, UUID: uuid(r), Tenants: n}
	}
	return out
}

// Generate builds the Waldur state of every offering of opts.
func Generate(opts Options) *waldur.State {
	st := &waldur.State{}
	for _, o := range Offerings(opts) {
		st.Offerings = append(st.Offerings, generateOffering(opts, o))
	}
	return st
}

// Snapshot wraps Generate's state as a snapshot, ready for waldur.WriteSnapshot.
func Snapshot(opts Options) *waldur.Snapshot {
	return &waldur.Snapshot{
		Format:      waldur.SnapshotFormat,
		ToolVersion: "synth",
		TakenAt:     Base.AddDate(2, 1, 0),
		State:       *Generate(opts),
	}
}

func newRand(seed uint64, stream string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func uuid(r *rand.Rand) waldur.UUID {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return waldur.UUID(hex.EncodeToString(b[:]))
}

// chance reports true with probability p.
func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// between returns an int in [lo, hi].
func between(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo+1) }

func pick[T any](r *rand.Rand, l []T) T { return l[r.IntN(len(l))] }

var (
	firstNames = []string{"Ana", "Kai", "Li", "Mira", "Jonas", "Eva", "Tarmo", "Sofia", "Omar", "Priya", "Liis", "Mateo", "Hanna", "Yuki", "Noah", "Aino", "Ravi", "Elena", "Karl", "Zanele", "Marta", "Ivan", "Chen", "Fatima", "Oskar", "Leila"}
	lastNames  = []string{"Reyes", "Tamm", "Wei", "Lindqvist", "Kask", "Saar", "Mets", "Novak", "Haddad", "Sharma", "Rebane", "Garcia", "Virtanen", "Sato", "Muller", "Korhonen", "Patel", "Petrova", "Ilves", "Dlamini", "Kowalska", "Popov", "Zhang", "Ahmed", "Berg", "Karimi"}
	orgWords   = []string{"University", "Institute", "Agency", "Centre", "Lab", "Foundation", "College", "Observatory", "Hospital", "Consortium"}
	orgTopics  = []string{"Tartu", "Baltic", "Nordic", "Genome", "Climate", "Marine", "Space", "Materials", "Quantum", "Health", "Energy", "Forest", "Language", "Robotics"}
	projTopics = []string{"genomics", "climate", "teaching", "imaging", "proteins", "nlp", "vision", "hydrology", "seismic", "astro", "cfd", "chemistry", "finance", "epidemiology", "agritech", "materials", "robotics", "econ"}
	projKinds  = []string{"lab", "pipeline", "course", "study", "platform", "sandbox", "portal", "analysis", "workshop", "archive"}
	resKinds   = []string{"compute", "jupyter", "training", "inference", "batch", "dev", "staging", "prod", "etl", "workers", "dashboards", "db"}
	domains    = []string{"example.edu", "example.org", "uni.example.ee", "research.example.eu"}
	// roles are the project roles with their weight out of 20, each written in
	// both of Waldur's spellings.
	roles = []struct {
		short, long string
		weight      int
	}{{"manager", "PROJECT.MANAGER", 4}, {"admin", "PROJECT.ADMIN", 3}, {"member", "PROJECT.MEMBER", 13}}
)

// user is one Waldur user of the generated site.
type user struct {
	uuid       waldur.UUID
	username   string // the offering username
	idpName    string // the Waldur username
	first      string
	last       string
	email      string
	civil      string
	noAccount  bool   // has no offering user yet
	accountSt  string // offering-user state
	offeringID waldur.UUID
}

func newUser(r *rand.Rand, serial int) *user {
	f, l := pick(r, firstNames), pick(r, lastNames)
	u := &user{
		uuid:       uuid(r),
		first:      f,
		last:       l,
		username:   strings.ToLower(f[:1]+l) + strconv.Itoa(serial),
		civil:      fmt.Sprintf("EE%010d", r.Int64N(1e10)),
		accountSt:  "OK",
		offeringID: uuid(r),
	}
	d := pick(r, domains)
	u.idpName = strings.ToLower(f) + strconv.Itoa(serial) + "@idp." + d
	u.email = strings.ToLower(f+"."+l) + strconv.Itoa(serial) + "@" + d
	switch {
	case chance(r, 0.04):
		u.noAccount = true // team member without an offering account: left out
	case chance(r, 0.01):
		u.accountSt = "Requested deletion" // leaving: left out
	case chance(r, 0.02):
		u.accountSt = "Creating"
	}
	return u
}

func role(r *rand.Rand) string {
	n := r.IntN(20)
	for _, ro := range roles {
		if n < ro.weight {
			if chance(r, 0.5) {
				return ro.long
			}
			return ro.short
		}
		n -= ro.weight
	}
	panic("unreachable")
}

// generator builds one offering's state.
type generator struct {
	r       *rand.Rand
	o       Offering
	st      waldur.OfferingState
	users   int // users created so far (serial numbers)
	support []*user
	seen    map[waldur.UUID]bool // users already listed as offering users
	clock   time.Time
	step    int // mean minutes between two resources
	serial  int // resource serial, for unique slugs
}

func generateOffering(opts Options, o Offering) waldur.OfferingState {
	g := &generator{
		r:     newRand(opts.Seed, "state/"+o.BackendType),
		o:     o,
		seen:  map[waldur.UUID]bool{},
		clock: Base,
		step:  max(1, 2*365*24*60/(o.Tenants+1)),
	}
	g.st = waldur.OfferingState{
		Name:          o.Name,
		OfferingUUID:  o.UUID,
		Resources:     make([]waldur.Resource, 0, o.Tenants+o.Tenants/25),
		Orders:        []waldur.Order{},
		Teams:         map[waldur.UUID][]waldur.TeamMember{},
		OfferingUsers: []waldur.OfferingUser{},
	}
	// A few support users sit in many teams.
	for i := 0; i < 12; i++ {
		g.support = append(g.support, g.newUser())
	}
	rendered := 0
	for c := 0; rendered < o.Tenants; c++ {
		rendered += g.customer(c, o.Tenants-rendered)
	}
	return g.st
}

func (g *generator) newUser() *user {
	g.users++
	return newUser(g.r, g.users)
}

// tick advances the clock by a random step that spreads the offering's
// resources over about two years after Base.
func (g *generator) tick() time.Time {
	g.clock = g.clock.Add(time.Duration(between(g.r, 1, 2*g.step-1)) * time.Minute)
	return g.clock
}

// customer adds one customer with its projects, rendering at most budget
// resources, and returns how many it renders.
func (g *generator) customer(c, budget int) int {
	r := g.r
	topic := pick(r, orgTopics)
	cust := scope{
		uuid: uuid(r),
		name: fmt.Sprintf("%s %s %d", topic, pick(r, orgWords), c+1),
		slug: fmt.Sprintf("%s-%s", strings.ToLower(topic), strconv.FormatInt(int64(c+1), 36)),
	}
	// The customer's staff: enough people to fill its teams with some overlap.
	projects := between(r, 1, 6)
	staff := make([]*user, between(r, 3, 3+3*projects))
	for i := range staff {
		staff[i] = g.newUser()
	}
	rendered := 0
	for p := 0; p < projects && rendered < budget; p++ {
		t := pick(r, projTopics)
		proj := scope{
			uuid: uuid(r),
			name: fmt.Sprintf("%s %s %d", strings.ToUpper(t[:1])+t[1:], pick(r, projKinds), p+1),
			slug: fmt.Sprintf("%s-%s-%d", cust.slug, t, p+1),
			desc: fmt.Sprintf("Synthetic %s project %d of %s", t, p+1, cust.name),
		}
		g.team(proj.uuid, staff)
		for n := between(r, 1, 4); n > 0 && rendered < budget; n-- {
			g.resource(cust, proj)
			rendered++
		}
	}
	return rendered
}

type scope struct {
	uuid             waldur.UUID
	name, slug, desc string
}

// team gives a project a team of 2–8 members and registers their offering users.
func (g *generator) team(project waldur.UUID, staff []*user) {
	r := g.r
	size := between(r, 2, 8)
	chosen := map[*user]bool{}
	var team []waldur.TeamMember
	add := func(u *user) {
		if chosen[u] {
			return
		}
		chosen[u] = true
		m := waldur.TeamMember{
			UUID:     u.uuid,
			Username: u.idpName,
			FullName: u.first + " " + u.last,
			Email:    u.email,
			Role:     role(r),
		}
		if chance(r, 0.05) {
			m.ExpirationTime = Base.AddDate(3, 0, r.IntN(365)).Format(time.RFC3339)
		}
		if !u.noAccount {
			m.OfferingUserUsername = u.username
			m.OfferingUserState = u.accountSt
			g.offeringUser(u)
		}
		team = append(team, m)
	}
	if chance(r, 0.15) {
		add(pick(r, g.support))
	}
	for tries := 0; len(team) < size && tries < 4*size; tries++ {
		if len(chosen) >= len(staff) || chance(r, 0.05) {
			add(g.newUser()) // an outside collaborator
			continue
		}
		add(pick(r, staff))
	}
	g.st.Teams[project] = team
}

func (g *generator) offeringUser(u *user) {
	if g.seen[u.uuid] {
		return
	}
	g.seen[u.uuid] = true
	g.st.OfferingUsers = append(g.st.OfferingUsers, waldur.OfferingUser{
		UUID:            u.offeringID,
		Username:        u.username,
		State:           u.accountSt,
		UserUUID:        u.uuid,
		UserUsername:    u.idpName,
		UserEmail:       u.email,
		UserFullName:    u.first + " " + u.last,
		UserFirstName:   u.first,
		UserLastName:    u.last,
		UserCivilNumber: u.civil,
	})
}

// limits draws a plan-like limit set.
func (g *generator) limits() waldur.Limits {
	r := g.r
	cpu := []int{1, 2, 4, 8, 16, 32, 64}[r.IntN(7)]
	gpu := 0
	if chance(r, 0.15) {
		gpu = []int{1, 2, 4, 8}[r.IntN(4)]
	}
	return waldur.Limits{
		"cpu":     waldur.Amount(strconv.Itoa(cpu)),
		"ram":     waldur.Amount(strconv.Itoa(cpu * []int{2, 4, 8}[r.IntN(3)])),
		"storage": waldur.Amount(strconv.Itoa([]int{10, 50, 100, 250, 500, 1000, 2000}[r.IntN(7)])),
		"gpu":     waldur.Amount(strconv.Itoa(gpu)),
	}
}

// resource adds one rendered resource to the project and, now and then, an
// extra one that does not render.
func (g *generator) resource(cust, proj scope) {
	r := g.r
	// Extras first, so that they interleave with rendered resources in time.
	switch {
	case chance(r, 0.01):
		g.addResource(cust, proj, waldur.ResourceTerminating, waldur.OrderTerminate, waldur.OrderExecuting)
	case chance(r, 0.005):
		g.addResource(cust, proj, waldur.ResourceCreating, waldur.OrderCreate, waldur.OrderPendingProvider)
	}
	switch x := r.Float64(); {
	case x < 0.02:
		g.addResource(cust, proj, waldur.ResourceCreating, waldur.OrderCreate, waldur.OrderExecuting)
	case x < 0.06:
		g.addResource(cust, proj, waldur.ResourceUpdating, waldur.OrderUpdate, waldur.OrderExecuting)
	case x < 0.07:
		g.addResource(cust, proj, waldur.ResourceErred, "", "")
	default:
		g.addResource(cust, proj, waldur.ResourceOK, "", "")
	}
}

func (g *generator) addResource(cust, proj scope, state, orderType, orderState string) {
	r := g.r
	g.serial++
	kind := pick(r, resKinds)
	res := waldur.Resource{
		UUID:               uuid(r),
		Name:               fmt.Sprintf("%s %s %d", proj.name, kind, g.serial),
		Slug:               fmt.Sprintf("%s-%s", kind, strconv.FormatInt(int64(g.serial), 36)),
		State:              state,
		Limits:             g.limits(),
		OfferingUUID:       g.o.UUID,
		PlanUUID:           uuid(r),
		ProjectUUID:        proj.uuid,
		ProjectName:        proj.name,
		ProjectSlug:        proj.slug,
		ProjectDescription: proj.desc,
		CustomerUUID:       cust.uuid,
		CustomerName:       cust.name,
		CustomerSlug:       cust.slug,
		Created:            g.tick(),
	}
	if state != waldur.ResourceCreating {
		res.BackendID = g.backendID(res)
	}
	if state == waldur.ResourceOK || state == waldur.ResourceUpdating {
		switch x := r.Float64(); {
		case x < 0.02:
			res.Paused = true
		case x < 0.04:
			res.Downscaled = true
		case x < 0.05:
			res.RestrictMemberAccess = true
		}
	}
	if chance(r, 0.1) {
		res.EndDate = res.Created.AddDate(1, 0, 0).Format("2006-01-02")
	}
	g.st.Resources = append(g.st.Resources, res)
	if orderType == "" {
		return
	}
	ord := waldur.Order{
		UUID:                    uuid(r),
		Type:                    orderType,
		State:                   orderState,
		MarketplaceResourceUUID: res.UUID,
		ResourceName:            res.Name,
		ProjectSlug:             res.ProjectSlug,
		PlanUUID:                res.PlanUUID,
		Created:                 res.Created.Add(time.Duration(between(r, 1, 90)) * time.Second),
	}
	switch orderType {
	case waldur.OrderCreate:
		ord.Limits = res.Limits
	case waldur.OrderUpdate:
		ord.Created = res.Created.Add(time.Duration(between(r, 1, 30*24)) * time.Hour)
		ord.Limits = g.limits()
	}
	g.st.Orders = append(g.st.Orders, ord)
}
