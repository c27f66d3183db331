package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/kube"
)

// diagnoseDeps builds the clients of the checks; tests replace parts of it.
var diagnoseDeps = func(a *app) diagnose.Deps {
	return diagnose.Deps{
		Waldur: func(o *config.Offering) (diagnose.WaldurAPI, error) {
			c, err := a.waldurClient(o)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Git:      diagnose.NewGitRemote,
		Keycloak: diagnose.NewKeycloak,
		Cluster: func(s kube.Source) (diagnose.ClusterAPI, error) {
			r, err := kube.Open(s)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
	}
}

func init() { register((*app).diagnoseCommand) }

func (a *app) diagnoseCommand() *cobra.Command {
	var kubeconfig, output string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "diagnose --config C [--kubeconfig K]",
		Short: "Check every connection the config names and print a pass/fail table",
		Long: `Diagnose checks, without changing anything:

  - per offering: the Waldur token (GET /api/users/me/) and the offering
    (GET /api/marketplace-provider-offerings/<uuid>/), including that every
    component usage is reported for exists in Waldur;
  - the GitOps repository: read (the references a fetch sees, and the branch)
    and write (a push session is opened and closed without sending anything;
    hosts refuse it to credentials that may not push);
  - per Keycloak the offerings use: the login, and reading the realm's groups;
  - the clusters: --kubeconfig, else every backend_settings.kubeconfig_path
    (and management_kubeconfig_path): the server answers, and namespaces and
    resourcequotas can be listed.

It prints one row per check with the reason of each failure and exits 10 when
any check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return usageErr("--output must be text or json, got %q", output)
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			return a.runDiagnose(cmd.Context(), cfg.Config, kubeconfig, output, timeout)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "check this cluster instead of the config's kubeconfig keys")
	cmd.Flags().StringVar(&output, "output", "text", "output format: text (a table) or json")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "time limit of each check")
	return cmd
}

func (a *app) runDiagnose(ctx context.Context, cfg *config.Config, kubeconfig, output string, timeout time.Duration) error {
	checks := diagnose.Checks(cfg, kubeconfig, diagnoseDeps(a))
	results := diagnose.Run(ctx, checks, diagnose.Options{Timeout: timeout})
	if output == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"checks": results, "failed": diagnose.Failed(results)}); err != nil {
			return engine.Classify(engine.ClassOutput, err)
		}
	} else if err := diagnose.WriteTable(a.stdout, results); err != nil {
		return engine.Classify(engine.ClassOutput, err)
	}
	if n := diagnose.Failed(results); n > 0 {
		return engine.Classify(engine.ClassCheck, fmt.Errorf("%d of %d check(s) failed", n, len(results)))
	}
	return nil
}
