package keycloak_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// The scenario world: a namespace offering and a rancher offering in one realm.
const (
	nsOffering      = "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0001"
	rancherOffering = "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0002"
	projectA        = waldur.UUID("b0b00000000040008000000000000001")
	projectB        = waldur.UUID("b0b00000000040008000000000000002")
	customer        = waldur.UUID("c0570000000040008000000000000001")
	clusterGroup    = "/c_cmtest12"
	alphaGroup      = clusterGroup + "/project_alpha_workloads-manage"
)

func resUUID(i int) waldur.UUID { return waldur.UUID(fmt.Sprintf("a0000000000040008000%012d", i)) }

// backend is the Keycloak a scenario runs against: the in-repo fake, or a real
// Keycloak in the contract test. Everything it does goes around waldur-gitops.
type backend interface {
	URL() string
	Realm() string
	// Credentials are the keys of the keycloak mapping that log waldur-gitops
	// in (flow style, comma-separated).
	Credentials() string
	// ServiceAccount makes a confidential client whose service account has
	// the given realm-management roles in the realm and returns the keys
	// that log in as it.
	ServiceAccount(t *testing.T, roles ...string) string
	// AddUser creates a user and returns its id.
	AddUser(t *testing.T, username string) string
	AddGroup(t *testing.T, parentPath, name string, attrs map[string][]string)
	AddMember(t *testing.T, path, username string)
	// RemoveMember and DeleteGroup change the realm out of band.
	RemoveMember(t *testing.T, path, username string)
	DeleteGroup(t *testing.T, path string)
	SetAttributes(t *testing.T, path string, attrs map[string][]string)
	// EnableAdminEvents makes the realm record admin events.
	EnableAdminEvents(t *testing.T)
	Group(t *testing.T, path string) (kctest.GroupInfo, bool)
	Paths(t *testing.T) []string
}

// fakeBackend is kctest behind the backend interface.
type fakeBackend struct{ s *kctest.Server }

func (f fakeBackend) URL() string   { return f.s.URL }
func (f fakeBackend) Realm() string { return kctest.Realm }
func (f fakeBackend) Credentials() string {
	return fmt.Sprintf("keycloak_user_realm: %q, keycloak_username: %q, keycloak_password: %q", kctest.AdminRealm, kctest.AdminUser, kctest.AdminPassword)
}
func (f fakeBackend) ServiceAccount(t *testing.T, roles ...string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := "restricted-" + hex.EncodeToString(b[:])
	f.s.AddServiceClient(kctest.Realm, id, "s3cret", roles...)
	return fmt.Sprintf("keycloak_user_realm: %q, client_id: %q, client_secret: %q", kctest.Realm, id, "s3cret")
}
func (f fakeBackend) AddUser(t *testing.T, username string) string {
	return f.s.AddUser(kctest.Realm, username)
}
func (f fakeBackend) AddGroup(t *testing.T, parentPath, name string, attrs map[string][]string) {
	t.Helper()
	if _, err := f.s.AddGroup(kctest.Realm, parentPath, name, attrs); err != nil {
		t.Fatal(err)
	}
}
func (f fakeBackend) AddMember(t *testing.T, path, username string) {
	t.Helper()
	if err := f.s.AddMember(kctest.Realm, path, username); err != nil {
		t.Fatal(err)
	}
}
func (f fakeBackend) RemoveMember(t *testing.T, path, username string) {
	t.Helper()
	if err := f.s.RemoveMember(kctest.Realm, path, username); err != nil {
		t.Fatal(err)
	}
}
func (f fakeBackend) DeleteGroup(t *testing.T, path string) {
	t.Helper()
	if err := f.s.DeleteGroup(kctest.Realm, path); err != nil {
		t.Fatal(err)
	}
}
func (f fakeBackend) SetAttributes(t *testing.T, path string, attrs map[string][]string) {
	t.Helper()
	if err := f.s.SetAttributes(kctest.Realm, path, attrs); err != nil {
		t.Fatal(err)
	}
}
func (f fakeBackend) EnableAdminEvents(t *testing.T) { f.s.EnableAdminEvents(kctest.Realm, 0) }
func (f fakeBackend) Group(t *testing.T, path string) (kctest.GroupInfo, bool) {
	return f.s.Group(kctest.Realm, path)
}
func (f fakeBackend) Paths(t *testing.T) []string { return f.s.Paths(kctest.Realm) }

// tenant is one Waldur resource of the scenario world.
type tenant struct {
	offering string // "ns" or "rancher"
	n        int    // resUUID(n)
	slug     string
	project  waldur.UUID
	// terminating puts the resource into Terminating with a Terminate order.
	terminating bool
	// bad gives it a limit the renderer rejects.
	bad bool
}

