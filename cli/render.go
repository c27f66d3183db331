package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/engine"
)

func init() { register((*app).renderCommand) }

func (a *app) renderCommand() *cobra.Command {
	var (
		snapshot, out, output  string
		dryRun, allowMassPrune bool
		timeout                time.Duration
	)
	cmd := &cobra.Command{
		Use:   "render --config C [--snapshot state.json] [--out DIR]",
		Short: "Render the desired manifests from Waldur state",
		Long: `Render reads the Waldur state of every configured offering (from the API, or from
a snapshot with --snapshot) and renders the desired manifests.

With --out DIR the tree is written to DIR atomically (a failed run leaves DIR as
it was) and a per-tenant summary of what changed is printed; without it the
manifests are printed as one YAML stream. Resources that cannot be rendered are
listed on stderr and the exit code is 3; the others are rendered.

With --dry-run render shows what sync would do and changes nothing anywhere.
Like sync it reads Waldur (or the snapshot), the GitOps repository (git.path
on git.branch of git.url), Waldur's open orders (the pending ones it would
approve or reject, the executing ones it would set done or erred; not with
--snapshot) and Keycloak for every offering with keycloak_enabled (the groups
and memberships it would create or remove). A Keycloak realm whose settings
name no credential (no keycloak_password and no client_secret, in any form) is
listed as not read instead of failing the dry run. It prints the unified diff,
a line per changed tenant, Keycloak group and order, and a summary per stage
(the change set as JSON with -o json). Exit 0 without differences, 1 with, 2
or more on error (7 when a guard would refuse the sync).`,
		Example: `  # the bundled example, offline, into out/
  waldur-gitops render --config examples/config.yaml --snapshot examples/snapshot.json --out out

  # what sync would change in Git, Keycloak and Waldur's orders
  waldur-gitops render --config site.yaml --dry-run

  # every rendered object as one YAML stream, or as JSON
  waldur-gitops render --config site.yaml --snapshot state.json
  waldur-gitops render --config site.yaml --snapshot state.json -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(output)
			if err != nil {
				return err
			}
			req := engine.Request{Command: "render", DryRun: dryRun, AllowMassPrune: allowMassPrune}
			switch {
			case dryRun && out != "":
				return usageErr("--dry-run compares with the GitOps repository and writes nothing: drop --out")
			case dryRun:
				return a.runVerb(cmd.Context(), verb{
					wire: engine.Options{Snapshot: snapshot, Publish: engine.Git, Orders: true, Identities: true},
					req:  req, show: a.showPlan(f), timeout: timeout,
				})
			case allowMassPrune:
				return usageErr("--allow-mass-prune only goes with --dry-run here (or with sync)")
			}
			w := engine.Options{Snapshot: snapshot}
			if out != "" {
				w.Publish, w.Dir = engine.Directory, out
			}
			return a.runVerb(cmd.Context(), verb{wire: w, req: req, show: a.showRender(out, f), timeout: timeout})
		},
	}
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "render from this snapshot file instead of the Waldur API")
	cmd.Flags().StringVar(&out, "out", "", "write the tree to this directory (replaced atomically)")
	outputFlag(cmd, &output, "the YAML stream, or the changes with --out or --dry-run; json and yaml: the render report, or the change set with --dry-run")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what sync would change in Git, Keycloak and Waldur's orders; write nothing; exit 1 on differences")
	cmd.Flags().BoolVar(&allowMassPrune, "allow-mass-prune", false, "with --dry-run: show the plan as sync --allow-mass-prune would make it")
	timeoutFlag(cmd, &timeout)
	return cmd
}
