package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// keycloakFlags are the flags of the keycloak command.
type keycloakFlags struct {
	snapshot       string
	dryRun         bool
	noDelete       bool
	allowMassPrune bool
	output         string
}

func init() { register((*app).keycloakCommand) }

func (a *app) keycloakCommand() *cobra.Command {
	var f keycloakFlags
	cmd := &cobra.Command{
		Use:   "keycloak --config C [--snapshot state.json] [--dry-run] [--no-delete] [--output json]",
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
exit code is 3; a Keycloak failure exits with 8 and the next run picks up what
was left.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runKeycloak(cmd.Context(), f) },
	}
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "read Waldur state from this snapshot file instead of the API")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "read Keycloak and print the operations, make none (exit 1 if there are any)")
	cmd.Flags().BoolVar(&f.noDelete, "no-delete", false, "create and add only: keep groups no resource needs")
	cmd.Flags().BoolVar(&f.allowMassPrune, "allow-mass-prune", false, "let this run delete the groups of more resources than deletion_guard allows")
	cmd.Flags().StringVar(&f.output, "output", "text", "output format: text (human) or json (the run report)")
	return cmd
}

func (a *app) runKeycloak(ctx context.Context, f keycloakFlags) error {
	if f.output != "text" && f.output != "json" {
		return withCode(ExitUsage, fmt.Errorf("--output must be text or json, got %q", f.output))
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if len(keycloak.Targets(cfg.Config)) == 0 {
		a.log.Info("no offering has keycloak_enabled: nothing to reconcile")
		return nil
	}
	ctx, calls := waldur.WithTally(ctx)
	rep := report.New("keycloak", version.String(), f.dryRun, time.Now())
	var st *waldur.State
	var res *render.Result
	stages := []struct {
		name string
		run  func() (changeset.Set, map[string]int, error)
	}{
		{"waldur", func() (changeset.Set, map[string]int, error) {
			st, err = readState(ctx, cfg.Config, f.snapshot, a.log)
			return changeset.Set{}, nil, err
		}},
		{"render", func() (changeset.Set, map[string]int, error) {
			tpls, err := render.LoadTemplates(cfg.Config)
			if err != nil {
				return changeset.Set{}, nil, withCode(ExitUsage, err)
			}
			if res, err = render.New(cfg.Config, tpls).Render(st); err != nil {
				return changeset.Set{}, nil, withCode(ExitUsage, err)
			}
			return res.Changes, nil, nil
		}},
		{"keycloak", func() (changeset.Set, map[string]int, error) {
			return a.keycloakStage(ctx, cfg.Config, res, keycloakRun{dryRun: f.dryRun, noDelete: f.noDelete, allowMassPrune: f.allowMassPrune})
		}},
	}
	var runErr error
	for _, s := range stages {
		if runErr = rep.Record(s.name, s.run); runErr != nil {
			break
		}
	}
	changes := changeset.Set{Entries: rep.Changes}
	if runErr == nil {
		runErr = keycloakOutcome(changes, f.dryRun)
	}
	rep.Finish(exitCode(runErr), time.Now())
	if err := a.keycloakOutput(cfg, rep, f); err != nil && runErr == nil {
		runErr = withCode(ExitRender, err)
		rep.ExitCode = ExitRender // for the metrics: the process exits with it
	}
	if !f.dryRun {
		a.pushMetrics(ctx, cfg, rep, calls.Stats())
	}
	return runErr
}

// keycloakOutcome picks the exit of a run that did not fail: 3 when resources
// or Keycloak items were skipped, then 1 for a dry run with changes.
func keycloakOutcome(changes changeset.Set, dryRun bool) error {
	var render, kc int
	for _, e := range changes.ByAction(changeset.Skip) {
		if e.Stage == keycloak.Stage {
			kc++
		} else {
			render++
		}
	}
	switch {
	case render > 0 || kc > 0:
		var parts []string
		if render > 0 {
			parts = append(parts, fmt.Sprintf("%d resource(s)", render))
		}
		if kc > 0 {
			parts = append(parts, fmt.Sprintf("%d Keycloak group(s) or membership(s)", kc))
		}
		return withCode(ExitPartial, fmt.Errorf("%s skipped (listed in the output), the rest reconciled", strings.Join(parts, " and ")))
	case dryRun && changes.Changed():
		return withCode(ExitDiff, errors.New("differences found"))
	}
	return nil
}

// keycloakOutput writes the run report to the config's report file (not for a
// dry run) and prints it: the JSON report, or for people the operations and a
// summary.
func (a *app) keycloakOutput(cfg *config.Loaded, rep *report.Run, f keycloakFlags) error {
	if cfg.Report != "" && !f.dryRun {
		var b strings.Builder
		if err := rep.WriteJSON(&b); err != nil {
			return err
		}
		if err := writeFileAtomic(cfg.Report, []byte(b.String())); err != nil {
			return fmt.Errorf("write the run report: %w", err)
		}
	}
	if f.output == "json" {
		return rep.WriteJSON(a.stdout)
	}
	if !f.dryRun {
		return rep.WriteSummary(a.stdout)
	}
	changes := changeset.Set{Entries: rep.Changes}
	for _, e := range changes.Entries {
		if e.Action != changeset.Unchanged {
			fmt.Fprintln(a.stdout, e.String())
		}
	}
	kc := changeset.Set{Entries: changes.Filter(func(e changeset.Entry) bool { return e.Stage == keycloak.Stage })}
	fmt.Fprintf(a.stdout, "keycloak (dry run): %s\n", kc.Summary())
	return nil
}

// keycloakRun are the switches of a Keycloak stage.
type keycloakRun struct {
	dryRun, noDelete, allowMassPrune bool
	// inGit is the tree in Git once this run's commit is in; groups of the
	// resources that still have a tenant in it are kept. nil: no Git side (the
	// keycloak command), the render is taken to be what Git has.
	inGit render.Tree
}

// keycloakStage is the Keycloak step of a run that has rendered res: the
// keycloak command's last stage, and sync's after a successful push (with
// the pushed tree as inGit). It returns the change set, the API calls by kind
// and an error that carries the exit code: 2 for unusable connection settings,
// 7 for the deletion guard, 8 for anything else.
func (a *app) keycloakStage(ctx context.Context, cfg *config.Config, res *render.Result, r keycloakRun) (changeset.Set, map[string]int, error) {
	o := keycloak.Options{
		DryRun: r.dryRun, NoDelete: r.noDelete, Log: a.log,
		Guard:         &guard.Options{MaxFraction: *cfg.DeletionGuard.MaxFraction, MinCount: *cfg.DeletionGuard.MinCount, Allow: r.allowMassPrune},
		ClientOptions: keycloak.ClientOptions{UserAgent: version.UserAgent()},
	}
	if r.inGit != nil {
		present := r.inGit.ResourceUUIDs()
		o.InGit = func(u waldur.UUID) bool { return present[u] }
	}
	out, err := keycloak.Reconcile(ctx, cfg, res, o)
	switch {
	case err == nil:
	case errors.Is(err, keycloak.ErrCredentials):
		err = withCode(ExitUsage, err)
	case errors.As(err, new(*guard.Error)):
		err = withCode(ExitGuard, err)
	default:
		err = withCode(ExitKeycloak, err)
	}
	return out.Changes, out.Calls, err
}
