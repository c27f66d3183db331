package cli

import (
	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/engine"
)

func init() { register((*app).renderCommand) }

func (a *app) renderCommand() *cobra.Command {
	var (
		snapshot, out, output  string
		dryRun, allowMassPrune bool
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

With --dry-run the rendered tree is compared with git.path on git.branch of the
GitOps repository (git.url): the unified diff and a per-tenant summary are
printed (the change set as JSON with --output json), nothing is written
anywhere, and the exit code is 0 without differences, 1 with, 2 or more on
error (7 when the deletion guard would refuse the sync).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "yaml" && output != "json" {
				return usageErr("--output must be yaml or json, got %q", output)
			}
			asJSON := output == "json"
			req := engine.Request{Command: "render", DryRun: dryRun, AllowMassPrune: allowMassPrune}
			switch {
			case dryRun && out != "":
				return usageErr("--dry-run compares with the GitOps repository and writes nothing: drop --out")
			case dryRun:
				return a.runVerb(cmd.Context(), verb{
					wire: engine.Options{Snapshot: snapshot, Publish: engine.Git, Orders: true, Identities: true},
					req:  req, show: a.showPlan(asJSON),
				})
			case allowMassPrune:
				return usageErr("--allow-mass-prune only goes with --dry-run here (or with sync)")
			}
			w := engine.Options{Snapshot: snapshot}
			if out != "" {
				w.Publish, w.Dir = engine.Directory, out
			}
			return a.runVerb(cmd.Context(), verb{wire: w, req: req, show: a.showRender(out, asJSON)})
		},
	}
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "render from this snapshot file instead of the Waldur API")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the tree to this directory (replaced atomically)")
	cmd.Flags().StringVar(&output, "output", "yaml", "output format: yaml (human) or json (machines)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "compare with the GitOps repository and show the diff; exit 1 on differences")
	cmd.Flags().BoolVar(&allowMassPrune, "allow-mass-prune", false, "with --dry-run: show the plan as sync --allow-mass-prune would make it")
	return cmd
}
