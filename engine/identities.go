package engine

import (
	"context"
	"errors"
	"log/slog"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// KeycloakStage is the Identities seam over package keycloak: the groups and
// memberships of every offering with keycloak_enabled.
type KeycloakStage struct {
	Config *config.Config
	Log    *slog.Logger
	// Connect replaces the client keycloak.Reconcile opens (tests).
	Connect func(keycloak.Target) (*keycloak.Client, error)
}

// Reconcile makes Keycloak match res. Unusable credentials are a config
// error (the engine reclassifies it when something was published already).
func (k *KeycloakStage) Reconcile(ctx context.Context, res *render.Result, present func(waldur.UUID) bool, o IdentityOptions) (changeset.Set, map[string]int, error) {
	g := o.Guard
	out, err := keycloak.Reconcile(ctx, k.Config, res, keycloak.Options{
		DryRun: o.DryRun, NoDelete: o.NoDelete, Log: k.Log, Guard: &g, InGit: present, Connect: k.Connect,
		ClientOptions: keycloak.ClientOptions{UserAgent: version.UserAgent()},
	})
	if errors.Is(err, keycloak.ErrCredentials) {
		err = Classify(ClassConfig, err)
	}
	return out.Changes, out.Calls, err
}
