package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// applyFlags are the flags of the apply command.
type applyFlags struct {
	snapshot       string
	kubeconfig     string
	dryRun         string
	forceConflicts bool
	allowMassPrune bool
	output         string
	qps            float32
}

func init() { register((*app).applyCommand) }

func (a *app) applyCommand() *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "apply --config C [--kubeconfig K] [--dry-run=server] [--force-conflicts] [--snapshot S]",
		Short: "Server-side apply the rendered state straight into the clusters",
		Long: `Apply reads Waldur (or a snapshot), renders, and server-side applies every
rendered object with the field manager "waldur-gitops": Namespaces first, then
other cluster-scoped objects, then namespaced ones. Objects labelled
app.kubernetes.io/managed-by=waldur-gitops for a configured offering that are no
longer rendered are deleted (namespaced ones first, Namespaces last), unless
that would remove more tenants than deletion_guard allows. Objects without the
label are never touched, nor are those of resources the renderer skipped.

Each object is reported as created, configured, unchanged, deleted or skipped.
A field another field manager owns is a conflict, reported and not taken over
unless --force-conflicts is given. A tenant needing a kind its cluster does not
serve (a missing CRD) is left alone and named; the others are applied.

The cluster of each offering is backend_settings.kubeconfig_path (and
management_kubeconfig_path for Rancher's management objects), else client-go's
defaults: $KUBECONFIG, ~/.kube/config, the in-cluster service account.
--kubeconfig replaces all of them. With --dry-run=server the API server checks
and reports every change and stores nothing; the exit code is then 1 when
something would change. See docs/apply.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runApply(cmd, f) },
	}
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "read Waldur state from this snapshot file instead of the API")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "use this kubeconfig for every offering, instead of the config's kubeconfig keys")
	cmd.Flags().StringVar(&f.dryRun, "dry-run", "none", `"server": the API server validates and reports every change, nothing is stored`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "server"
	cmd.Flags().BoolVar(&f.forceConflicts, "force-conflicts", false, "take over fields another field manager owns instead of reporting the conflict")
	cmd.Flags().BoolVar(&f.allowMassPrune, "allow-mass-prune", false, "let this run remove more tenants than deletion_guard allows")
	cmd.Flags().Float32Var(&f.qps, "qps", 100, "requests per second to each cluster, bursts of twice that (0: no client-side limit)")
	cmd.Flags().StringVar(&f.output, "output", "text", "output format: text (one line per object that changes) or json (the run report)")
	return cmd
}

func (a *app) runApply(cmd *cobra.Command, f applyFlags) error {
	var dryRun bool
	switch f.dryRun {
	case "none", "":
	case "server":
		dryRun = true
	case "client":
		return withCode(ExitUsage, errors.New("--dry-run=client is not supported: use --dry-run=server, which the API server checks"))
	default:
		return withCode(ExitUsage, fmt.Errorf("--dry-run must be server or none, got %q", f.dryRun))
	}
	if f.output != "text" && f.output != "json" {
		return withCode(ExitUsage, fmt.Errorf("--output must be text or json, got %q", f.output))
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	ctx, calls := waldur.WithTally(cmd.Context())
	rep := report.New("apply", version.String(), dryRun, time.Now())
	var st *waldur.State
	var res *render.Result
	var applied *apply.Result
	runErr := rep.Record("waldur", func() (changeset.Set, map[string]int, error) {
		st, err = readState(ctx, cfg.Config, f.snapshot, a.log)
		return changeset.Set{}, nil, err
	})
	if runErr == nil {
		runErr = rep.Record("render", func() (changeset.Set, map[string]int, error) {
			res, err = renderState(cfg.Config, st)
			if err != nil {
				return changeset.Set{}, nil, err
			}
			a.log.Info("rendered", "tenants", len(res.Tenants), "skipped", len(res.Skipped))
			return res.Changes, nil, nil
		})
	}
	if runErr == nil {
		runErr = rep.Record(apply.StageApply, func() (changeset.Set, map[string]int, error) {
			opts := apply.Options{
				Kubeconfig: f.kubeconfig, DryRun: dryRun, ForceConflicts: f.forceConflicts, Log: a.log, QPS: qpsOption(f.qps),
				Guard: guard.Options{MaxFraction: *cfg.DeletionGuard.MaxFraction, MinCount: *cfg.DeletionGuard.MinCount, Allow: f.allowMassPrune},
			}
			applied, err = apply.Apply(ctx, cfg.Config, res, opts)
			if errors.As(err, new(*guard.Error)) {
				return applied.Changes, applied.Calls, withCode(ExitGuard, err)
			}
			return applied.Changes, applied.Calls, withCode(ExitApply, err)
		})
	}
	if applied != nil && f.output == "text" {
		printApplied(a, applied.Changes, dryRun)
	}
	switch {
	case runErr != nil:
	case len(res.Skipped) > 0:
		for _, e := range res.Changes.ByAction(changeset.Skip) {
			fmt.Fprintf(a.stderr, "skipped %s: %s\n", e.Subject, e.Reason)
		}
		runErr = withCode(ExitPartial, fmt.Errorf("%d resource(s) skipped by the renderer (their objects are kept), the rest applied", len(res.Skipped)))
	case dryRun && applied.Changes.Changed():
		runErr = withCode(ExitDiff, errors.New("the dry run found changes"))
	}
	rep.Finish(exitCode(runErr), time.Now())
	if err := writeApplyReport(a, cfg, rep, f.output == "json"); err != nil && runErr == nil {
		runErr = withCode(ExitRender, err)
		rep.ExitCode = ExitRender // for the metrics: the process exits with it
	}
	if !dryRun {
		a.pushMetrics(ctx, cfg, rep, calls.Stats())
	}
	return runErr
}

// qpsOption maps --qps to apply.Options.QPS, where 0 means the default and a
// negative rate no limit.
func qpsOption(q float32) float32 {
	if q <= 0 {
		return -1
	}
	return q
}

// renderState loads the templates and renders st.
func renderState(cfg *config.Config, st *waldur.State) (*render.Result, error) {
	tpls, err := render.LoadTemplates(cfg)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	res, err := render.New(cfg, tpls).Render(st)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	return res, nil
}

// applyVerbs are the words kubectl prints for each action.
var applyVerbs = map[changeset.Action]string{
	changeset.Create:    "created",
	changeset.Update:    "configured",
	changeset.Unchanged: "unchanged",
	changeset.Delete:    "deleted",
	changeset.Skip:      "skipped",
}

// printApplied prints a line per object that changed or was skipped, and the counts.
func printApplied(a *app, cs changeset.Set, dryRun bool) {
	suffix := ""
	if dryRun {
		suffix = " (server dry run)"
	}
	for _, e := range cs.Entries {
		switch e.Action {
		case changeset.Unchanged:
		case changeset.Skip:
			fmt.Fprintf(a.stdout, "%s %s%s: %s\n", e.Subject, applyVerbs[e.Action], suffix, e.Reason)
		default:
			fmt.Fprintf(a.stdout, "%s %s%s\n", e.Subject, applyVerbs[e.Action], suffix)
		}
	}
	c := cs.Counts()
	var parts []string
	for _, act := range []changeset.Action{changeset.Create, changeset.Update, changeset.Unchanged, changeset.Delete, changeset.Skip} {
		parts = append(parts, fmt.Sprintf("%d %s", c[act], applyVerbs[act]))
	}
	fmt.Fprintf(a.stdout, "apply%s: %s\n", suffix, strings.Join(parts, ", "))
}

// writeApplyReport writes the run report to the config's report file, and to
// stdout with --output json.
func writeApplyReport(a *app, cfg *config.Loaded, rep *report.Run, toStdout bool) error {
	if cfg.Report != "" {
		var b strings.Builder
		if err := rep.WriteJSON(&b); err != nil {
			return err
		}
		if err := writeFileAtomic(cfg.Report, []byte(b.String())); err != nil {
			return fmt.Errorf("write the run report: %w", err)
		}
	}
	if toStdout {
		return rep.WriteJSON(a.stdout)
	}
	return nil
}
