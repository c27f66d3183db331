package keycloak_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/waldur"
)

// scenario is one end-to-end case: the real gocloak client against a Keycloak.
type scenario struct {
	name string
	// fakeOnly marks scenarios that need the fake's fault injection.
	fakeOnly bool
	run      func(t *testing.T, e *env)
}

// wantFirstRunState checks the realm is as the default world wants it.
func wantFirstRunState(t *testing.T, e *env) {
	t.Helper()
	e.wantMembers("/ns_web_admin", "alice")
	e.wantMembers("/ns_web_readwrite", "bob")
	e.wantMembers("/ns_web_readonly", "carol")
	e.wantMembers("/ns_db_admin")
	e.wantMembers("/ns_db_readwrite", "dave")
	e.wantMembers("/ns_db_readonly")
	e.wantMembers(clusterGroup)
	e.wantMembers(alphaGroup, "alice", "bob", "carol")
}

var scenarios = []scenario{
	{name: "first run creates groups and memberships", run: func(t *testing.T, e *env) {
		r := e.mustRun()
		wantFirstRunState(t, e)
		web, _ := e.kc.Group(t, "/ns_web_admin")
		wantAttrs := map[string][]string{
			keycloak.AttrManagedBy: {"waldur-gitops"}, keycloak.AttrOffering: {nsOffering},
			keycloak.AttrResource: {string(resUUID(1))}, keycloak.AttrDescription: {"Namespace web admin access"},
		}
		for k, v := range wantAttrs {
			if !slices.Equal(web.Attributes[k], v) {
				t.Errorf("/ns_web_admin %s = %v, want %v", k, web.Attributes[k], v)
			}
		}
		parent, _ := e.kc.Group(t, clusterGroup)
		child, _ := e.kc.Group(t, alphaGroup)
		if _, ok := parent.Attributes[keycloak.AttrResource]; ok {
			t.Errorf("the parent records resources: %v", parent.Attributes)
		}
		if got := child.Attributes[keycloak.AttrResource]; !slices.Equal(got, []string{string(resUUID(3)), string(resUUID(4))}) {
			t.Errorf("the shared child records resources %v", got)
		}
		wantEntry(t, r, keycloak.KindGroup, alphaGroup, "create", "")
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_admin alice", "create", "")
		if c := r.Changes.Counts(); c[changeset.Create] != 8+7 || c[changeset.Skip] != 0 {
			t.Errorf("counts %v, want 15 creations; changes:\n%s", c, changes(r))
		}
		if w := keycloak.Writes(r.Calls); w != 15 {
			t.Errorf("%d writes, want 15 (8 groups, 7 memberships): %v", w, r.Calls)
		}
	}},
	{name: "second run makes no write", run: func(t *testing.T, e *env) {
		e.mustRun()
		r := e.mustRun()
		if w := keycloak.Writes(r.Calls); w != 0 {
			t.Errorf("%d writes on a no-op run: %v\n%s", w, r.Calls, changes(r))
		}
		if r.Changes.Changed() {
			t.Errorf("changes on a no-op run:\n%s", changes(r))
		}
		if c := r.Changes.Counts(); c[changeset.Unchanged] != 8 {
			t.Errorf("counts %v, want 8 unchanged groups", c)
		}
		// Reads: the listing, the one parent's subgroups, and the members of the
		// 8 groups; every member is known from those, so no user lookups.
		want := map[string]int{keycloak.CallListGroups: 1, keycloak.CallListChildren: 1, keycloak.CallListMembers: 8}
		for k, v := range want {
			if r.Calls[k] != v {
				t.Errorf("%s calls = %d, want %d (%v)", k, r.Calls[k], v, r.Calls)
			}
		}
		if n := r.Calls[keycloak.CallGetUser] + r.Calls[keycloak.CallSearchUsers]; n != 0 {
			t.Errorf("%d user lookups on a no-op run", n)
		}
	}},
	{name: "role change moves the user between groups", run: func(t *testing.T, e *env) {
		e.mustRun()
		e.setRole(projectA, "bob", "manager")
		r := e.mustRun()
		e.wantMembers("/ns_web_admin", "alice", "bob")
		e.wantMembers("/ns_web_readwrite")
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_admin bob", "create", "")
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_readwrite bob", "delete", "")
		if w := keycloak.Writes(r.Calls); w != 2 {
			t.Errorf("%d writes, want 2", w)
		}
	}},
	{name: "user removed from the team leaves its groups", run: func(t *testing.T, e *env) {
		e.mustRun()
		e.leave(projectA, "carol")
		r := e.mustRun()
		e.wantMembers("/ns_web_readonly")
		e.wantMembers(alphaGroup, "alice", "bob")
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_readonly carol", "delete", "not in the team")
		wantEntry(t, r, keycloak.KindMembership, alphaGroup+" carol", "delete", "")
	}},
	{name: "terminated tenant's groups go after the prune", run: func(t *testing.T, e *env) {
		e.mustRun()
		e.tenant(1).terminating = true
		inGit := true
		withGit := func(o *keycloak.Options) { o.InGit = func(waldur.UUID) bool { return inGit } }
		r := e.mustRun(withGit)
		for _, p := range []string{"/ns_web_admin", "/ns_web_readwrite", "/ns_web_readonly"} {
			if !e.exists(p) {
				t.Errorf("%s deleted while its manifests are still in Git", p)
			}
			wantEntry(t, r, keycloak.KindGroup, p, "unchanged", "still in Git")
		}
		inGit = false
		r = e.mustRun(withGit)
		for _, p := range []string{"/ns_web_admin", "/ns_web_readwrite", "/ns_web_readonly"} {
			if e.exists(p) {
				t.Errorf("%s still exists after the prune", p)
			}
			wantEntry(t, r, keycloak.KindGroup, p, "delete", "")
			if _, _, _, orders := entry(t, r, keycloak.KindGroup, p); !slices.Equal(orders, []string{string(terminateOrder(1))}) {
				t.Errorf("%s deletion cites orders %v", p, orders)
			}
		}
		if !e.exists("/ns_db_admin") {
			t.Error("another tenant's group went too")
		}
	}},
	{name: "shared rancher group survives while a resource needs it", run: func(t *testing.T, e *env) {
		e.mustRun()
		e.tenant(3).terminating = true
		r := e.mustRun()
		e.wantMembers(alphaGroup, "alice", "bob", "carol")
		wantEntry(t, r, keycloak.KindGroup, alphaGroup, "update", keycloak.AttrResource)
		if g, _ := e.kc.Group(t, alphaGroup); !slices.Equal(g.Attributes[keycloak.AttrResource], []string{string(resUUID(4))}) {
			t.Errorf("resources recorded: %v", g.Attributes[keycloak.AttrResource])
		}
		e.tenant(4).terminating = true
		r = e.mustRun()
		if e.exists(alphaGroup) || e.exists(clusterGroup) {
			t.Errorf("groups left after the last rancher tenant went: %v", e.kc.Paths(t))
		}
		wantEntry(t, r, keycloak.KindGroup, alphaGroup, "delete", "")
		wantEntry(t, r, keycloak.KindGroup, clusterGroup, "delete", "")
	}},
	{name: "unmarked group with a desired name is a conflict and untouched", run: func(t *testing.T, e *env) {
		theirs := map[string][]string{keycloak.AttrManagedBy: {"waldur-site-agent"}, keycloak.AttrDescription: {"theirs"}}
		e.kc.AddGroup(t, "", "ns_web_admin", theirs)
		e.kc.AddUser(t, "zed")
		e.kc.AddMember(t, "/ns_web_admin", "zed")
		e.kc.AddGroup(t, "", "c_cmtest12", nil)
		r := e.mustRun()
		e.wantMembers("/ns_web_admin", "zed")
		if g, _ := e.kc.Group(t, "/ns_web_admin"); len(g.Attributes) != 2 || g.Attributes[keycloak.AttrManagedBy][0] != "waldur-site-agent" {
			t.Errorf("attributes changed: %v", g.Attributes)
		}
		wantEntry(t, r, keycloak.KindGroup, "/ns_web_admin", "skip", "conflict")
		wantEntry(t, r, keycloak.KindGroup, clusterGroup, "skip", "not managed by waldur-gitops")
		wantEntry(t, r, keycloak.KindGroup, alphaGroup, "skip", "parent group "+clusterGroup)
		if e.exists(alphaGroup) {
			t.Error("a subgroup was created under an unmarked parent")
		}
		e.wantMembers("/ns_web_readwrite", "bob")
		if r.Changes.Counts()[changeset.Skip] != 3 {
			t.Errorf("changes:\n%s", changes(r))
		}
		// A second run leaves them alone again and writes nothing.
		if r = e.mustRun(); keycloak.Writes(r.Calls) != 0 {
			t.Errorf("second run wrote: %v", r.Calls)
		}
	}},
	{name: "adopt_existing takes unmarked groups over", run: func(t *testing.T, e *env) {
		e.kc.AddGroup(t, "", "ns_web_admin", map[string][]string{keycloak.AttrManagedBy: {"waldur-site-agent"}, "site": {"kept"}})
		e.kc.AddUser(t, "zed")
		e.kc.AddMember(t, "/ns_web_admin", "zed")
		e.kc.AddMember(t, "/ns_web_admin", "alice")
		e.settings = ", keycloak_groups: {adopt_existing: true}"
		r := e.mustRun()
		e.wantMembers("/ns_web_admin", "alice")
		g, _ := e.kc.Group(t, "/ns_web_admin")
		if g.Attributes[keycloak.AttrManagedBy][0] != "waldur-gitops" || g.Attributes["site"][0] != "kept" {
			t.Errorf("attributes after adoption: %v", g.Attributes)
		}
		wantEntry(t, r, keycloak.KindGroup, "/ns_web_admin", "update", "adopt")
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_admin zed", "delete", "")
		if r = e.mustRun(); keycloak.Writes(r.Calls) != 0 {
			t.Errorf("the run after adoption wrote: %v", r.Calls)
		}
	}},
	{name: "missing user is reported and the run goes on", run: func(t *testing.T, e *env) {
		e.join(projectA, "ghost", "member")
		r := e.mustRun()
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_readwrite ghost", "skip", "user ghost not found")
		wantEntry(t, r, keycloak.KindMembership, alphaGroup+" ghost", "skip", "not found")
		if len(r.MissingUsers) != 1 || !strings.Contains(r.MissingUsers["ghost"], "user ghost not found") || len(r.FailedUsers) != 0 {
			t.Errorf("missing users %v, failed %v; want ghost missing", r.MissingUsers, r.FailedUsers)
		}
		e.wantMembers("/ns_web_readwrite", "bob")
		// Once the user exists, the next run adds it.
		e.kc.AddUser(t, "ghost")
		if r = e.mustRun(); len(r.MissingUsers) != 0 {
			t.Errorf("missing users %v once ghost exists", r.MissingUsers)
		}
		e.wantMembers("/ns_web_readwrite", "bob", "ghost")
	}},
	{name: "users are looked up by id, then by user name", run: func(t *testing.T, e *env) {
		id := e.kc.AddUser(t, "erin")
		e.join(projectB, id, "manager") // an offering username that is a Keycloak id
		e.join(projectB, "dave", "member")
		r := e.mustRun()
		e.wantMembers("/ns_db_admin", "erin")
		if r.Calls[keycloak.CallGetUser] == 0 || r.Calls[keycloak.CallSearchUsers] == 0 {
			t.Errorf("want lookups by id and by name: %v", r.Calls)
		}
		// keycloak_use_user_id: false looks up by user name only.
		e2 := e.settings
		e.settings = e2 + ", keycloak_use_user_id: false"
		e.join(projectB, "frank", "member")
		e.kc.AddUser(t, "frank")
		r = e.mustRun()
		if r.Calls[keycloak.CallGetUser] != 0 {
			t.Errorf("looked up by id with keycloak_use_user_id false: %v", r.Calls)
		}
		e.wantMembers("/ns_db_readwrite", "dave", "frank")
		wantEntry(t, r, keycloak.KindMembership, "/ns_db_admin "+id, "skip", "looked up by user name")
	}},
	{name: "skipped resource keeps its groups", run: func(t *testing.T, e *env) {
		e.mustRun()
		e.tenant(1).bad = true
		r := e.mustRun()
		if !e.exists("/ns_web_admin") {
			t.Error("the groups of a resource skipped for bad input were deleted")
		}
		wantEntry(t, r, keycloak.KindGroup, "/ns_web_admin", "unchanged", "skipped for bad input")
		e.wantMembers("/ns_web_admin", "alice")
	}},
	{name: "paging: small pages give the same result", run: func(t *testing.T, e *env) {
		e.keycloak = ", page_size: 2"
		for i := range 12 {
			name := "user" + string(rune('a'+i))
			e.kc.AddUser(t, name)
			e.join(projectA, name, "member")
		}
		for i := range 3 {
			e.kc.AddGroup(t, "", "other-"+string(rune('a'+i)), nil)
		}
		e.mustRun()
		if got := len(e.members("/ns_web_readwrite")); got != 13 {
			t.Errorf("readwrite has %d members, want 13", got)
		}
		r := e.mustRun()
		if w := keycloak.Writes(r.Calls); w != 0 {
			t.Errorf("no-op run with small pages wrote %d: %v", w, r.Calls)
		}
		if r.Calls[keycloak.CallListGroups] < 5 || r.Calls[keycloak.CallListMembers] < 15 {
			t.Errorf("too few page calls for pages of 2: %v", r.Calls)
		}
	}},
	{name: "a group that appears between reading and creating", run: func(t *testing.T, e *env) {
		cfg := e.config()
		res := e.render(cfg)
		target := keycloak.Targets(cfg)[0]
		c, err := keycloak.NewClient(target, fast)
		if err != nil {
			t.Fatal(err)
		}
		desired := keycloak.Desire(target, res.Groups)
		a, err := keycloak.Observe(context.Background(), c, desired)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := keycloak.MakePlan(keycloak.PlanInput{Target: target, Desired: desired, Actual: a})
		if err != nil {
			t.Fatal(err)
		}
		// Another run made one, someone else the other.
		e.kc.AddGroup(t, "", "ns_web_admin", map[string][]string{keycloak.AttrManagedBy: {"waldur-gitops"}, keycloak.AttrOffering: {nsOffering}})
		e.kc.AddGroup(t, "", "ns_web_readonly", nil)
		out, err := keycloak.Execute(context.Background(), c, plan)
		if err == nil || !strings.Contains(err.Error(), "2 of 15 operations failed") {
			t.Fatalf("want the creation and the addition that needs it to fail, got %v", err)
		}
		r := &keycloak.Result{Changes: out}
		wantEntry(t, r, keycloak.KindGroup, "/ns_web_admin", "create", "existed already")
		wantEntry(t, r, keycloak.KindGroup, "/ns_web_readonly", "skip", "without the waldur-gitops marker")
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_readonly carol", "skip", "was not created")
		e.wantMembers("/ns_web_admin", "alice")
		e.wantMembers("/ns_web_readonly")
	}},
	{name: "deletion guard refuses a mass deletion", run: func(t *testing.T, e *env) {
		e.mustRun()
		e.tenants = e.tenants[:0]
		before := len(e.kc.Paths(t))
		g := guard.DefaultOptions()
		r, err := e.run(func(o *keycloak.Options) { o.Guard = &g })
		if err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Fatalf("want the guard to refuse, got %v", err)
		}
		if after := len(e.kc.Paths(t)); after != before {
			t.Errorf("groups went from %d to %d", before, after)
		}
		wantEntry(t, r, keycloak.KindRealm, strings.TrimRight(e.kc.URL(), "/")+" realm "+e.kc.Realm(), "skip", "refusing")
		g.Allow = true
		e.mustRun(func(o *keycloak.Options) { o.Guard = &g })
		if left := e.kc.Paths(t); len(left) != 0 {
			t.Errorf("left after an allowed prune: %v", left)
		}
	}},
	{name: "dry run reads and plans but writes nothing", run: func(t *testing.T, e *env) {
		cfg := e.config()
		set, calls, err := changeset.Apart(keycloak.PlanChanges(context.Background(), cfg, e.render(cfg), keycloak.Options{ClientOptions: fast}))
		if err != nil {
			t.Fatal(err)
		}
		if keycloak.Writes(calls) != 0 || len(e.kc.Paths(t)) != 0 {
			t.Errorf("a dry run wrote: %v", calls)
		}
		if c := set.Counts(); c[changeset.Create] != 15 {
			t.Errorf("planned %v, want 15 creations", c)
		}
	}},
	{name: "a missing realm role stops the run at the first refusal", run: func(t *testing.T, e *env) {
		// Reads allowed, writes not: the first write is refused and nothing
		// more is attempted.
		e.creds = e.kc.ServiceAccount(t, "view-users")
		e.keycloak = ", concurrency: 1"
		r, err := e.run()
		if err == nil || !strings.Contains(err.Error(), "stopped at the first refusal") || !strings.Contains(err.Error(), "lacks the realm-management role manage-users in realm "+e.kc.Realm()) {
			t.Fatalf("error %v, want the refusal naming the role", err)
		}
		if a := keycloak.WriteAttempts(r.Calls); a != 1 || keycloak.Writes(r.Calls) != 0 {
			t.Errorf("%d write attempts, %d writes, want 1 and 0: %v", a, keycloak.Writes(r.Calls), r.Calls)
		}
		if c := r.Changes.Counts(); c[changeset.Skip] != 15 {
			t.Errorf("counts %v, want all 15 operations skipped:\n%s", c, changes(r))
		}
		wantEntry(t, r, keycloak.KindMembership, "/ns_web_admin alice", "skip", "refused an earlier call")
		if left := e.kc.Paths(t); len(left) != 0 {
			t.Errorf("groups made without the role: %v", left)
		}
		// No role at all: the first read is refused, nothing is planned.
		e.creds = e.kc.ServiceAccount(t)
		_, err = e.run()
		if err == nil || !strings.Contains(err.Error(), "refused groups.list (403 Forbidden)") || !strings.Contains(err.Error(), "view-users is enough for a dry run") {
			t.Errorf("error %v, want the read refusal naming the roles", err)
		}
	}},
	{name: "5xx bursts and dropped connections are retried and converge", fakeOnly: true, run: func(t *testing.T, e *env) {
		for _, f := range []kctest.Fault{
			{Method: "GET", Path: "/groups", Status: 503, Times: 3},
			{Method: "POST", Path: "/groups", Status: 502, Times: 4},
			{Method: "PUT", Path: "/users/", Status: 500, Times: 3},
			{Method: "PUT", Path: "/users/", Status: 0, Times: 2},
			{Method: "POST", Path: "/token", Status: 503, Times: 2},
			// Done, but the answer is lost: the retry meets a 409 or an idempotent 204.
			{Method: "POST", Path: "/children", Status: 504, After: true},
			{Method: "PUT", Path: "/groups/", Status: 0, After: true, Times: 2},
		} {
			e.fake.Inject(f)
		}
		r := e.mustRun()
		wantFirstRunState(t, e)
		wantEntry(t, r, keycloak.KindGroup, alphaGroup, "create", "answer was lost")
		if r.Calls[keycloak.CallRetries] < 10 {
			t.Errorf("retries %d, want at least 10: %v", r.Calls[keycloak.CallRetries], r.Calls)
		}
		// Each change counts once however many attempts it took, and what the
		// run settled itself (the 409 of the lost answer) is no failure.
		if w, a := keycloak.Writes(r.Calls), keycloak.WriteAttempts(r.Calls); w != 15 || a <= 15 {
			t.Errorf("%d writes in %d attempts, want 15 in more than 15: %v", w, a, r.Calls)
		}
		if errs := keycloak.Errors(r.Calls); len(errs) != 0 {
			t.Errorf("failed calls counted in a run that converged: %v", errs)
		}
		if r = e.mustRun(); keycloak.Writes(r.Calls) != 0 {
			t.Errorf("the run after the faults wrote: %v", r.Calls)
		}
	}},
	{name: "an outage fails the step clearly and the next run converges", fakeOnly: true, run: func(t *testing.T, e *env) {
		e.fake.Inject(kctest.Fault{Method: "PUT", Path: "/users/", Status: 503, Times: 1000})
		r, err := e.run()
		if err == nil || !strings.Contains(err.Error(), "Keycloak is unavailable") || !strings.Contains(err.Error(), "503") {
			t.Fatalf("error %v, want a clear unavailability error", err)
		}
		if c := r.Changes.Counts(); c[changeset.Skip] != 7 {
			t.Errorf("counts %v, want the 7 memberships skipped:\n%s", c, changes(r))
		}
		if len(r.FailedUsers) == 0 {
			t.Error("no member reported as failed")
		}
		for user, why := range r.FailedUsers {
			if !strings.Contains(why, "add-member") || !strings.Contains(why, user) || !strings.Contains(why, "503") {
				t.Errorf("failed user %s: %q", user, why)
			}
		}
		wantEntry(t, r, keycloak.KindGroup, "/ns_web_admin", "create", "")
		e.fake.ClearFaults()
		e.mustRun()
		wantFirstRunState(t, e)

		// Down from the start: nothing is written, the error says so.
		e.fake.Inject(kctest.Fault{Path: "/", Status: 503, Times: 1000})
		_, err = e.run()
		if err == nil || !strings.Contains(err.Error(), "gave up after 6 attempts") {
			t.Errorf("error %v", err)
		}
	}},
	{name: "an access token that expires mid-run is renewed", fakeOnly: true, run: func(t *testing.T, e *env) {
		e.fake.ExpireTokensAfter(6)
		r := e.mustRun()
		wantFirstRunState(t, e)
		if r.Calls[keycloak.CallUnauthorized] == 0 || r.Calls[keycloak.CallRefresh] == 0 {
			t.Errorf("want a 401 answered with a refresh: %v", r.Calls)
		}
	}},
	{name: "Keycloak disabled makes no call", fakeOnly: true, run: func(t *testing.T, e *env) {
		cfg := e.config()
		for i := range cfg.Offerings {
			cfg.Offerings[i].Settings.Common().KeycloakEnabled = false
		}
		e.fake.ResetCounts()
		r, err := keycloak.Reconcile(context.Background(), cfg, e.render(cfg), keycloak.Options{})
		if err != nil || len(r.Changes.Entries) != 0 || len(r.Calls) != 0 || e.fake.Requests() != 0 {
			t.Errorf("disabled: %v, %d changes, calls %v, %d requests", err, len(r.Changes.Entries), r.Calls, e.fake.Requests())
		}
	}},
}

