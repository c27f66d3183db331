// Package cli wires the waldur-gitops commands: flags, logging and exit codes.
// The work itself is done by the pipeline packages.
package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/show"
	"github.com/waldur/waldur-gitops/stop"
)

// Exit codes, documented in README.md: the one table of package failure.
const (
	ExitOK          = failure.ExitOK
	ExitDiff        = failure.ExitDiff
	ExitUsage       = failure.ExitUsage
	ExitPartial     = failure.ExitPartial
	ExitWaldur      = failure.ExitWaldur
	ExitOutput      = failure.ExitOutput
	ExitGit         = failure.ExitGit
	ExitGuard       = failure.ExitGuard
	ExitKeycloak    = failure.ExitKeycloak
	ExitCluster     = failure.ExitCluster
	ExitCheckFailed = failure.ExitCheckFailed
	ExitApply       = failure.ExitApply
	ExitDeadline    = failure.ExitDeadline
	ExitInterrupted = failure.ExitInterrupted
	ExitTerminated  = failure.ExitTerminated
)

// usageErr is a flag or config problem found before the engine runs.
func usageErr(format string, args ...any) error {
	return failure.Errorf(failure.ClassConfig, format, args...)
}

// app holds what every command shares.
type app struct {
	stdout, stderr io.Writer
	configPath     string
	logLevel       string
	log            *slog.Logger
	// errSink carries the logs and the progress to stderr (errOut).
	errSink *show.LineSink
	// warned holds the config warnings logged already: serve loads the
	// config at every run and says each once.
	warned map[string]bool
}

// Main runs the CLI with args and returns the process exit code. SIGINT
// and SIGTERM stop the run in progress (see run); a second one ends the
// process at once.
func Main(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return runMain(args, stdout, stderr, sigs, func(code int) {
		fmt.Fprintln(stderr, "second interrupt: exiting now")
		os.Exit(code)
	})
}

// runMain is Main with the signals it listens to and what a second signal does
// (tests send their own). The first signal cancels the command's context
// with an stop.Stopped cause: a one-shot command stops the stage in
// progress at its next request, writes its report and exits 130 (SIGINT)
// or 143 (SIGTERM); serve finishes or abandons its run as documented.
func runMain(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal, again func(code int)) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		select {
		case s := <-sigs:
			stop.Interrupt(cancel, s)
		case <-ctx.Done():
			return
		}
		select {
		case s := <-sigs:
			again(failure.ExitCode(&failure.Error{Class: failure.ClassStopped, Err: &stop.Stopped{Kind: stop.BySignal, Signal: s}}))
		case <-ctx.Done():
		}
	}()
	err := interrupted(ctx, root.ExecuteContext(ctx))
	code := failure.ExitCode(err)
	switch {
	case code == ExitOK, code == ExitDiff:
	case stop.OfErr(err) != nil:
		fmt.Fprintln(stderr, redact.String(err.Error())) // the one line of a stopped run
	case code == ExitPartial:
		fmt.Fprintf(stderr, "warning: %s\n", redact.String(err.Error()))
	default:
		fmt.Fprintf(stderr, "error: %s\n", redact.String(err.Error()))
	}
	return code
}

// interrupted makes the failure of a command that a signal cut short, before
// or outside the engine's stages, the interrupt's: the exit code then says
// what happened. A command that ended well stays so (serve stops cleanly).
func interrupted(ctx context.Context, err error) error {
	s := stop.Of(ctx)
	if err == nil || s == nil || stop.OfErr(err) != nil {
		return err
	}
	return &failure.Error{Class: failure.ClassStopped, Err: fmt.Errorf("%w: %w", s, err)}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "waldur-gitops",
		Short: "Render Waldur marketplace state into GitOps manifests",
		Long: `waldur-gitops turns Waldur marketplace state into Kubernetes tenants: it renders
the manifests, commits them to a GitOps repository (or applies them), reconciles
the Keycloak groups, and moves Waldur's orders.

The commands in the order a first hour takes them: render (and render
--dry-run) to look, snapshot to record a state, diagnose to check every
credential, then sync (GitOps) or apply (direct) to run the cycle, keycloak and
report for one stage alone, and serve to run it on an interval.

Documentation: docs/README.md (installing, every config key, troubleshooting
by error message).`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           version.String(),
		PersistentPreRunE: func(*cobra.Command, []string) error { return checkLogLevel(a.logLevel) },
	}
	root.PersistentFlags().StringVarP(&a.configPath, "config", "c", "", "config file (YAML)")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warning, error (default: the config's log_level, else info)")
	_ = root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions(logLevels, cobra.ShellCompDirectiveNoFileComp))
	cobra.EnableCommandSorting = false
	var cmds []*cobra.Command
	for _, c := range commands {
		cmds = append(cmds, c(a))
	}
	slices.SortStableFunc(cmds, func(x, y *cobra.Command) int { return cmp.Compare(workflowRank(x.Name()), workflowRank(y.Name())) })
	root.AddCommand(cmds...)
	return root
}

// workflow is the order the root help lists the commands in: the order a
// newcomer takes them; unknown ones go last.
var workflow = []string{"render", "snapshot", "diagnose", "sync", "apply", "keycloak", "report", "serve", "status", "version"}

func workflowRank(name string) int {
	if i := slices.Index(workflow, name); i >= 0 {
		return i
	}
	return len(workflow)
}

// commands holds the subcommand constructors; every command's file registers
// its own in init, so adding a command touches no other file.
var commands []func(*app) *cobra.Command

func register(c func(*app) *cobra.Command) { commands = append(commands, c) }
