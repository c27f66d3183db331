package show

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/capacity"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/report"
)

// Plan is the machine output of a dry run against the GitOps repository.
type Plan struct {
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
	// Offboarding are the offering users Waldur asked to delete, as the
	// sync would leave them (report.Run's offboarding); omitted when none.
	Offboarding []report.Offboard `json:"offboarding,omitempty"`
}

// Plan prints what a sync would do: for people the unified diff of the
// repository (git: the repository's settings) and a per-stage list of
// changes; for machines the change set. Every stage's entries are shown, so
// the Keycloak operations and the order moves appear in the same plan as the diff.
func (o Output) Plan(git config.Git, out *engine.Outcome) error {
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
	if failure.ClassOf(out.Err) == failure.ClassGuard {
		refused = out.Err.Error()
	}
	if o.Data != nil {
		repo, _, _ := strings.Cut(pub.Where, " ")
		p := Plan{DryRun: true, Repository: repo, Branch: git.Branch, Path: git.Path, Base: pub.Base,
			Changed: changes.Changed(), Files: files, Guard: refused, Summary: map[string]map[changeset.Action]int{}, Changes: changes.Entries, Offboarding: out.Report.Offboarding}
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
		return o.Data(p)
	}
	w := o.W
	if err := gitsync.WriteDiff(w, git.Path, pub.Before, pub.After, o.Colour); err != nil {
		return err
	}
	if len(files) > 0 {
		fmt.Fprintln(w)
	}
	for _, e := range changes.Entries {
		// The capacity stage's accounts are shown though nothing changes.
		if e.Action != changeset.Unchanged || e.Stage == capacity.Stage {
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