// TestScenarios runs every scenario against the in-repo fake Keycloak.
func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s := kctest.NewServer()
			defer s.Close()
			sc.run(t, newEnv(t, fakeBackend{s}, s))
		})
	}
}

// A confidential client logs in with its own service account when no user
// name is configured, and a wrong secret is a clear login error.
func TestClientCredentials(t *testing.T) {
	s := kctest.NewServer()
	defer s.Close()
	s.AddClient(kctest.AdminRealm, "gitops", "s3cret")
	e := newEnv(t, fakeBackend{s}, s)
	for _, secret := range []string{"s3cret", "wrong"} {
		cfg := e.config()
		for i := range cfg.Offerings {
			k := &cfg.Offerings[i].Settings.Common().Keycloak
			k.Username, k.Password, k.ClientID, k.ClientSecret = "", "", "gitops", config.Secret(secret)
		}
		s.ResetCounts()
		r, err := keycloak.Reconcile(context.Background(), cfg, e.render(cfg), keycloak.Options{ClientOptions: fast})
		if secret == "wrong" {
			if err == nil || !strings.Contains(err.Error(), "log in to realm master as client gitops") || !strings.Contains(err.Error(), "401") {
				t.Errorf("wrong secret: %v", err)
			}
			if keycloak.Total(r.Calls) != 1 {
				t.Errorf("a refused login was retried: %v", r.Calls)
			}
			continue
		}
		if err != nil || r.Calls[keycloak.CallLogin] != 1 {
			t.Fatalf("client credentials: %v, calls %v", err, r.Calls)
		}
		wantFirstRunState(t, e)
	}
}

