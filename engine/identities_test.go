package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestKeycloakStageWithoutCredentials: a realm whose settings name no
// credential is left out of a dry run, with a skipped entry naming its
// offerings, and no connection is attempted for it; a run that writes still
// fails on it with the credentials error.
func TestKeycloakStageWithoutCredentials(t *testing.T) {
	text := `offerings:
- name: No secret
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: 0ff00000000040008000000000000001
  backend_type: namespace
  backend_settings:
    keycloak_enabled: true
    keycloak:
      keycloak_url: https://sso.example.org/
      keycloak_username: gitops
`
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	connects := 0
	st := &engine.KeycloakStage{Config: l.Config, Connect: func(keycloak.Target) (*keycloak.Client, error) {
		connects++
		return nil, errors.New("no Keycloak in this test")
	}}
	tests := []struct {
		name     string
		dryRun   bool
		wantErr  string
		connects int
	}{
		{"dry run", true, "", 0},
		{"run", false, "no Keycloak in this test", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			connects = 0
			r, err := st.Reconcile(context.Background(), &render.Result{}, nil, engine.IdentityOptions{DryRun: tc.dryRun})
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) || connects != tc.connects {
				t.Fatalf("error %v, %d connects", err, connects)
			}
			if !tc.dryRun {
				return
			}
			skips := r.Changes.ByAction(changeset.Skip)
			if len(skips) != 1 || skips[0].Kind != keycloak.KindRealm || !strings.Contains(skips[0].Reason, "no Keycloak credentials for offering(s) No secret") {
				t.Errorf("entries %+v", r.Changes.Entries)
			}
		})
	}
	if !engine.NoCredentials(l.Offerings[0].Settings.Common().Keycloak) {
		t.Error("a user name alone counts as a credential")
	}
}

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
