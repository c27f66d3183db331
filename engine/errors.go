package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/waldur"
)

// classify gives a stage's failure its class. After something was published
// a failure is never "bad config" (exit 2 reads as "nothing happened"): it
// takes the stage's own class and says what was published.
func classify(st stage, err error, pub *publish.Published) error {
	err = failure.Classify(st.class, err)
	c, contained := failure.ClassOf(err), failure.IsContained(err)
	if pub != nil && pub.Wrote {
		if c == failure.ClassConfig {
			c = st.class
		}
		what := "the apply went through"
		if pub.Ref != "" {
			what = "commit " + pub.Ref + " was pushed"
		}
		err = fmt.Errorf("%w (%s)", err, what)
	}
	return &failure.Error{Stage: st.name, Class: c, Err: err, Contained: contained}
}

// verdict is the run's one exit decision: a failure first; then, in a dry
// run, differences (exit 1, whether or not something was skipped); then
// skipped resources or identities (exit 3).
func verdict(req Request, out *Outcome, err error) error {
	if err != nil {
		return err
	}
	changes := changeset.Set{Entries: out.Report.Changes}
	if out.diffStage != "" {
		changes.Entries = changes.Filter(func(e changeset.Entry) bool { return e.Stage == out.diffStage })
	}
	if req.DryRun && changes.Changed() {
		return failure.Errorf(failure.ClassDiff, "differences found")
	}
	counts := map[string]int{}
	for _, e := range changes.ByAction(changeset.Skip) {
		if what, ok := partialCauses[e.Cause]; ok {
			counts[what]++
		}
	}
	var parts []string
	for _, what := range skipOrder {
		if counts[what] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[what], what))
		}
	}
	if len(parts) > 0 {
		return failure.Errorf(failure.ClassPartial, "%s skipped (listed in the output), the rest done%s", strings.Join(parts, " and "), unreadCause(out.State))
	}
	return nil
}

// unreadCause names every offering not read, with why, for the verdict.
func unreadCause(st *waldur.State) string {
	if st == nil || len(st.Unread) == 0 {
		return ""
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(st.Unread)) {
		fmt.Fprintf(&b, "; offering %q not read: %s", name, st.Unread[name])
	}
	return b.String()
}

// The things a partial run names, in the order the verdict names them.
const (
	partialOfferings = "offering(s) not read"
	partialResources = "resource(s)"
	partialMembers   = "member(s)"
	partialKeycloak  = "Keycloak group(s) or membership(s)"
)

// partialCauses names the skip entries that make a run partial, by cause:
// offerings not read, resources the render skipped or kept in doubt at the
// publish, members left out, and every Keycloak group or membership skipped.
var partialCauses = map[changeset.Cause]string{
	changeset.CauseOfferingUnread: partialOfferings,

	changeset.CauseInvalidLimits: partialResources,
	changeset.CauseInvalidName:   partialResources,
	changeset.CauseNameConflict:  partialResources,
	changeset.CauseQuotaMapping:  partialResources,
	changeset.CauseTemplate:      partialResources,
	changeset.CauseUnknownState:  partialResources,
	changeset.CauseRenderFailed:  partialResources,
	changeset.CauseTenantKept:    partialResources,

	changeset.CauseMemberLeftOut: partialMembers,

	changeset.CauseUserNotFound:   partialKeycloak,
	changeset.CauseGroupConflict:  partialKeycloak,
	changeset.CauseParentBlocked:  partialKeycloak,
	changeset.CauseNotAttempted:   partialKeycloak,
	changeset.CauseRealmFailure:   partialKeycloak,
	changeset.CauseNoCredentials:  partialKeycloak,
	changeset.CauseNotLookedUp:    partialKeycloak,
	changeset.CauseKeycloakFailed: partialKeycloak,
}

// skipOrder is the order the verdict names them in.
var skipOrder = []string{partialOfferings, partialResources, partialMembers, partialKeycloak}
