package engine

import (
	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/waldur/source"
)

// preflight checks, before a run sends a single request, that the config
// holds every key the seams wired with o need and that every credential
// they name can be read: a Waldur token per offering read from the API,
// the repository, its credentials and signing key for a Git publish, the
// kubeconfigs of the clusters an apply or a server-side validation talks
// to, the credentials of every Keycloak reconciled. Whatever is missing is
// one config error (exit 2) naming every key, so that a run never writes
// half of its work before finding the config incomplete.
func preflight(cfg *config.Config, o Options, api *source.API) error {
	var errs []error
	if api != nil {
		errs = append(errs, api.Preflight()...)
	}
	if o.Publish == Git {
		errs = append(errs, publish.GitPreflight(cfg)...)
	}
	if o.Publish == Cluster || o.ValidateServer {
		errs = append(errs, failure.Unjoin(apply.Preflight(cfg, o.Apply))...)
	}
	if o.Identities {
		errs = append(errs, keycloak.Preflight(cfg, o.DryRun)...)
	}
	if len(errs) == 0 {
		return nil
	}
	return failure.Incomplete(errs)
}