// env is one scenario: a backend, the Waldur world, and the run settings.
type env struct {
	t    *testing.T
	kc   backend
	fake *kctest.Server // nil against a real Keycloak

	tenants []tenant
	teams   map[waldur.UUID][]waldur.TeamMember
	// settings are extra keys for both offerings' backend_settings (flow style).
	settings string
	keycloak string // extra keys of the keycloak mapping (flow style)
	creds    string // login keys instead of the backend's Credentials
	// offeringKeys are extra keys of both offerings (block style, one line).
	offeringKeys string
	// known are offering users of both offerings beside the team members.
	known []string
}

func newEnv(t *testing.T, kc backend, fake *kctest.Server) *env {
	e := &env{t: t, kc: kc, fake: fake, teams: map[waldur.UUID][]waldur.TeamMember{}}
	e.tenants = []tenant{
		{offering: "ns", n: 1, slug: "web", project: projectA},
		{offering: "ns", n: 2, slug: "db", project: projectB},
		{offering: "rancher", n: 3, slug: "gpu1", project: projectA},
		{offering: "rancher", n: 4, slug: "gpu2", project: projectA},
	}
	e.join(projectA, "alice", "manager")
	e.join(projectA, "bob", "member")
	e.join(projectA, "carol", "observer")
	e.join(projectB, "dave", "member")
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		kc.AddUser(t, u)
	}
	return e
}

// join puts an offering user into a project's team with a role.
func (e *env) join(project waldur.UUID, username, role string) {
	e.teams[project] = append(e.teams[project], waldur.TeamMember{
		UUID: waldur.UUID(fmt.Sprintf("%032x", []byte(username + "................")[:16])), Username: username + "@idp",
		Role: role, OfferingUserUsername: username, OfferingUserState: "OK",
	})
}

// leave takes an offering user out of a project's team.
func (e *env) leave(project waldur.UUID, username string) {
	e.teams[project] = slices.DeleteFunc(e.teams[project], func(m waldur.TeamMember) bool { return m.OfferingUserUsername == username })
}

// setRole changes a team member's role.
func (e *env) setRole(project waldur.UUID, username, role string) {
	for i, m := range e.teams[project] {
		if m.OfferingUserUsername == username {
			e.teams[project][i].Role = role
		}
	}
}

func (e *env) tenant(n int) *tenant {
	for i := range e.tenants {
		if e.tenants[i].n == n {
			return &e.tenants[i]
		}
	}
	e.t.Fatalf("no tenant %d", n)
	return nil
}

func (e *env) config() *config.Config {
	e.t.Helper()
	creds := e.creds
	if creds == "" {
		creds = e.kc.Credentials()
	}
	kc := fmt.Sprintf("{keycloak_url: %q, keycloak_realm: %q, %s, requests_per_second: 0%s}",
		e.kc.URL(), e.kc.Realm(), creds, e.keycloak)
	var b strings.Builder
	b.WriteString("offerings:\n")
	for _, o := range []struct{ name, uuid, backend, settings string }{
		{"Namespaces", nsOffering, "namespace", "role_mapping: {observer: readonly}"},
		{"Rancher", rancherOffering, "rancher", "cluster_id: c-m-test123"},
	} {
		fmt.Fprintf(&b, "- name: %s\n  waldur_api_url: https://waldur.example.org/api/\n  waldur_offering_uuid: %s\n  backend_type: %s\n", o.name, o.uuid, o.backend)
		fmt.Fprintf(&b, "  backend_components: {cpu: {}}\n  backend_settings: {%s, keycloak_enabled: true, keycloak: %s%s}\n", o.settings, kc, e.settings)
		if e.offeringKeys != "" {
			fmt.Fprintf(&b, "  %s\n", e.offeringKeys)
		}
	}
	l, err := config.Parse([]byte(b.String()), filepath.Join(e.t.TempDir(), "config.yaml"))
	if err != nil {
		e.t.Fatalf("config: %v\n%s", err, b.String())
	}
	return l.Config
}

