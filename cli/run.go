package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/atomicfile"
	"github.com/waldur/waldur-gitops/internal/unreachable"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/serve"
	"github.com/waldur/waldur-gitops/stop"
	"github.com/waldur/waldur-gitops/waldur"
)

// tuneWaldurClient adjusts the options of every Waldur client the commands
// build; tests shorten the retry waits with it.
var tuneWaldurClient = func(*waldur.ClientOptions) {}

// verb is how one command runs the engine: the seams it wires, the request,
// and how it shows the outcome.
type verb struct {
	wire engine.Options
	req  engine.Request
	// show prints the outcome on stdout; an error is ClassOutput.
	show func(cfg *config.Loaded, out *engine.Outcome) error
	// report writes the run report to the config's report file (not for a dry run).
	report bool
	// quiet (serve) logs the skipped resources instead of printing them.
	quiet bool
	// push sends the run's metrics to the config's Pushgateway (not for a dry run).
	push bool
	// timeout is --timeout: the run's deadline, zero for the config's
	// run_timeout (default config.DefaultRunTimeout).
	timeout time.Duration
	// prepare, when set, completes the wiring from the loaded config
	// before the engine is built (report: its usage reporter).
	prepare func(cfg *config.Loaded, w *engine.Options) error
}

// runVerb loads the config, builds the engine and runs it once: the cycle
// for every command that runs it (sync, render, apply, keycloak, report).
func (a *app) runVerb(ctx context.Context, v verb) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if v.report && !v.req.DryRun && cfg.Report != "" {
		// A report file that cannot be written (a directory, a device, a
		// FIFO) is refused before the run changes anything.
		if err := atomicfile.Check(cfg.Report); err != nil {
			return failure.Classify(failure.ClassOutput, fmt.Errorf("the run report file (report): %w", err))
		}
	}
	if err := pushPreflight(cfg, v); err != nil {
		return err
	}
	ctx, tally := waldur.WithTally(ctx)
	v.wire.DryRun = v.req.DryRun
	if v.prepare != nil {
		if err := v.prepare(cfg, &v.wire); err != nil {
			return err
		}
	}
	eng, err := a.newEngine(cfg, v.wire)
	if err != nil {
		return err
	}
	ctx, cancel := runContext(ctx, runTimeout(v.timeout, cfg, config.DefaultRunTimeout))
	defer cancel()
	out := eng.Run(ctx, v.req)
	err = a.finish(cfg, out, v)
	if v.push && !v.req.DryRun {
		a.pushMetrics(ctx, cfg, out.Report, tally.Stats())
	}
	return err
}

// runContext is the context of one run: bounded by its deadline, and with a
// memory of the hosts found unreachable, so that one dead endpoint costs one
// stage of the run (internal/unreachable).
func runContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return stop.WithDeadline(unreachable.Track(ctx), d)
}

// runTimeout is a run's deadline: --timeout, else the config's run_timeout,
// else def.
func runTimeout(flag time.Duration, cfg *config.Loaded, def time.Duration) time.Duration {
	switch {
	case flag > 0:
		return flag
	case cfg.RunDeadline() > 0:
		return cfg.RunDeadline()
	}
	return def
}

// timeoutFlag registers --timeout, the run's deadline (a negative value is
// refused as the flags are parsed).
func timeoutFlag(cmd *cobra.Command, d *time.Duration) {
	cmd.Flags().Var(stop.Deadline{D: d}, "timeout", "the run's deadline: the stage in progress is cancelled and the run exits 12 with its report (default: the config's run_timeout, else 9m)")
}

// newEngine wires the engine of a verb with the app's logger and test hooks;
// on a terminal it shows each stage as it ends, with the summary's counts.
func (a *app) newEngine(cfg *config.Loaded, o engine.Options) (*engine.Engine, error) {
	o.Log, o.TuneWaldur = a.log, tuneWaldurClient
	e, err := engine.FromConfig(cfg.Config, o)
	if err == nil && isTTY(a.stderr) {
		e.Progress = newProgress(a.errOut(), colourOK(a.stderr)).stage
	}
	return e, err
}

// finish lists the skipped resources, writes the run report and shows the
// outcome. A failure to print or write is ClassOutput unless the run had
// failed already; the report then carries the final exit code.
func (a *app) finish(cfg *config.Loaded, out *engine.Outcome, v verb) error {
	err := out.Err
	fail := func(e error) {
		if e != nil && err == nil {
			err = failure.Classify(failure.ClassOutput, e)
			out.Report.ExitCode = failure.ExitCode(err)
		}
	}
	for _, e := range (changeset.Set{Entries: out.Report.Changes}).ByAction(changeset.Skip) {
		if e.Stage != "render" {
			continue
		}
		if v.quiet {
			a.log.Warn("skipped", "subject", e.Subject, "reason", e.Reason)
		} else {
			fmt.Fprintf(a.stderr, "skipped %s: %s\n", e.Subject, e.Reason)
		}
	}
	if v.report && !v.req.DryRun {
		fail(out.Report.WriteFile(cfg.Report))
	}
	if v.show != nil {
		fail(v.show(cfg, out))
	}
	return err
}

// outputFlag registers -o/--output, the one output-format flag of every
// command: text for people, json or yaml for machines (the same fields; the
// YAML is made from the JSON), and the formats of extra. Shell completion
// offers the values.
func outputFlag(cmd *cobra.Command, output *string, what string, extra ...string) {
	formats := outputFormats(extra)
	cmd.Flags().StringVarP(output, "output", "o", string(fmtText), "output format: "+strings.Join(formats, ", ")+"; text: "+what)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// outputFormat reads -o: text, json or yaml, and the formats of extra.
func outputFormat(output string, extra ...string) (format, error) {
	formats := outputFormats(extra)
	if slices.Contains(formats, output) {
		return format(output), nil
	}
	return fmtText, usageErr("-o/--output must be %s or %s, got %q", strings.Join(formats[:len(formats)-1], ", "), formats[len(formats)-1], output)
}

// pushMetrics pushes the metrics of one finished run to the config's
// Pushgateway, if it names one. A failure is a warning: the run did its work
// and its exit code stays.
func (a *app) pushMetrics(ctx context.Context, cfg *config.Loaded, rep *report.Run, calls waldur.CallStats) {
	if cfg == nil || cfg.Metrics.PushgatewayURL == "" {
		return
	}
	run := metrics.Run{Report: rep, Result: serve.ResultOf(rep.ExitCode), Waldur: calls}
	if err := metrics.PushRun(ctx, &cfg.Metrics, run, version.String()); err != nil {
		a.log.Warn("pushing the run's metrics failed; the exit code is that of the run", "pushgateway", cfg.Metrics.DisplayURL(), "error", err.Error())
		return
	}
	a.log.Debug("pushed the run's metrics", "pushgateway", cfg.Metrics.DisplayURL(), "job", cfg.Metrics.Job)
}
