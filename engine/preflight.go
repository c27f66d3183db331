package engine

import (
	"fmt"
	"strings"

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
		errs = append(errs, unjoin(apply.Preflight(cfg, o.Apply))...)
	}
	if o.Identities {
		errs = append(errs, keycloak.Preflight(cfg, o.DryRun)...)
	}
	if len(errs) == 0 {
		return nil
	}
	return failure.Classify(failure.ClassConfig, &incompleteError{errs: errs})
}

// incompleteError is every key or credential preflight found missing, one
// per line when there are several, as config validation lists its problems.
type incompleteError struct{ errs []error }

func (e *incompleteError) Error() string {
	var b strings.Builder
	b.WriteString("the config is incomplete for this command, nothing was done: ")
	if len(e.errs) == 1 {
		b.WriteString(e.errs[0].Error())
		return b.String()
	}
	fmt.Fprintf(&b, "%d problem(s)", len(e.errs))
	for _, err := range e.errs {
		b.WriteString("\n  " + strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return b.String()
}

func (e *incompleteError) Unwrap() []error { return e.errs }

// unjoin lists the errors err joins: err alone when it joins none, none for nil.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
