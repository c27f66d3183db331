package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/keycloak"
)

func init() { register((*app).keycloakCommand) }

func (a *app) keycloakCommand() *cobra.Command {
	var (
		snapshot, output                 string
		dryRun, noDelete, allowMassPrune bool
		timeout                          time.Duration
	)
	cmd := &cobra.Command{
		Use:   "keycloak --config C [--snapshot state.json] [--dry-run] [--no-delete] [--output json|yaml]",
		Short: "Reconcile the Keycloak groups and memberships with the rendered state",
		Long: `Keycloak reads Waldur (or a snapshot), renders, and makes the Keycloak groups
and memberships of every offering with keycloak_enabled match what was
rendered: it creates the missing groups, adds and removes members, and deletes
the groups it made that no resource needs any more. It never touches a group
without its managed_by=waldur-gitops marker. See docs/keycloak.md.

sync runs this step after every successful push; this command runs it alone,
and takes the Git side to be up to date with the render. With --dry-run it
reads Keycloak and prints the operations without making them (exit 1 if there
are any). Users missing in Keycloak and groups in conflict are listed and the
exit code is 3 (as for sync); a Keycloak failure exits with 8 and the next run
picks up what was left.`,
		Example: `  # the operations a run would make, making none (exit 1 when there are any)
  waldur-gitops keycloak --config site.yaml --dry-run

  # create and add only, keep groups no resource needs
  waldur-gitops keycloak --config site.yaml --no-delete`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(output)
			if err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if len(keycloak.Targets(cfg.Config)) == 0 {
				a.log.Info("no offering has keycloak_enabled: nothing to reconcile")
				return nil
			}
			return a.runVerb(cmd.Context(), verb{
				wire: engine.Options{Snapshot: snapshot, Identities: true},
				req:  engine.Request{Command: "keycloak", DryRun: dryRun, NoDelete: noDelete, AllowMassPrune: allowMassPrune},
				show: a.showKeycloak(f, dryRun), report: true, push: true, timeout: timeout,
			})
		},
	}
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "read Waldur state from this snapshot file instead of the API")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "read Keycloak and print the operations, make none (exit 1 if there are any)")
	cmd.Flags().BoolVar(&noDelete, "no-delete", false, "create and add only: keep groups no resource needs")
	cmd.Flags().BoolVar(&allowMassPrune, "allow-mass-prune", false, "let this run delete the groups of more resources than deletion_guard allows")
	outputFlag(cmd, &output, "the operations or a summary; json and yaml: the run report")
	timeoutFlag(cmd, &timeout)
	return cmd
}
