package keycloak_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/waldur"
)

func init() {
	scenarios = append(scenarios,
		scenario{name: "offboarded user read back", run: readBackScenario},
		scenario{name: "preserve_unmanaged_backend_users keeps strangers", run: preserveScenario})
}

// preserveScenario: with preserve_unmanaged_backend_users a member of a
// managed group who is no offering user of the offering is kept (an entry
// says why), while a known offering user who left the team is removed;
// without it, both are removed.
func preserveScenario(t *testing.T, e *env) {
	e.mustRun()
	e.kc.AddUser(t, "eve")
	e.kc.AddMember(t, "/ns_web_readwrite", "eve")
	e.offeringKeys = "preserve_unmanaged_backend_users: true"
	e.known = []string{"bob"}
	e.leave(projectA, "bob")
	r := e.mustRun()
	e.wantMembers("/ns_web_readwrite", "eve")
	wantEntry(t, r, keycloak.KindMembership, "/ns_web_readwrite eve", "unchanged", "kept: not an offering user of Namespaces (preserve_unmanaged_backend_users)")
	wantEntry(t, r, keycloak.KindMembership, "/ns_web_readwrite bob", "delete", "")
	e.offeringKeys = ""
	e.mustRun()
	e.wantMembers("/ns_web_readwrite")
}

// readBackScenario: reading the realm back lists the managed groups a user
// is still in (not a group of another tool), and none once the user's
// offering-user state is Deleting and a pass removed them; the realm's token
// lifespan comes with it (Keycloak's default, 300 s, whether read or not).
func readBackScenario(t *testing.T, e *env) {
	e.mustRun()
	e.kc.AddGroup(t, "", "not-ours", nil)
	e.kc.AddMember(t, "/not-ours", "bob")
	readBack := func() *keycloak.Leftover {
		t.Helper()
		cfg := e.config()
		views, calls, err := keycloak.ReadBack(context.Background(), cfg, e.render(cfg), map[string][]string{"Namespaces": {"bob", "nobody"}}, keycloak.Options{ClientOptions: fast})
		if err != nil {
			t.Fatal(err)
		}
		if calls[keycloak.CallUserGroups] != 1 {
			t.Errorf("calls %v, want one users.groups (nobody is no Keycloak user)", calls)
		}
		v := views["Namespaces"]
		if v == nil || views["Rancher"] != v {
			t.Fatalf("views %v: want one Leftover for the realm both offerings share", views)
		}
		if v.TokenLifespan != 5*time.Minute {
			t.Errorf("token lifespan %v, want 5m", v.TokenLifespan)
		}
		return v
	}
	if got := readBack().Groups["bob"]; !slices.Equal(got, []string{alphaGroup, "/ns_web_readwrite"}) {
		t.Errorf("bob is in %v, want %v and /ns_web_readwrite (not /not-ours)", got, alphaGroup)
	}
	for i, m := range e.teams[projectA] {
		if m.OfferingUserUsername == "bob" {
			e.teams[projectA][i].OfferingUserState = waldur.OfferingUserDeleting
		}
	}
	e.mustRun()
	if got := readBack().Groups; len(got) != 0 {
		t.Errorf("after the pass: %v, want bob in no managed group", got)
	}
	e.wantMembers("/not-ours", "bob")
}
