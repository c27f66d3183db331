package cli

import (
	"fmt"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
)

// pushPreflight reads the Pushgateway password of a run that will push its
// metrics, before the run sends anything: a password the config names but
// the process cannot read is a config error (exit 2), as the engine's own
// check (engine.FromConfig) makes every other missing credential.
func pushPreflight(cfg *config.Loaded, v verb) error {
	return metricsPreflight(cfg, v.push && !v.req.DryRun)
}

// metricsPreflight is pushPreflight for a command that pushes when push is set.
func metricsPreflight(cfg *config.Loaded, push bool) error {
	if !push || cfg.Metrics.PushgatewayURL == "" {
		return nil
	}
	if _, _, err := cfg.Metrics.BasicAuth(); err != nil {
		return failure.Classify(failure.ClassConfig, fmt.Errorf("the config is incomplete for this command, nothing was done: %w", err))
	}
	return nil
}
