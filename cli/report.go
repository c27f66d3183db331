package cli

import (
	"context"

	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/usage"
	"github.com/waldur/waldur-gitops/waldur/source"
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
	if f.snapshot != "" && !f.dryRun {
		return usageErr("--snapshot goes with --dry-run: usage is posted only from what the Waldur API says now")
	}
	return a.runVerb(ctx, verb{
		wire:    engine.Options{Snapshot: f.snapshot, Announce: true},
		req:     engine.Request{Command: "report", DryRun: f.dryRun},
		show:    a.showReport(out),
		push:    true,
		timeout: f.timeout,
		prepare: func(cfg *config.Loaded, w *engine.Options) (err error) {
			w.Usage, err = a.usageReporter(cfg, f)
			return err
		},
	})
}

// usageReporter is the usage reporter of the config: every offering with
// its Waldur (the API, or the snapshot of a dry run) and its cluster.
func (a *app) usageReporter(cfg *config.Loaded, f reportFlags) (*usage.Reporter, error) {
	rp, err := usage.NewReporter(cfg.Config, usage.Setup{
		Snapshot: f.snapshot, Kubeconfig: f.kubeconfig, DryRun: f.dryRun, Now: reportNow, Log: a.log, OpenCluster: openUsageCluster,
		Client: func(o *config.Offering) (usage.Waldur, error) { // as the engine builds it
			return (&source.API{Offerings: []config.Offering{*o}, Log: a.log, Tune: tuneWaldurClient}).Client(o)
		},
	})
	if err != nil {
		return nil, usageErr("%w", err)
	}
	return rp, nil
}
