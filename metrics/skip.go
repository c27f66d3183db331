package metrics

import "github.com/waldur/waldur-gitops/changeset"

// Skip classes, the values of the class label of waldur_gitops_last_run_skipped. The
// free-text reason of a skip names resources, users and groups; the class is
// a short, stable word read from the entry's cause (changeset.Cause), so that
// the label stays bounded and rewording a reason changes no label.
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
	// capacity
	SkipCapacityExceeded = "capacity_exceeded" // the order would oversell its capacity pool
	SkipCapacityUnknown  = "capacity_unknown"  // the capacity pool's cluster could not be read
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

// skipClasses maps every cause of a skipped entry to its class: many causes
// share one class, and a cause not listed (or none) is SkipOther.
var skipClasses = map[changeset.Cause]string{
	changeset.CauseInvalidLimits: SkipInvalidLimits,
	changeset.CauseInvalidName:   SkipInvalidName,
	changeset.CauseNameConflict:  SkipNameConflict,
	changeset.CauseQuotaMapping:  SkipQuotaMapping,
	changeset.CauseTemplate:      SkipTemplate,

	changeset.CauseUserNotFound:   SkipUserNotFound,
	changeset.CauseGroupConflict:  SkipGroupConflict,
	changeset.CauseParentBlocked:  SkipParentBlocked,
	changeset.CauseNotAttempted:   SkipNotAttempted,
	changeset.CauseRealmFailure:   SkipRealmFailure,
	changeset.CauseKeycloakFailed: SkipAPIFailure,
	changeset.CauseAPIFailure:     SkipAPIFailure,
	changeset.CauseUsageLimits:    SkipInvalidLimits,

	changeset.CauseAwaitingApproval: SkipAwaitingApproval,
	changeset.CauseUnsupportedOrder: SkipUnsupportedOrder,
	changeset.CauseNotApplied:       SkipNotApplied,
	changeset.CauseCapacityExceeded: SkipCapacityExceeded,
	changeset.CauseCapacityUnknown:  SkipCapacityUnknown,

	changeset.CauseResourceState: SkipResourceState,
	changeset.CauseNoLimit:       SkipNoLimit,
	changeset.CauseNotMeasured:   SkipNotMeasured,

	changeset.CauseApplyFailed:        SkipApplyFailed,
	changeset.CauseClusterUnreachable: SkipApplyFailed,
	changeset.CauseRemovalKept:        SkipApplyFailed,

	changeset.CauseAwaitingReview: SkipAwaitingReview,
	changeset.CauseForgeFailure:   SkipForgeFailure,
	changeset.CauseQuotaHeld:      SkipQuotaHeld,
	changeset.CauseQuotaUnchecked: SkipQuotaUnchecked,
}

// SkipClass is the class of a skipped entry, read from its cause: see the
// Skip constants and docs/run-report.md for the mapping. Every entry gets a
// class; SkipOther for a cause the table does not list.
func SkipClass(e changeset.Entry) string {
	if c, ok := skipClasses[e.Cause]; ok {
		return c
	}
	return SkipOther
}

// SkipClassOf is the class of cause c.
func SkipClassOf(c changeset.Cause) string {
	return SkipClass(changeset.Entry{Cause: c})
}
