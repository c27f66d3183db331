package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/localtree"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// renderFlags are the flags of the render command.
type renderFlags struct {
	snapshot       string
	out            string
	output         string
	dryRun         bool
	allowMassPrune bool
}

func init() { register((*app).renderCommand) }

func (a *app) renderCommand() *cobra.Command {
	var f renderFlags
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
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runRender(cmd, f) },
	}
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "render from this snapshot file instead of the Waldur API")
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "write the tree to this directory (replaced atomically)")
	cmd.Flags().StringVar(&f.output, "output", "yaml", "output format: yaml (human) or json (machines)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "compare with the GitOps repository and show the diff; exit 1 on differences")
	cmd.Flags().BoolVar(&f.allowMassPrune, "allow-mass-prune", false, "with --dry-run: show the plan as sync --allow-mass-prune would make it")
	return cmd
}

// renderReport is the JSON output of render.
type renderReport struct {
	Out     string                   `json:"out,omitempty"`
	Summary map[changeset.Action]int `json:"summary"`
	Changes []changeset.Entry        `json:"changes"`
	Tenants []tenantJSON             `json:"tenants,omitempty"`
	Groups  []render.Group           `json:"groups"`
}

type tenantJSON struct {
	Dir      string            `json:"dir"`
	Offering string            `json:"offering"`
	Resource waldur.UUID       `json:"resource"`
	Orders   []waldur.UUID     `json:"orders,omitempty"`
	Objects  []manifest.Object `json:"objects"`
}

func (a *app) runRender(cmd *cobra.Command, f renderFlags) error {
	if !slices.Contains([]string{"yaml", "json"}, f.output) {
		return withCode(ExitUsage, fmt.Errorf("--output must be yaml or json, got %q", f.output))
	}
	if f.dryRun {
		if f.out != "" {
			return withCode(ExitUsage, errors.New("--dry-run compares with the GitOps repository and writes nothing: drop --out"))
		}
		return a.runSync(cmd.Context(), "render", syncFlags{snapshot: f.snapshot, dryRun: true, allowMassPrune: f.allowMassPrune, json: f.output == "json"})
	}
	if f.allowMassPrune {
		return withCode(ExitUsage, errors.New("--allow-mass-prune only goes with --dry-run here (or with sync)"))
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	st, err := readState(cmd.Context(), cfg.Config, f.snapshot, a.log)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := render.New(cfg.Config, tpls).Render(st)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	a.log.Info("rendered", "tenants", len(res.Tenants), "groups", len(res.Groups), "skipped", len(res.Skipped), "duration", time.Since(start).Round(time.Millisecond).String())
	changes := res.Changes
	if f.out != "" {
		prev, err := localtree.Read(f.out)
		if err != nil {
			return withCode(ExitRender, err)
		}
		tree := res.Tree(prev)
		changes.Merge(res.Compare(prev, tree))
		if tree.Equal(prev) {
			a.log.Info("output unchanged, nothing written", "dir", f.out)
		} else if err := localtree.Write(f.out, tree); err != nil {
			return withCode(ExitRender, err)
		}
	}
	changes.Sort()
	if err := a.printRender(f, res, changes); err != nil {
		return err
	}
	for _, e := range changes.ByAction(changeset.Skip) {
		fmt.Fprintf(a.stderr, "skipped %s: %s\n", e.Subject, e.Reason)
	}
	if len(res.Skipped) > 0 {
		return withCode(ExitPartial, fmt.Errorf("%d resource(s) skipped, the rest rendered", len(res.Skipped)))
	}
	return nil
}

func (a *app) printRender(f renderFlags, res *render.Result, changes changeset.Set) error {
	if f.output == "json" {
		rep := renderReport{Out: f.out, Summary: changes.Counts(), Changes: changes.Entries, Groups: res.Groups}
		if rep.Changes == nil {
			rep.Changes = []changeset.Entry{}
		}
		if f.out == "" {
			for _, t := range res.Tenants {
				rep.Tenants = append(rep.Tenants, tenantJSON{Dir: t.Dir, Offering: t.Offering, Resource: t.Resource, Orders: t.Orders, Objects: t.Objects})
			}
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if f.out == "" {
		_, err := a.stdout.Write(res.Stream())
		return err
	}
	for _, e := range changes.Entries {
		if e.Action != changeset.Unchanged && e.Action != changeset.Skip {
			fmt.Fprintln(a.stdout, e.String())
		}
	}
	fmt.Fprintf(a.stdout, "%s: %s\n", f.out, changes.Summary())
	return nil
}
