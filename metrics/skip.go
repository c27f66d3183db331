package metrics

import (
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
)

// Skip classes, the values of the class label of waldur_gitops_last_run_skipped. The
// free-text reason of a skip names resources, users and groups; the class is
// a short, stable word derived from it, so that the label stays bounded.
const (
	// render: the resource's input cannot be rendered.
	SkipInvalidLimits = "invalid_limits" // a limit is not a number or negative
	SkipInvalidName   = "invalid_name"   // no slug, a bad UUID, a name too long or not a DNS label
	SkipNameConflict  = "name_conflict"  // two resources claim one name or file
	SkipQuotaMapping  = "quota_mapping"  // a component has no (or a shared) quota key
	SkipTemplate      = "template"       // a template failed or produced an invalid object
	// keycloak
	SkipUserNotFound  = "user_not_found" // a member is not (yet) a Keycloak user
	SkipGroupConflict = "group_conflict" // a group exists without the marker, or is another config's
	SkipParentBlocked = "parent_blocked" // the parent group could not be reconciled
	SkipNotAttempted  = "not_attempted"  // the run stopped before this operation
	SkipAPIFailure    = "api_failure"    // the call for this item failed (Keycloak or Waldur)
	SkipRealmFailure  = "realm_failure"  // a whole realm could not be read or reconciled
	// orders (approve, orders)
	SkipAwaitingApproval = "awaiting_approval" // auto_approve is off: a person decides
	SkipUnsupportedOrder = "unsupported_order" // an order type waldur-gitops does not handle
	SkipNotApplied       = "not_applied"       // order_done_on: applied, the cluster does not show it yet
	// usage (report)
	SkipResourceState = "resource_state" // Waldur takes no usage for the resource's state
	SkipNoLimit       = "no_limit"       // a limit-based component without a limit
	SkipNotMeasured   = "not_measured"   // the cluster gave no measurement
	// apply
	SkipApplyFailed = "apply_failed" // an object was not applied, deleted or kept because of a failure
	// review and quota safety (git, quota, orders)
	SkipAwaitingReview = "awaiting_review" // the change waits on a review branch for a person to merge it
	SkipForgeFailure   = "forge_failure"   // the review branch's pull or merge request could not be ensured
	SkipQuotaHeld      = "quota_held"      // a quota cut below usage is held (quota_shrink: hold)
	SkipQuotaUnchecked = "quota_unchecked" // a quota cut was made without reading the usage
	// SkipOther is every reason not listed above.
	SkipOther = "other"
)

// skipRule maps a reason to a class when the entry's stage matches (any stage
// when empty) and the reason has the prefix, or contains the substring.
type skipRule struct {
	stage            string
	prefix, contains string
	class            string
}

// skipRules are tried in order; the first match wins.
var skipRules = []skipRule{
	{stage: "render", contains: "invalid resource limits", class: SkipInvalidLimits},
	{stage: "usage", contains: "invalid resource limits", class: SkipInvalidLimits},
	{stage: "render", contains: "slug", class: SkipInvalidName},
	{stage: "render", contains: "is not a UUID", class: SkipInvalidName},
	{stage: "render", prefix: "namespace name ", class: SkipInvalidName},
	{stage: "render", contains: "is already used by resource", class: SkipNameConflict},
	{stage: "render", prefix: "two objects would both be written", class: SkipNameConflict},
	{stage: "render", contains: "quota mapping", class: SkipQuotaMapping},
	{stage: "render", contains: "maps to quota key", class: SkipQuotaMapping},
	{stage: "render", prefix: "template ", class: SkipTemplate},
	{stage: "render", prefix: "encode ", class: SkipTemplate},

	{stage: "keycloak", prefix: "user ", contains: " not found in Keycloak", class: SkipUserNotFound},
	{stage: "keycloak", prefix: "conflict:", class: SkipGroupConflict},
	{stage: "keycloak", prefix: "parent group ", class: SkipParentBlocked},
	{stage: "keycloak", prefix: "not attempted:", class: SkipNotAttempted},
	{stage: "keycloak", prefix: "failed: keycloak ", class: SkipRealmFailure},
	{stage: "keycloak", prefix: "failed:", class: SkipAPIFailure},

	{prefix: "pending provider approval", class: SkipAwaitingApproval},
	{prefix: "pending: waldur-gitops does not handle", class: SkipUnsupportedOrder},
	{prefix: "left executing: waits on review branch", class: SkipAwaitingReview},
	{prefix: "left executing: waiting for usage to drop", class: SkipQuotaHeld},
	{prefix: "left executing:", class: SkipNotApplied},
	{prefix: "failed to ", class: SkipAPIFailure},
	{prefix: "Waldur refused", class: SkipAPIFailure},

	{stage: "usage", prefix: "Waldur takes usage only", class: SkipResourceState},
	{stage: "usage", prefix: "the resource has no limit", class: SkipNoLimit},
	{stage: "usage", prefix: "not measured", class: SkipNotMeasured},

	{stage: "git", prefix: "waits on review branch", class: SkipAwaitingReview},
	{stage: "git", prefix: "no pull or merge request:", class: SkipForgeFailure},
	{stage: "quota", prefix: "sent for review:", class: SkipAwaitingReview},
	{stage: "quota", prefix: "held:", class: SkipQuotaHeld},
	{stage: "quota", prefix: "the quota cut is not checked against usage", class: SkipQuotaUnchecked},

	{stage: "apply", prefix: "not applied", class: SkipApplyFailed},
	{stage: "apply", prefix: "not deleted", class: SkipApplyFailed},
	{stage: "apply", prefix: "kept", class: SkipApplyFailed},
}

// SkipClass is the class of a skipped entry's reason: see the Skip constants
// and docs/serve.md for the mapping. Every reason gets a class; SkipOther
// when no rule matches.
func SkipClass(e changeset.Entry) string {
	for _, r := range skipRules {
		if r.stage != "" && r.stage != e.Stage {
			continue
		}
		if r.prefix != "" && !strings.HasPrefix(e.Reason, r.prefix) {
			continue
		}
		if r.contains != "" && !strings.Contains(e.Reason, r.contains) {
			continue
		}
		return r.class
	}
	return SkipOther
}
