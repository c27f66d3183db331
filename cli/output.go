package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
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

// planJSON is the machine output of a dry run against the GitOps repository.
type planJSON struct {
	DryRun     bool                                `json:"dry_run"`
	Repository string                              `json:"repository"`
	Branch     string                              `json:"branch"`
	Path       string                              `json:"path"`
	Base       string                              `json:"base,omitempty"`
	Changed    bool                                `json:"changed"`
	Files      []string                            `json:"files"`
	Guard      string                              `json:"guard,omitempty"`
	Summary    map[string]map[changeset.Action]int `json:"summary"`
	Changes    []changeset.Entry                   `json:"changes"`
}

// showPlan prints what a sync would do: for people the unified diff of the
// repository and a per-stage list of changes; for machines the change set.
// Every stage's entries are shown, so the Keycloak operations and the order
// moves appear in the same plan as the diff.
func (a *app) showPlan(f format) func(*config.Loaded, *engine.Outcome) error {
	return func(cfg *config.Loaded, out *engine.Outcome) error {
		pub := out.Published
		if pub == nil {
			return nil // the publish stage did not get to plan: nothing to show
		}
		changes := changeset.Set{Entries: slices.Clone(out.Report.Changes)}
		var stages []string
		for _, e := range changes.Entries {
			if !slices.Contains(stages, e.Stage) {
				stages = append(stages, e.Stage)
			}
		}
		slices.SortStableFunc(changes.Entries, func(x, y changeset.Entry) int {
			return cmp.Or(cmp.Compare(slices.Index(stages, x.Stage), slices.Index(stages, y.Stage)),
				cmp.Compare(x.Subject, y.Subject), cmp.Compare(x.Kind, y.Kind))
		})
		files := gitsync.ChangedFiles(pub.Before, pub.After)
		refused := ""
		if engine.ClassOf(out.Err) == engine.ClassGuard {
			refused = out.Err.Error()
		}
		if f.data() {
			repo, _, _ := strings.Cut(pub.Where, " ")
			p := planJSON{DryRun: true, Repository: repo, Branch: cfg.Git.Branch, Path: cfg.Git.Path, Base: pub.Base,
				Changed: changes.Changed(), Files: files, Guard: refused, Summary: map[string]map[changeset.Action]int{}, Changes: changes.Entries}
			if p.Files == nil {
				p.Files = []string{}
			}
			if p.Changes == nil {
				p.Changes = []changeset.Entry{}
			}
			for _, e := range changes.Entries {
				if p.Summary[e.Stage] == nil {
					p.Summary[e.Stage] = map[changeset.Action]int{}
				}
				p.Summary[e.Stage][e.Action]++
			}
			return writeData(a.stdout, f, p)
		}
		w := a.stdout
		if err := gitsync.WriteDiff(w, cfg.Git.Path, pub.Before, pub.After, colourOK(w)); err != nil {
			return err
		}
		if len(files) > 0 {
			fmt.Fprintln(w)
		}
		for _, e := range changes.Entries {
			if e.Action != changeset.Unchanged {
				fmt.Fprintf(w, "%s\n", e)
			}
		}
		for _, stage := range stages {
			sub := changeset.Set{Entries: changes.Filter(func(e changeset.Entry) bool { return e.Stage == stage })}
			fmt.Fprintf(w, "%-9s %s\n", stage+":", sub.Summary())
		}
		if len(files) == 0 {
			fmt.Fprintf(w, "%s: no changes\n", pub.Where)
		} else {
			fmt.Fprintf(w, "%s: %d file(s) would change\n", pub.Where, len(files))
		}
		if refused != "" {
			fmt.Fprintf(w, "sync would refuse this: %s\n", refused)
		}
		return nil
	}
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

// showRender prints a render: the YAML stream (no directory), the per-tenant
// changes made to the directory, or either as JSON.
func (a *app) showRender(dir string, f format) func(*config.Loaded, *engine.Outcome) error {
	return func(_ *config.Loaded, out *engine.Outcome) error {
		res := out.Result
		if res == nil {
			return nil
		}
		changes := changeset.Set{Entries: slices.Clone(out.Report.Changes)}
		changes.Sort()
		if f.data() {
			rep := renderReport{Out: dir, Summary: changes.Counts(), Changes: changes.Entries, Groups: res.Groups}
			if rep.Changes == nil {
				rep.Changes = []changeset.Entry{}
			}
			if dir == "" {
				for _, t := range res.Tenants {
					rep.Tenants = append(rep.Tenants, tenantJSON{Dir: t.Dir, Offering: t.Offering, Resource: t.Resource, Orders: t.Orders, Objects: t.Objects})
				}
			}
			return writeData(a.stdout, f, rep)
		}
		if dir == "" {
			_, err := a.stdout.Write(res.Stream())
			return err
		}
		if pub := out.Published; pub != nil && !pub.Wrote {
			a.log.Info("output unchanged, nothing written", "dir", dir)
		}
		for _, e := range changes.Entries {
			if e.Action != changeset.Unchanged && e.Action != changeset.Skip {
				fmt.Fprintln(a.stdout, e.String())
			}
		}
		fmt.Fprintf(a.stdout, "%s: %s\n", dir, changes.Summary())
		return nil
	}
}

// applyVerbs are the words kubectl prints for each action.
var applyVerbs = map[changeset.Action]string{
	changeset.Create:    "created",
	changeset.Update:    "configured",
	changeset.Unchanged: "unchanged",
	changeset.Delete:    "deleted",
	changeset.Skip:      "skipped",
}

// showApplied prints a line per object that changed or was skipped, the
// counts, and the other stages' changes (orders, Keycloak) after them.
func (a *app) showApplied(f format, dryRun bool) func(*config.Loaded, *engine.Outcome) error {
	return func(_ *config.Loaded, out *engine.Outcome) error {
		if f.data() {
			return writeData(a.stdout, f, out.Report)
		}
		all := changeset.Set{Entries: out.Report.Changes}
		applied := changeset.Set{Entries: all.Filter(func(e changeset.Entry) bool { return e.Stage == "apply" })}
		if len(applied.Entries) == 0 && out.Published == nil {
			return nil
		}
		suffix := ""
		if dryRun {
			suffix = " (server dry run)"
		}
		// Objects of a cluster that cannot be reached at all share one line.
		unreachable := map[string]int{}
		var reasons []string
		for _, e := range applied.Entries {
			switch {
			case e.Action == changeset.Unchanged:
			case e.Action == changeset.Skip && strings.Contains(e.Reason, "cluster unreachable: "):
				if unreachable[e.Reason] == 0 {
					reasons = append(reasons, e.Reason)
				}
				unreachable[e.Reason]++
			case e.Action == changeset.Skip:
				fmt.Fprintf(a.stdout, "%s %s%s: %s\n", e.Subject, applyVerbs[e.Action], suffix, e.Reason)
			default:
				fmt.Fprintf(a.stdout, "%s %s%s\n", e.Subject, applyVerbs[e.Action], suffix)
			}
		}
		for _, r := range reasons {
			fmt.Fprintf(a.stdout, "%d object(s) %s%s: %s\n", unreachable[r], applyVerbs[changeset.Skip], suffix, r)
		}
		c := applied.Counts()
		var parts []string
		for _, act := range []changeset.Action{changeset.Create, changeset.Update, changeset.Unchanged, changeset.Delete, changeset.Skip} {
			parts = append(parts, fmt.Sprintf("%d %s", c[act], applyVerbs[act]))
		}
		fmt.Fprintf(a.stdout, "apply%s: %s\n", suffix, strings.Join(parts, ", "))
		for _, e := range all.Entries {
			if (e.Stage == "approve" || e.Stage == "keycloak" || e.Stage == "orders") && e.Action != changeset.Unchanged {
				fmt.Fprintln(a.stdout, e.String())
			}
		}
		return nil
	}
}

// showKeycloak prints a keycloak run: the JSON report, the summary, or for a
// dry run the operations and their counts.
func (a *app) showKeycloak(f format, dryRun bool) func(*config.Loaded, *engine.Outcome) error {
	return func(_ *config.Loaded, out *engine.Outcome) error {
		if f.data() {
			return writeData(a.stdout, f, out.Report)
		}
		if !dryRun {
			return out.Report.WriteSummary(a.stdout)
		}
		changes := changeset.Set{Entries: out.Report.Changes}
		for _, e := range changes.Entries {
			if e.Action != changeset.Unchanged {
				fmt.Fprintln(a.stdout, e.String())
			}
		}
		kc := changeset.Set{Entries: changes.Filter(func(e changeset.Entry) bool { return e.Stage == keycloak.Stage })}
		fmt.Fprintf(a.stdout, "keycloak (dry run): %s\n", kc.Summary())
		return nil
	}
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

// writeData prints v as JSON, or as YAML made from that JSON: both formats
// carry the same fields under the same names.
func writeData(w io.Writer, f format, v any) error {
	if f != fmtYAML {
		return writeJSON(w, v)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the output as yaml: %w", err)
	}
	_, err = w.Write(b)
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
