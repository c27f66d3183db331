package apply

import (
	"errors"
	"fmt"

	"github.com/waldur/waldur-gitops/config"
)

// Preflight loads the kubeconfig of every cluster the offerings of cfg go to,
// without contacting one: a kubeconfig that is missing, or names no usable
// cluster or context, is a config error found before a run changes anything.
func Preflight(cfg *config.Config, o Options) error {
	var errs []error
	seen := map[source]bool{}
	for i := range cfg.Offerings {
		off := &cfg.Offerings[i]
		for _, target := range targetsOf(off.BackendType) {
			src := o.sourceFor(off, target)
			if seen[src] {
				continue
			}
			seen[src] = true
			if _, err := src.RESTConfig(); err != nil {
				errs = append(errs, fmt.Errorf("offering %s, %s target: %w", off.Name, target, err))
			}
		}
	}
	return errors.Join(errs...)
}