func (e *env) state() *waldur.State {
	st := &waldur.State{}
	for _, o := range []struct{ name, key, uuid string }{{"Namespaces", "ns", nsOffering}, {"Rancher", "rancher", rancherOffering}} {
		ost := waldur.OfferingState{Name: o.name, OfferingUUID: waldur.UUID(o.uuid), Teams: map[waldur.UUID][]waldur.TeamMember{}}
		for _, tn := range e.tenants {
			if tn.offering != o.key {
				continue
			}
			slug := map[waldur.UUID]string{projectA: "alpha", projectB: "beta"}[tn.project]
			r := waldur.Resource{
				UUID: resUUID(tn.n), Name: tn.slug, Slug: tn.slug, State: waldur.ResourceOK, Limits: waldur.Limits{"cpu": "1"},
				OfferingUUID: waldur.UUID(o.uuid), ProjectUUID: tn.project, ProjectSlug: slug, ProjectName: slug,
				CustomerUUID: customer, CustomerSlug: "acme", CustomerName: "Acme",
				Created: time.Date(2026, 1, 1, 0, 0, tn.n, 0, time.UTC),
			}
			if tn.bad {
				r.Limits["cpu"] = "-1"
			}
			if tn.terminating {
				r.State = waldur.ResourceTerminating
				ost.Orders = append(ost.Orders, waldur.Order{UUID: terminateOrder(tn.n), Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: r.UUID})
			}
			ost.Resources = append(ost.Resources, r)
			ost.Teams[tn.project] = e.teams[tn.project]
		}
		for _, name := range e.offeringUsers() {
			ost.OfferingUsers = append(ost.OfferingUsers, waldur.OfferingUser{UUID: waldur.UUID(fmt.Sprintf("%032x", []byte(name + "................")[:16])), Username: name, State: "OK"})
		}
		st.Offerings = append(st.Offerings, ost)
	}
	return st
}

func terminateOrder(n int) waldur.UUID {
	return waldur.UUID(fmt.Sprintf("0d0000000000400080000000%08d", n))
}

func (e *env) render(cfg *config.Config) *render.Result {
	e.t.Helper()
	tpls, err := render.LoadTemplates(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := render.New(cfg, tpls).Render(e.state())
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// fast are the client options of the tests: quick retries.
var fast = keycloak.ClientOptions{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

// run renders the world and reconciles it; opts may adjust the options.
func (e *env) run(opts ...func(*keycloak.Options)) (*keycloak.Result, error) {
	e.t.Helper()
	cfg := e.config()
	o := keycloak.Options{ClientOptions: fast}
	for _, f := range opts {
		f(&o)
	}
	return keycloak.Reconcile(context.Background(), cfg, e.render(cfg), o)
}

func (e *env) mustRun(opts ...func(*keycloak.Options)) *keycloak.Result {
	e.t.Helper()
	r, err := e.run(opts...)
	if err != nil {
		e.t.Fatalf("reconcile: %v\nchanges:\n%s", err, changes(r))
	}
	return r
}

func changes(r *keycloak.Result) string {
	if r == nil {
		return "(none)"
	}
	var lines []string
	for _, e := range r.Changes.Entries {
		lines = append(lines, "  "+e.String())
	}
	return strings.Join(lines, "\n")
}

// members returns the usernames in the group at path; the group must exist.
func (e *env) members(path string) []string {
	e.t.Helper()
	g, ok := e.kc.Group(e.t, path)
	if !ok {
		e.t.Fatalf("group %s does not exist; groups: %v", path, e.kc.Paths(e.t))
	}
	return g.Members
}

func (e *env) wantMembers(path string, want ...string) {
	e.t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := e.members(path); !slices.Equal(got, want) {
		e.t.Errorf("members of %s = %v, want %v", path, got, want)
	}
}

func (e *env) exists(path string) bool {
	_, ok := e.kc.Group(e.t, path)
	return ok
}

// entry finds the change entry of kind and subject.
func entry(t *testing.T, r *keycloak.Result, kind, subject string) (found bool, action, reason string, orders []string) {
	t.Helper()
	for _, e := range r.Changes.Entries {
		if e.Kind == kind && e.Subject == subject {
			return true, string(e.Action), e.Reason, e.Orders
		}
	}
	return false, "", "", nil
}

func wantEntry(t *testing.T, r *keycloak.Result, kind, subject, action, reasonPart string) {
	t.Helper()
	found, a, reason, _ := entry(t, r, kind, subject)
	switch {
	case !found:
		t.Errorf("no %s entry for %s; changes:\n%s", kind, subject, changes(r))
	case a != action || !strings.Contains(reason, reasonPart):
		t.Errorf("%s %s: %s %q, want %s with %q", kind, subject, a, reason, action, reasonPart)
	}
}

// offeringUsers are the team members' offering usernames and known, sorted.
func (e *env) offeringUsers() []string {
	names := slices.Clone(e.known)
	for _, team := range e.teams {
		for _, m := range team {
			names = append(names, m.OfferingUserUsername)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
