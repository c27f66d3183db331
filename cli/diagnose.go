package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
)

// diagnoseDeps builds the clients of the checks, each bounded by timeout
// (--timeout) per request; tests replace parts of it.
var diagnoseDeps = func(a *app, timeout time.Duration) diagnose.Deps {
	return diagnose.Deps{
		Waldur: func(o *config.Offering) (diagnose.WaldurAPI, error) {
			src := &source.API{Offerings: []config.Offering{*o}, Log: a.log, Tune: func(opts *waldur.ClientOptions) {
				tuneWaldurClient(opts)
				opts.Timeout = timeout
			}}
			c, err := src.Client(o)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Git: diagnose.NewGitRemote,
		Keycloak: func(k config.KeycloakSettings) (diagnose.Keycloak, error) {
			return diagnose.NewKeycloak(k, timeout)
		},
		Cluster: func(s kube.Source) (diagnose.ClusterAPI, error) {
			return diagnose.NewCluster(s, timeout)
		},
	}
}

func init() { register((*app).diagnoseCommand) }

func (a *app) diagnoseCommand() *cobra.Command {
	var kubeconfig, output string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "diagnose --config C [--kubeconfig K] [--timeout 30s] [--output wide|json|yaml]",
		Short: "Check every credential and connection the config names and print a table",
		Long: `Diagnose checks, without changing anything:

  - per offering: the Waldur token (GET /api/users/me/) and the offering
    (GET /api/marketplace-provider-offerings/<uuid>/), including that every
    component usage is reported for exists in Waldur;
  - the GitOps repository: read (the references a fetch sees, and the branch)
    and write (a push session is opened and closed without sending anything;
    hosts refuse it to credentials that may not push);
  - per Keycloak the offerings use: the login, and reading the realm's groups;
  - the cluster of each offering: --kubeconfig, else its
    backend_settings.kubeconfig_path (and management_kubeconfig_path), else
    client-go's default rules ($KUBECONFIG, ~/.kube/config, the pod's service
    account): the server answers, and namespaces and resourcequotas can be
    listed. When the default rules find no cluster at all, the row is skipped.
    For an offering with order_done_on: applied it also asks the server (a
    SelfSubjectAccessReview, as kubectl auth can-i) whether the account may
    read the GitOps consumer: get Flux's kustomizations (git.flux_shards) and
    list Argo CD's applications (git.argocd_namespace);
  - with git.flux_reconcile, the cluster Flux runs in (git.flux_kubeconfig_path,
    or --kubeconfig): the account may patch the GitRepository and, in the OCI
    layout, the OCIRepositories. examples/rbac/consumers has the Roles.

It prints one row per check, 100 columns wide: what it checks, the offerings
it serves, pass, FAIL with the reason, or skip, and under the detail the target
and the credential it tests (the config key and the file or variable it is
read from, never the value); long values are wrapped. -o wide prints one line
per check however long, -o json and -o yaml the results. A check that needs
an earlier one (the offering after the token, the push after the read, the
realm after the login) is skipped when that one failed. --timeout bounds each
check and is the request timeout of every client. The exit code is 10 when any
check failed.`,
		Example: `  # every credential and connection the config names
  waldur-gitops diagnose --config site.yaml

  # with the cluster of a kubeconfig, as JSON
  waldur-gitops diagnose --config site.yaml --kubeconfig ~/.kube/config -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(output, string(fmtWide))
			if err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			return a.runDiagnose(cmd.Context(), cfg.Config, kubeconfig, f, timeout)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "check this cluster instead of the config's kubeconfig keys")
	outputFlag(cmd, &output, "a table 100 columns wide; wide: one line per check", string(fmtWide))
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "time limit of each check, and the request timeout of every client")
	return cmd
}

func (a *app) runDiagnose(ctx context.Context, cfg *config.Config, kubeconfig string, f format, timeout time.Duration) error {
	checks := diagnose.Checks(cfg, kubeconfig, diagnoseDeps(a, timeout))
	results := diagnose.Run(ctx, checks, diagnose.Options{Timeout: timeout})
	var err error
	switch f {
	case fmtJSON, fmtYAML:
		err = writeData(a.stdout, f, map[string]any{"checks": results, "failed": diagnose.Failed(results), "skipped": diagnose.Skipped(results)})
	case fmtWide:
		err = diagnose.WriteWideTable(a.stdout, results)
	default:
		err = diagnose.WriteTable(a.stdout, results)
	}
	if err != nil {
		return failure.Classify(failure.ClassOutput, err)
	}
	if n := diagnose.Failed(results); n > 0 {
		return failure.Classify(failure.ClassCheck, fmt.Errorf("%d of %d check(s) failed, %d skipped", n, len(results), diagnose.Skipped(results)))
	}
	return nil
}