// The password can come from a file, as a mounted Kubernetes Secret gives it:
// the client reads it when it logs in, and a missing file is a credentials
// error that names the key.
func TestPasswordFile(t *testing.T) {
	s := kctest.NewServer()
	defer s.Close()
	e := newEnv(t, fakeBackend{s}, s)
	file := filepath.Join(t.TempDir(), "kc-password")
	cfg := e.config()
	var password string
	for i := range cfg.Offerings {
		k := &cfg.Offerings[i].Settings.Common().Keycloak
		password = k.Password.Reveal()
		k.Password, k.PasswordFile = "", file
	}
	_, err := keycloak.Reconcile(context.Background(), cfg, e.render(cfg), keycloak.Options{ClientOptions: fast})
	if !errors.Is(err, keycloak.ErrCredentials) || !strings.Contains(err.Error(), "keycloak.keycloak_password_file") {
		t.Fatalf("missing password file: %v", err)
	}
	if err := os.WriteFile(file, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := keycloak.Reconcile(context.Background(), cfg, e.render(cfg), keycloak.Options{ClientOptions: fast})
	if err != nil || r.Calls[keycloak.CallLogin] != 1 {
		t.Fatalf("password from a file: %v, calls %v", err, r.Calls)
	}
	wantFirstRunState(t, e)
}
