package show

import (
	"fmt"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/keycloak"
)

// applyVerbs are the words kubectl prints for each action.
var applyVerbs = map[changeset.Action]string{
	changeset.Create:    "created",
	changeset.Update:    "configured",
	changeset.Unchanged: "unchanged",
	changeset.Delete:    "deleted",
	changeset.Skip:      "skipped",
}

// Applied prints a line per object that changed or was skipped, the
// counts, and the other stages' changes (orders, Keycloak) after them.
func (o Output) Applied(dryRun bool, out *engine.Outcome) error {
	if o.Data != nil {
		return o.Data(out.Report)
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
		case e.Action == changeset.Skip && e.Cause == changeset.CauseClusterUnreachable:
			if unreachable[e.Reason] == 0 {
				reasons = append(reasons, e.Reason)
			}
			unreachable[e.Reason]++
		case e.Action == changeset.Skip:
			fmt.Fprintf(o.W, "%s %s%s: %s\n", e.Subject, applyVerbs[e.Action], suffix, e.Reason)
		default:
			fmt.Fprintf(o.W, "%s %s%s\n", e.Subject, applyVerbs[e.Action], suffix)
		}
	}
	for _, r := range reasons {
		fmt.Fprintf(o.W, "%d object(s) %s%s: %s\n", unreachable[r], applyVerbs[changeset.Skip], suffix, r)
	}
	c := applied.Counts()
	var parts []string
	for _, act := range []changeset.Action{changeset.Create, changeset.Update, changeset.Unchanged, changeset.Delete, changeset.Skip} {
		parts = append(parts, fmt.Sprintf("%d %s", c[act], applyVerbs[act]))
	}
	fmt.Fprintf(o.W, "apply%s: %s\n", suffix, strings.Join(parts, ", "))
	for _, e := range all.Entries {
		if (e.Stage == "approve" || e.Stage == "offboard" || e.Stage == "keycloak" || e.Stage == "proof" || e.Stage == "orders") && e.Action != changeset.Unchanged {
			fmt.Fprintln(o.W, e.String())
		}
	}
	return nil
}

// Keycloak prints a keycloak run: the JSON report, the summary, or for a
// dry run the operations and their counts.
func (o Output) Keycloak(dryRun bool, out *engine.Outcome) error {
	if o.Data != nil {
		return o.Data(out.Report)
	}
	if !dryRun {
		return out.Report.WriteSummary(o.W)
	}
	changes := changeset.Set{Entries: out.Report.Changes}
	for _, e := range changes.Entries {
		if e.Action != changeset.Unchanged {
			fmt.Fprintln(o.W, e.String())
		}
	}
	kc := changeset.Set{Entries: changes.Filter(func(e changeset.Entry) bool { return e.Stage == keycloak.Stage })}
	fmt.Fprintf(o.W, "keycloak (dry run): %s\n", kc.Summary())
	return nil
}
