package keycloak_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/render"
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
	st := &keycloak.Identities{Config: l.Config, Connect: func(keycloak.Target) (*keycloak.Client, error) {
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
			r, _, err := st.Reconcile(context.Background(), &render.Result{}, nil, keycloak.PassOptions{DryRun: tc.dryRun})
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
	if !keycloak.NoCredentials(l.Offerings[0].Settings.Common().Keycloak) {
		t.Error("a user name alone counts as a credential")
	}
}
