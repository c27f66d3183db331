package keycloak_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/waldur"
)

// The memory scenarios run against the fake (TestScenarios) and a real
// Keycloak (TestContract) like the others.
func init() { scenarios = append(scenarios, memoryScenarios...) }

// clock is a test clock the memory's passes read.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time       { return c.now }
func (c *clock) pass(d time.Duration) { c.now = c.now.Add(d) }
func newClock() *clock                { return &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }
func (c *clock) with(m *keycloak.Memory) opt {
	return func(o *keycloak.Options) { o.Memory, o.Now = m, c.Now }
}

type opt = func(*keycloak.Options)

func only(rs ...waldur.UUID) opt { return func(o *keycloak.Options) { o.Resources = rs } }

// reads counts the read requests of a run by kind.
func reads(r *keycloak.Result) map[string]int {
	out := keycloak.Requests(r.Calls)
	for k := range keycloak.WritesByKind(r.Calls) {
		delete(out, k)
	}
	delete(out, keycloak.CallLogin)
	delete(out, keycloak.CallRefresh)
	return out
}

// fullPass reports whether a run listed the top-level groups.
func fullPass(r *keycloak.Result) bool { return r.Calls[keycloak.CallListGroups] > 0 }

var memoryScenarios = []scenario{
	{name: "memory: a second pass reads a slice and changes nothing", run: func(t *testing.T, e *env) {
		c, m := newClock(), keycloak.NewMemory("")
		first := e.mustRun(c.with(m))
		if !fullPass(first) {
			t.Fatalf("the first pass with an empty memory did not read everything: %v", first.Calls)
		}
		full := e.mustRun() // today's pass, for comparison
		c.pass(time.Minute)
		r := e.mustRun(c.with(m))
		if n := keycloak.Writes(r.Calls); n != 0 || len(r.Changes.ByAction("create"))+len(r.Changes.ByAction("delete"))+len(r.Changes.ByAction("update")) != 0 {
			t.Errorf("the remembered pass changed something (%d writes):\n%s", n, changes(r))
		}
		if fullPass(r) || r.Calls[keycloak.CallListMembers] > 2 {
			t.Errorf("the remembered pass read like a full one: %v", r.Calls)
		}
		if got, was := keycloak.Total(r.Calls), keycloak.Total(full.Calls); got >= was {
			t.Errorf("the remembered pass made %d requests, a full pass %d", got, was)
		}
		wantFirstRunState(t, e)
	}},
	{name: "memory: an out-of-band removal is found within verify_every", run: func(t *testing.T, e *env) {
		e.keycloak = ", verify_every: 1h"
		c, m := newClock(), keycloak.NewMemory("")
		e.mustRun(c.with(m))
		e.kc.RemoveMember(t, "/ns_web_admin", "alice")
		e.kc.DeleteGroup(t, "/ns_db_readwrite")
		c.pass(time.Hour)
		r := e.mustRun(c.with(m))
		if fullPass(r) {
			t.Errorf("a full pass: %v", r.Calls)
		}
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_admin alice", "create", "")
		wantEntry(t, r, keycloak.KindGroup, "/ns_db_readwrite", "create", "")
		wantFirstRunState(t, e)
		// What that pass wrote is remembered: the next one writes nothing.
		c.pass(time.Minute)
		if r := e.mustRun(c.with(m)); keycloak.Writes(r.Calls) != 0 {
			t.Errorf("the pass after the repair wrote: %v\n%s", r.Calls, changes(r))
		}
	}},
	{name: "memory: passes every 15 minutes re-read every group within verify_every", run: func(t *testing.T, e *env) {
		e.keycloak = ", verify_every: 1h"
		c, m := newClock(), keycloak.NewMemory("")
		e.mustRun(c.with(m))
		e.kc.RemoveMember(t, "/ns_web_readwrite", "bob") // the last path: read last
		total, passes := 0, 0
		for passes < 4 {
			c.pass(15 * time.Minute)
			r := e.mustRun(c.with(m))
			passes++
			if n := r.Calls[keycloak.CallGetGroup]; n == 0 || n > 4 {
				t.Errorf("pass %d re-read %d groups, want a quarter of them", passes, n)
			}
			total += r.Calls[keycloak.CallGetGroup]
			if g, _ := e.kc.Group(t, "/ns_web_readwrite"); slices.Contains(g.Members, "bob") {
				break
			}
		}
		e.wantMembers("/ns_web_readwrite", "bob")
		if total < 8 {
			t.Errorf("%d passes re-read %d groups, fewer than the 8 remembered", passes, total)
		}
	}},
	{name: "memory: admin events bring an out-of-band change in at the next pass", run: func(t *testing.T, e *env) {
		e.kc.EnableAdminEvents(t)
		e.creds = e.kc.ServiceAccount(t, "manage-users", "view-events", "view-realm")
		c, m := newClock(), keycloak.NewMemory("")
		e.mustRun(c.with(m))
		// Its own writes are no news to the next pass.
		c.pass(time.Minute)
		r := e.mustRun(c.with(m))
		if r.Calls[keycloak.CallAdminEvents] == 0 || r.Calls[keycloak.CallGetGroup] > 1 || keycloak.Writes(r.Calls) != 0 {
			t.Errorf("the pass after the first: %v", r.Calls)
		}
		e.kc.RemoveMember(t, "/ns_web_admin", "alice")
		e.kc.DeleteGroup(t, "/ns_db_readwrite")
		c.pass(time.Minute)
		r = e.mustRun(c.with(m))
		if fullPass(r) || len(keycloak.Errors(r.Calls)) != 0 {
			t.Errorf("a full pass, or errors: %v", r.Calls)
		}
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_admin alice", "create", "")
		wantEntry(t, r, keycloak.KindGroup, "/ns_db_readwrite", "create", "")
		wantFirstRunState(t, e)
	}},
	{name: "memory: without view-events the admin events are left alone", run: func(t *testing.T, e *env) {
		e.kc.EnableAdminEvents(t)
		e.creds = e.kc.ServiceAccount(t, "manage-users")
		c, m := newClock(), keycloak.NewMemory("")
		e.mustRun(c.with(m))
		e.kc.RemoveMember(t, "/ns_web_admin", "alice")
		c.pass(time.Minute)
		r := e.mustRun(c.with(m))
		if r.Calls[keycloak.CallAdminEvents] != 0 || len(keycloak.Errors(r.Calls)) != 0 || fullPass(r) {
			t.Errorf("calls %v", r.Calls)
		}
		e.wantMembers("/ns_web_admin") // not seen yet: the rotation finds it within verify_every
	}},
	{name: "memory: admin events that may have expired since the last pass mean a full pass", fakeOnly: true, run: func(t *testing.T, e *env) {
		e.fake.EnableAdminEvents(kctest.Realm, 120) // kept two minutes
		c, m := newClock(), keycloak.NewMemory("")
		e.mustRun(c.with(m))
		c.pass(30 * time.Second)
		if r := e.mustRun(c.with(m)); fullPass(r) || r.Calls[keycloak.CallAdminEvents] == 0 {
			t.Errorf("30 s later: %v", r.Calls)
		}
		c.pass(90 * time.Second)
		if r := e.mustRun(c.with(m)); !fullPass(r) {
			t.Errorf("90 s after the last pass, with events kept for 120 s: %v", r.Calls)
		}
	}},
	{name: "memory: the groups a plan changes are read before the write", run: func(t *testing.T, e *env) {
		c, m := newClock(), keycloak.NewMemory("")
		e.mustRun(c.with(m))
		// Someone takes /ns_db_admin over out of band; then its tenant goes.
		e.kc.SetAttributes(t, "/ns_db_admin", map[string][]string{"managed_by": {"someone-else"}})
		e.tenants = slices.DeleteFunc(e.tenants, func(tn tenant) bool { return tn.n == 2 })
		c.pass(time.Minute)
		r := e.mustRun(c.with(m))
		if !e.exists("/ns_db_admin") {
			t.Errorf("/ns_db_admin, no longer waldur-gitops', was deleted on the strength of the memory")
		}
		for _, p := range []string{"/ns_db_readwrite", "/ns_db_readonly"} {
			if e.exists(p) {
				t.Errorf("%s was not deleted", p)
			}
		}
		if fullPass(r) {
			t.Errorf("a full pass: %v", r.Calls)
		}
		// Team changes: the removal is made on a fresh read of the group.
		e.leave(projectA, "carol")
		c.pass(time.Minute)
		r = e.mustRun(c.with(m))
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_readonly carol", "delete", "not in the team")
		e.wantMembers("/ns_web_readonly")
		if reads(r)[keycloak.CallGetGroup] < 2 {
			t.Errorf("the groups losing carol were not read again: %v", r.Calls)
		}
	}},
	{name: "memory: a run for one tenant touches only its groups", run: func(t *testing.T, e *env) {
		c, m := newClock(), keycloak.NewMemory("")
		e.mustRun(c.with(m))
		e.leave(projectB, "dave")
		e.kc.RemoveMember(t, "/ns_web_admin", "alice") // another tenant's: not this run's
		e.kc.DeleteGroup(t, "/ns_db_readonly")
		c.pass(time.Minute)
		r := e.mustRun(c.with(m), only(resUUID(2)))
		if fullPass(r) {
			t.Errorf("a full pass: %v", r.Calls)
		}
		e.wantMembers("/ns_db_readwrite")
		if !e.exists("/ns_db_readonly") {
			t.Errorf("/ns_db_readonly was not recreated")
		}
		e.wantMembers("/ns_web_admin")
		for _, en := range r.Changes.Entries {
			if !strings.HasPrefix(en.Subject, "/ns_db_") {
				t.Errorf("the run for resource 2 has an entry for %s", en.Subject)
			}
		}
		if got := reads(r)[keycloak.CallGetGroup] + reads(r)[keycloak.CallGroupByPath]; got > 4 {
			t.Errorf("the run read %d groups for a tenant of 3: %v", got, r.Calls)
		}
	}},
	{name: "memory: a state file carries it between processes; a bad one means a full pass", run: func(t *testing.T, e *env) {
		c := newClock()
		path := filepath.Join(t.TempDir(), "keycloak-state.json")
		e.mustRun(c.with(keycloak.NewMemory(path)))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"s3cret", "admin-password"} {
			if strings.Contains(string(decodeStored(t, data)), secret) {
				t.Errorf("the state file holds %q", secret)
			}
		}
		c.pass(time.Minute)
		if r := e.mustRun(c.with(keycloak.NewMemory(path))); fullPass(r) {
			t.Errorf("a new process with the state file read everything: %v", r.Calls)
		}
		for _, bad := range []string{"{not json", `{"version": 99, "realms": []}`, `{"version":1,"realms":[{"key":"x","groups":{"/a":{"id":""}}}]}`} {
			if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			e.kc.RemoveMember(t, "/ns_web_readwrite", "bob")
			c.pass(time.Minute)
			r := e.mustRun(c.with(keycloak.NewMemory(path)))
			if !fullPass(r) {
				t.Errorf("state file %q: no full pass: %v", bad, r.Calls)
			}
			e.wantMembers("/ns_web_readwrite", "bob")
		}
		// Another config (here: users looked up by name) ignores the memory.
		e.settings = ", keycloak_use_user_id: false"
		c.pass(time.Minute)
		if r := e.mustRun(c.with(keycloak.NewMemory(path))); !fullPass(r) {
			t.Errorf("the memory of another config was used: %v", r.Calls)
		}
	}},
}
