package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/engine"
)

func init() { register((*app).syncCommand) }

func (a *app) syncCommand() *cobra.Command {
	var (
		snapshot, output, kubeconfig           string
		dryRun, allowMassPrune, validateServer bool
		timeout                                time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sync --config C [--snapshot state.json] [--dry-run] [--allow-mass-prune]",
		Short: "Render Waldur state and commit it to the GitOps repository",
		Long: `Sync runs the whole cycle: read Waldur (or a snapshot), approve the
pending-provider orders (auto_approve), render, optionally validate every
object with a server-side dry run (--validate-server), check the mass-deletion
guard, commit the rendered tree to git.path on git.branch of git.url and push,
reconcile the Keycloak groups, and finally mark the executing orders whose
effect is now in Git done (or erred). An unchanged tree makes no commit. A push
that loses a race with another writer is redone on the new tip
(git.push_retries times); nothing is ever force-pushed. A Keycloak failure
fails the run but never reverts the commit, and the orders still advance.

The run report (stages, durations, counts, the commit) goes to the config's
report file, and to stdout as JSON with --output json; otherwise a summary is
printed. With --dry-run nothing is committed or written: the output is that of
render --dry-run.`,
		Example: `  # what would change, without changing anything (exit 1 when something would)
  waldur-gitops sync --config site.yaml --dry-run

  # the whole cycle, the run report as JSON on stdout
  waldur-gitops sync --config site.yaml -o json

  # offline, from a recorded state: no order moves
  waldur-gitops sync --config site.yaml --snapshot state.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(output)
			if err != nil {
				return err
			}
			v := verb{
				wire: engine.Options{Snapshot: snapshot, Publish: engine.Git, Orders: true, Announce: true, Identities: true, ValidateServer: validateServer, Feedback: true},
				req:  engine.Request{Command: "sync", DryRun: dryRun, AllowMassPrune: allowMassPrune},
				show: a.showReport(f), report: true, push: true, timeout: timeout,
			}
			v.wire.Apply.Kubeconfig = kubeconfig
			if dryRun {
				v.show = a.showPlan(f)
			}
			return a.runVerb(cmd.Context(), v)
		},
	}
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "read Waldur state from this snapshot file instead of the API")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be committed (exit 1 if anything), change nothing")
	cmd.Flags().BoolVar(&allowMassPrune, "allow-mass-prune", false, "let this run remove more tenants than deletion_guard allows")
	outputFlag(cmd, &output, "a summary, or the diff with --dry-run; json and yaml: the run report, or the change set with --dry-run")
	cmd.Flags().BoolVar(&validateServer, "validate-server", false, "server-side dry-run every rendered object before committing; a rejected object blocks the commit")
	timeoutFlag(cmd, &timeout)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig for --validate-server (default: the config's kubeconfig keys, then client-go's rules)")
	return cmd
}
