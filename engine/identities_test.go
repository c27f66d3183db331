package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestKeycloakStageRemembers: the stage FromConfig wires keeps what a pass
// found for the next run of the same engine (as serve runs it) and in the
// config's keycloak_state file, so that the next pass lists no groups; a run
// for one resource reads only its groups.
func TestKeycloakStageRemembers(t *testing.T) {
	s := kctest.NewServer()
	defer s.Close()
	for _, u := range []string{"alice", "bob"} {
		s.AddUser(kctest.Realm, u)
	}
	dir := t.TempDir()
	text := fmt.Sprintf(`keycloak_state: kc-state.json
offerings:
- name: NS
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: 0ff00000000040008000000000000001
  backend_type: namespace
  backend_settings:
    keycloak_enabled: true
    keycloak_use_user_id: false
    keycloak: {keycloak_url: %q, keycloak_realm: %q, keycloak_user_realm: %q, keycloak_username: %q, keycloak_password: %q, requests_per_second: 0}
`, s.URL, kctest.Realm, kctest.AdminRealm, kctest.AdminUser, kctest.AdminPassword)
	l, err := config.Parse([]byte(text), filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res := &render.Result{}
	for i, who := range []string{"alice", "bob"} {
		r := waldur.UUID(fmt.Sprintf("a000000000004000800000000000000%d", i+1))
		res.Tenants = append(res.Tenants, &render.Tenant{Offering: "NS", Resource: r})
		res.Groups = append(res.Groups, render.Group{Name: "ns_" + who, Offering: "NS", Resources: []waldur.UUID{r}, Members: []string{who}})
	}
	e, err := engine.FromConfig(l.Config, engine.Options{Snapshot: "unused.json", Identities: true})
	if err != nil {
		t.Fatal(err)
	}
	st, ok := e.Seams().Identities.(*engine.KeycloakStage)
	if !ok || st.Memory == nil || st.Memory.Path() != filepath.Join(dir, "kc-state.json") {
		t.Fatalf("the Keycloak stage has no memory kept in the state file: %#v", e.Seams().Identities)
	}
	run := func(o engine.IdentityOptions) map[string]int {
		t.Helper()
		r, err := st.Reconcile(context.Background(), res, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		return r.Calls
	}
	if calls := run(engine.IdentityOptions{}); calls[keycloak.CallListGroups] == 0 {
		t.Fatalf("the first pass did not list the groups: %v", calls)
	}
	if calls := run(engine.IdentityOptions{}); calls[keycloak.CallListGroups] != 0 {
		t.Errorf("the second run of the engine listed every group: %v", calls)
	}
	if err := s.RemoveMember(kctest.Realm, "/ns_bob", "bob"); err != nil {
		t.Fatal(err)
	}
	calls := run(engine.IdentityOptions{Resources: []waldur.UUID{res.Tenants[1].Resource}})
	if calls[keycloak.CallListGroups] != 0 || calls[keycloak.CallGetGroup] != 1 || calls[keycloak.CallAddMember] != 1 {
		t.Errorf("the run for bob's resource: %v, want one group read and bob added back", calls)
	}
	if g, _ := s.Group(kctest.Realm, "/ns_bob"); len(g.Members) != 1 {
		t.Errorf("/ns_bob members %v", g.Members)
	}
}
