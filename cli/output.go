package cli

import (
	"io"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/show"
)

// Everything a command prints about a run is read from the engine's outcome:
// the report (stages, change set, commit, exit code) and what the stages left.

// showReport prints the run report: as JSON or YAML, or as the one-screen summary.
func (a *app) showReport(f format) func(*config.Loaded, *engine.Outcome) error {
	return func(_ *config.Loaded, out *engine.Outcome) error {
		if f.data() {
			return writeData(a.stdout, f, out.Report)
		}
		return out.Report.WriteSummary(a.stdout)
	}
}

// output is how the commands show an outcome: on stdout, in format f.
func (a *app) output(f format) show.Output {
	o := show.Output{W: a.stdout, Colour: colourOK(a.stdout), Log: a.log}
	if f.data() {
		o.Data = func(v any) error { return writeData(a.stdout, f, v) }
	}
	return o
}

// planJSON is the machine output of a dry run against the GitOps repository.
type planJSON = show.Plan

// showPlan prints what a sync would do (show.Output.Plan).
func (a *app) showPlan(f format) func(*config.Loaded, *engine.Outcome) error {
	return func(cfg *config.Loaded, out *engine.Outcome) error { return a.output(f).Plan(cfg.Git, out) }
}

// showRender prints a render (show.Output.Render).
func (a *app) showRender(dir string, f format) func(*config.Loaded, *engine.Outcome) error {
	return func(_ *config.Loaded, out *engine.Outcome) error { return a.output(f).Render(dir, out) }
}

// showApplied prints an apply (show.Output.Applied).
func (a *app) showApplied(f format, dryRun bool) func(*config.Loaded, *engine.Outcome) error {
	return func(_ *config.Loaded, out *engine.Outcome) error { return a.output(f).Applied(dryRun, out) }
}

// showKeycloak prints a keycloak run (show.Output.Keycloak).
func (a *app) showKeycloak(f format, dryRun bool) func(*config.Loaded, *engine.Outcome) error {
	return func(_ *config.Loaded, out *engine.Outcome) error { return a.output(f).Keycloak(dryRun, out) }
}

// format is a value of -o/--output.
type format string

const (
	fmtText format = "text"
	fmtJSON format = "json"
	fmtYAML format = "yaml"
	fmtWide format = "wide"
)

// outputFormats are the values of -o: text, json, yaml and those of extra.
func outputFormats(extra []string) []string {
	return append([]string{string(fmtText), string(fmtJSON), string(fmtYAML)}, extra...)
}

// data reports whether f is a machine format: json or yaml.
func (f format) data() bool { return f == fmtJSON || f == fmtYAML }

// writeData prints v in the machine format f (show.WriteData).
func writeData(w io.Writer, f format, v any) error { return show.WriteData(w, f == fmtYAML, v) }
