package engine

import (
	"context"
	"errors"

	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// KeycloakStage is the Identities seam over keycloak.Identities: the groups
// and memberships of every offering with keycloak_enabled.
type KeycloakStage struct{ *keycloak.Identities }

// Reconcile runs one pass. Unusable credentials are a config error (the
// engine reclassifies it when something was published already).
func (k *KeycloakStage) Reconcile(ctx context.Context, res *render.Result, present func(waldur.UUID) bool, o IdentityOptions) (*IdentityResult, error) {
	out, waiting, err := k.Identities.Reconcile(ctx, res, present, keycloak.PassOptions(o))
	if errors.Is(err, keycloak.ErrCredentials) {
		err = failure.Classify(failure.ClassConfig, err)
	}
	return &IdentityResult{Changes: out.Changes, Calls: out.Calls, Waiting: waiting}, err
}
