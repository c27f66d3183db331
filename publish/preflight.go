package publish

import (
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
)

// GitPreflight reads what the Git publish needs: git.url, its credentials
// and signing key, the OCI registry's credentials and the forge token.
func GitPreflight(cfg *config.Config) []error {
	var errs []error
	if _, err := gitsync.OptionsFromConfig(cfg.Git); err != nil {
		errs = append(errs, err)
	}
	if cfg.Git.FluxOCIRepository != "" {
		if _, _, err := cfg.Git.FluxOCICredentials(); err != nil {
			errs = append(errs, err)
		}
	}
	if f := cfg.Review.Forge; f != nil {
		if _, err := f.Token(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
