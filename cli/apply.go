package cli

import (
	"time"

	"slices"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/engine"
)

func init() { register((*app).applyCommand) }

func (a *app) applyCommand() *cobra.Command {
	var (
		snapshot, kubeconfig, dryRun, output string
		forceConflicts, allowMassPrune       bool
		noOrders, noKeycloak                 bool
		qps                                  float32
		timeout                              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "apply --config C [--kubeconfig K] [--dry-run=server] [--force-conflicts] [--snapshot S]",
		Short: "Server-side apply the rendered state straight into the clusters",
		Long: `Apply runs the whole cycle with the clusters in place of the GitOps
repository: read Waldur (or a snapshot), approve the pending-provider orders,
render, server-side apply every rendered object with the field manager
"waldur-gitops" (Namespaces first, then other cluster-scoped objects, then
namespaced ones), prune what is no longer rendered, reconcile the Keycloak
groups, and set the executing orders done once their tenant is applied — or
erred with the API server's message when it refused an object. --no-orders and
--no-keycloak leave those stages out; a snapshot never moves orders.

Objects labelled app.kubernetes.io/managed-by=waldur-gitops for a configured
offering that are no longer rendered are deleted (namespaced ones first,
Namespaces last), unless that would remove more tenants than deletion_guard
allows. Objects without the label are never touched, nor are those of
resources the renderer skipped.

Each object is reported as created, configured, unchanged, deleted or skipped.
A field another field manager owns is a conflict, reported and not taken over
unless --force-conflicts is given. A tenant needing a kind its cluster does not
serve (a missing CRD) is left alone and named; the others are applied.

The cluster of each offering is backend_settings.kubeconfig_path (and
management_kubeconfig_path for Rancher's management objects), else client-go's
defaults: $KUBECONFIG, ~/.kube/config, the in-cluster service account.
--kubeconfig replaces all of them. With --dry-run=server the API server checks
and reports every change and stores nothing, and Waldur and Keycloak are only
read; the exit code is then 1 when something would change. See docs/apply.md.`,
		Example: `  # what the API server would change, storing nothing (exit 1 when something would)
  waldur-gitops apply --config site.yaml --dry-run=server

  # the whole cycle into the clusters of the config's kubeconfig keys
  waldur-gitops apply --config site.yaml

  # one kubeconfig for every offering, without touching Waldur orders or Keycloak
  waldur-gitops apply --config site.yaml --kubeconfig ~/.kube/config --no-orders --no-keycloak`,
		Args: dryRunArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var server bool
			switch dryRun {
			case "none", "":
			case "server":
				server = true
			case "client":
				return usageErr("--dry-run=client is not supported: use --dry-run=server, which the API server checks")
			default:
				return usageErr("--dry-run must be server or none, got %q", dryRun)
			}
			f, err := outputFormat(output)
			if err != nil {
				return err
			}
			w := engine.Options{Snapshot: snapshot, Publish: engine.Cluster, Orders: !noOrders, Announce: true, Identities: !noKeycloak, Feedback: true}
			w.Apply.Kubeconfig, w.Apply.ForceConflicts, w.Apply.QPS = kubeconfig, forceConflicts, qpsOption(qps)
			return a.runVerb(cmd.Context(), verb{
				wire: w, req: engine.Request{Command: "apply", DryRun: server, AllowMassPrune: allowMassPrune},
				show: a.showApplied(f, server), report: true, push: true, timeout: timeout,
			})
		},
	}
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "read Waldur state from this snapshot file instead of the API")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "use this kubeconfig for every offering, instead of the config's kubeconfig keys")
	cmd.Flags().StringVar(&dryRun, "dry-run", "none", `"server": the API server validates and reports every change, nothing is stored`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "server"
	cmd.Flags().BoolVar(&forceConflicts, "force-conflicts", false, "take over fields another field manager owns instead of reporting the conflict")
	cmd.Flags().BoolVar(&allowMassPrune, "allow-mass-prune", false, "let this run remove more tenants than deletion_guard allows")
	cmd.Flags().BoolVar(&noOrders, "no-orders", false, "neither approve nor finish Waldur orders (apply only)")
	cmd.Flags().BoolVar(&noKeycloak, "no-keycloak", false, "do not reconcile the Keycloak groups of offerings with keycloak_enabled")
	cmd.Flags().Float32Var(&qps, "qps", 100, "requests per second to each cluster, bursts of twice that (0: no client-side limit)")
	outputFlag(cmd, &output, "one line per object that changes; json and yaml: the run report")
	timeoutFlag(cmd, &timeout)
	return cmd
}

// qpsOption maps --qps to apply.Options.QPS, where 0 means the default and a
// negative rate no limit.
func qpsOption(q float32) float32 {
	if q <= 0 {
		return -1
	}
	return q
}

// dryRunArgs takes no arguments, and says how to write the dry-run mode when
// it was given apart from --dry-run, which takes it only after "=".
func dryRunArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 && cmd.Flags().Changed("dry-run") && slices.Contains([]string{"server", "client", "none"}, args[0]) {
		return usageErr("--dry-run %s: write --dry-run=%s (with =); without it %q is taken as an argument", args[0], args[0], args[0])
	}
	return cobra.NoArgs(cmd, args)
}
