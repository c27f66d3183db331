package cli

import (
	"context"
	"errors"

	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/usage"
	"github.com/waldur/waldur-gitops/waldur"
)

// reportFlags are the flags of the report command.
type reportFlags struct {
	kubeconfig string
	snapshot   string
	dryRun     bool
	output     string
	timeout    time.Duration
}

// openUsageCluster opens the cluster measured usage is read from; tests
// replace it.
var openUsageCluster = func(s kube.Source) (usage.Cluster, error) { return kube.Open(s) }

// reportNow is the report's clock; tests replace it.
var reportNow = time.Now

func init() { register((*app).reportCommand) }

func (a *app) reportCommand() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:     "report --config C [--kubeconfig K] [--dry-run [--snapshot state.json]]",
		Aliases: []string{"usage"},
		Short:   "Post the usage report: month-to-date component usage to Waldur (set_usage)",
		Long: `Report (alias: usage) makes the usage report: it posts the month-to-date usage
of every resource in state OK, Updating or Terminating that has a tenant,
dated the first instant of the billing month in the config's time zone. The
state read is rendered as sync renders it: a resource the renderer skips is
not billed, and with a cluster (measured components, --kubeconfig or
kubeconfig_path) neither is one whose namespace does not exist there; each is
listed as skipped with the reason.

  - components with accounting_type limit: the allocation in effect (the limit
    the renderer puts into the quota); with usage.allocation peak (default)
    the month's highest, with time_weighted unit-hours (each allocation × the
    hours it held);
  - components with accounting_type usage and measured_from: unit-hours of that
    ResourceQuota status.used key in the tenant's namespaces (core-hours,
    GiB-hours, count-hours), accumulated between reports. The running total and
    the last sample are kept in Waldur's usage record, so nothing is stored
    locally. The cluster is --kubeconfig, else backend_settings.kubeconfig_path
    and kubeconfig_context, else client-go's default rules.

Values that did not change are not posted. Run it periodically (every 15 to 60
minutes): the last sample is assumed to hold until the next report. With
--dry-run nothing is posted and the exit code is 1 when something would be.
--dry-run --snapshot state.json reads the resources and orders from a snapshot
instead of the API (offline, as render --snapshot does); a snapshot holds no
usage records, so it shows what the month's first report would post. The usage
report is not the run report that sync, apply and keycloak write. See
docs/orders.md.`,
		Example: `  # what would be posted, posting nothing (exit 1 when something would)
  waldur-gitops report --config site.yaml --dry-run

  # post the month-to-date usage (also as: waldur-gitops usage)
  waldur-gitops report --config site.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runReport(cmd.Context(), f) },
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "read measured usage from this cluster for every offering, instead of the config's kubeconfig keys")
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "with --dry-run: read the resources and orders from this snapshot file instead of the Waldur API")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "compute and show the reports, post nothing (exit 1 if anything would be posted)")
	outputFlag(cmd, &f.output, "a summary; json and yaml: the report of this run")
	timeoutFlag(cmd, &f.timeout)
	return cmd
}

func (a *app) runReport(ctx context.Context, f reportFlags) error {
	out, err := outputFormat(f.output)
	if err != nil {
		return err
	}
	if f.timeout < 0 {
		return usageErr("--timeout must not be negative, got %s", f.timeout)
	}
	if f.snapshot != "" && !f.dryRun {
		return usageErr("--snapshot goes with --dry-run: usage is posted only from what the Waldur API says now")
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if err := metricsPreflight(cfg, !f.dryRun); err != nil {
		return err
	}
	var snap *waldur.Snapshot
	if f.snapshot != "" {
		if snap, err = waldur.LoadSnapshot(f.snapshot); err != nil {
			return usageErr("--snapshot: %w", err)
		}
	}
	loc, err := time.LoadLocation(cfg.Timezone)
	if err != nil {
		return usageErr("timezone: %w", err)
	}
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		return engine.Classify(engine.ClassConfig, err)
	}
	ctx, calls := waldur.WithTally(ctx)
	ctx, cancel := runContext(ctx, runTimeout(f.timeout, cfg, config.DefaultRunTimeout))
	defer cancel()
	rp := &usage.Reporter{Config: cfg.Config, Templates: tpls, Location: loc, DryRun: f.dryRun, Now: reportNow, Log: a.log}
	for i := range cfg.Offerings {
		uo, err := a.usageOffering(&cfg.Offerings[i], snap, f)
		if err != nil {
			return err
		}
		rp.Offerings = append(rp.Offerings, uo)
	}
	rep := report.New("report", version.String(), f.dryRun, time.Now())
	var cut engine.Cut
	if snap == nil && cut.Before(ctx, "agent") {
		// Seen in Waldur as the site agent's report service, like the other modes.
		ann := &engine.AgentAnnouncer{Source: &engine.APISource{Offerings: cfg.Offerings, Log: a.log, Tune: tuneWaldurClient}, Offerings: cfg.Offerings, Log: a.log}
		_ = rep.Record("agent", func() (changeset.Set, map[string]int, error) { return ann.Announce(ctx, nil, "report", f.dryRun) })
		cut.After(ctx, "agent")
	}
	runErr := a.postUsage(ctx, rep, rp, &cut)
	if err := cut.Err(rep, nil); err != nil {
		runErr = err
	}
	changes := changeset.Set{Entries: rep.Changes}
	posts := changeset.Set{Entries: changes.Filter(func(e changeset.Entry) bool { return e.Stage == usage.EntryStage })}
	if runErr == nil && f.dryRun && posts.Changed() {
		runErr = engine.Classify(engine.ClassDiff, errors.New("the dry run would post usage"))
	}
	rep.Finish(engine.ExitCode(runErr), time.Now())
	if !f.dryRun {
		a.pushMetrics(ctx, cfg, rep, calls.Stats())
	}
	if out.data() {
		if err := writeData(a.stdout, out, rep); err != nil && runErr == nil {
			runErr = engine.Classify(engine.ClassOutput, err)
		}
		return runErr
	}
	if err := rep.WriteSummary(a.stdout); err != nil && runErr == nil {
		runErr = engine.Classify(engine.ClassOutput, err)
	}
	return runErr
}

// usageOffering is one offering of the usage report: its Waldur (the API, or
// the snapshot of a dry run) and the cluster its measured components and
// tenants are read from, when there is one.
func (a *app) usageOffering(o *config.Offering, snap *waldur.Snapshot, f reportFlags) (*usage.Offering, error) {
	uo := &usage.Offering{Config: o}
	if snap != nil {
		w, err := usage.FromSnapshot(snap, f.snapshot, o.Name)
		if err != nil {
			return nil, usageErr("%w", err)
		}
		uo.Waldur = w
	} else {
		c, err := a.waldurClient(o)
		if err != nil {
			return nil, engine.Classify(engine.ClassConfig, err)
		}
		uo.Waldur = c
	}
	src := kube.Source{Path: f.kubeconfig}
	if src.Path == "" {
		cs := o.Settings.Common()
		src = kube.Source{Path: cs.KubeconfigPath, Context: cs.KubeconfigContext}
	}
	// Measured components need the cluster; with one named, it also
	// shows which tenants exist, and only those are billed.
	if hasMeasured(o) || src.Path != "" {
		cl, err := openUsageCluster(src)
		switch {
		case err != nil && src.Path == "":
			// Nothing names a cluster and client-go finds none: report
			// the allocations only.
			a.log.Warn("measured components are not reported: no kubeconfig", "offering", o.Name, "error", err)
		case err != nil && hasMeasured(o):
			return nil, usageErr("offering %s: measured components need a cluster: %w", o.Name, err)
		case err != nil:
			return nil, usageErr("offering %s: the usage report checks tenants in the cluster the kubeconfig names, and cannot open it: %w", o.Name, err)
		default:
			uo.Cluster = cl
		}
	}
	return uo, nil
}

// postUsage runs the usage stage, unless the run was stopped before it,
// and classifies its failure.
func (a *app) postUsage(ctx context.Context, rep *report.Run, rp *usage.Reporter, cut *engine.Cut) error {
	if !cut.Before(ctx, usage.EntryStage) {
		return nil
	}
	err := rep.Record(usage.EntryStage, func() (changeset.Set, map[string]int, error) { return rp.Run(ctx) })
	if cut.After(ctx, usage.EntryStage) || err == nil {
		return nil
	}
	var re *usage.ReadError
	var ce *usage.ClusterError
	var rde *usage.RenderError
	switch {
	case errors.As(err, &re):
		return engine.Classify(engine.ClassWaldur, err)
	case errors.As(err, &ce):
		return engine.Classify(engine.ClassCluster, err)
	case errors.As(err, &rde):
		return engine.Classify(engine.ClassConfig, err)
	}
	return engine.Classify(engine.ClassPartial, err)
}

// hasMeasured reports whether an offering has a component measured in the cluster.
func hasMeasured(o *config.Offering) bool {
	for _, c := range o.BackendComponents {
		if c.AccountingType == "usage" && c.MeasuredFrom != "" {
			return true
		}
	}
	return false
}
