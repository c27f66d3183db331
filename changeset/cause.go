package changeset

import "errors"

// Cause is why an entry was skipped, held, left waiting or kept: a short,
// stable word set where the decision is made. Behaviour (metrics labels, the
// exit verdict, what the printers group) reads the cause; the Reason beside
// it is for people and may be reworded freely. docs/run-report.md lists every
// cause and the class of waldur_gitops_last_run_skipped it counts under.
type Cause string

// The causes, per concern.
const (
	// render: the resource's input cannot be rendered, or is left as it is.
	CauseInvalidLimits Cause = "invalid_limits"  // a limit is not a number or negative
	CauseInvalidName   Cause = "invalid_name"    // no slug, a bad UUID, a name too long or not a DNS label
	CauseNameConflict  Cause = "name_conflict"   // two resources claim one name or file
	CauseQuotaMapping  Cause = "quota_mapping"   // a component has no (or a shared) quota key
	CauseTemplate      Cause = "template"        // a template failed or produced an invalid object
	CauseUnknownState  Cause = "unknown_state"   // the resource's state is not one Waldur defines
	CauseMemberLeftOut Cause = "member_left_out" // a member is left out of a tenant
	CauseRenderFailed  Cause = "render_failed"   // any other render failure of one resource

	// keycloak
	CauseUserNotFound   Cause = "user_not_found"  // a member is not (yet) a Keycloak user
	CauseGroupConflict  Cause = "group_conflict"  // a group exists without the marker, or is another config's
	CauseParentBlocked  Cause = "parent_blocked"  // the parent group could not be reconciled
	CauseNotAttempted   Cause = "not_attempted"   // the run stopped before this operation
	CauseRealmFailure   Cause = "realm_failure"   // a whole realm could not be read or reconciled
	CauseNoCredentials  Cause = "no_credentials"  // a realm without credentials, left out of a dry run
	CauseNotLookedUp    Cause = "not_looked_up"   // a member's user was not looked up
	CauseKeptInReview   Cause = "kept_in_review"  // a removal kept until its review branch is merged
	CauseKept           Cause = "kept"            // a removal kept: a resource still needs it
	CauseKeycloakFailed Cause = "keycloak_failed" // the Keycloak call for this item failed

	// orders and usage: a Waldur call
	CauseAPIFailure Cause = "api_failure" // the Waldur call for this item failed

	// orders (approve, orders)
	CauseAwaitingApproval Cause = "awaiting_approval" // auto_approve is off: a person decides
	CauseUnsupportedOrder Cause = "unsupported_order" // an order type waldur-gitops does not handle
	CauseNotApplied       Cause = "not_applied"       // order_done_on: applied, the cluster does not show it yet
	CauseCapacityExceeded Cause = "capacity_exceeded" // the order would oversell its capacity pool: it waits
	CauseCapacityUnknown  Cause = "capacity_unknown"  // the capacity pool's cluster could not be read: its orders wait

	// usage (report)
	CauseResourceState Cause = "resource_state"       // Waldur takes no usage for the resource's state
	CauseNoLimit       Cause = "no_limit"             // a limit-based component without a limit
	CauseNotMeasured   Cause = "not_measured"         // the cluster gave no measurement
	CauseOtherMode     Cause = "other_mode"           // the month's record was written in the other allocation mode
	CauseUsageFailed   Cause = "usage_failed"         // the usage of one item could not be computed
	CauseNotBilled     Cause = "not_billed"           // the resource has no rendered tenant to bill
	CauseUsageLimits   Cause = "usage_invalid_limits" // the resource's limits are invalid: nothing to bill from

	// apply
	CauseApplyFailed        Cause = "apply_failed"        // an object was not applied, deleted or kept because of a failure
	CauseClusterUnreachable Cause = "cluster_unreachable" // the object's cluster could not be reached
	CauseRemovalKept        Cause = "removal_kept"        // an object left in place: its removal is not sure (the removal's kept entry)
	CauseRejected           Cause = "rejected"            // the API server rejected the object
	CauseFieldConflict      Cause = "field_conflict"      // a field-manager conflict, not forced

	// review and quota safety (git, quota, orders)
	CauseAwaitingReview Cause = "awaiting_review" // the change waits on a review branch for a person to merge it
	CauseForgeFailure   Cause = "forge_failure"   // the review branch's pull or merge request could not be ensured
	CauseQuotaHeld      Cause = "quota_held"      // a quota cut below usage is held (quota_shrink: hold)
	CauseQuotaUnchecked Cause = "quota_unchecked" // a quota cut was made without reading the usage

	// waldur, publish, feedback, agent, oci
	CauseOfferingUnread    Cause = "offering_unread"    // an offering was not read: its tenants are kept
	CauseTenantKept        Cause = "tenant_kept"        // a tenant kept in doubt at the publish
	CauseFeedbackFailed    Cause = "feedback_failed"    // a write-back to Waldur failed
	CauseAgentFailed       Cause = "agent_failed"       // the agent identity was not registered
	CauseShipFailed        Cause = "ship_failed"        // a shard was not shipped
	CauseAgentIncompatible Cause = "agent_incompatible" // Waldur does not take this agent identity or version
	CauseGuardRefused      Cause = "guard_refused"      // the deletion guard refused the removals

	// offboard (offering users Waldur asked to delete)
	CauseClaimRefused   Cause = "claim_refused"   // Waldur refused the claim: the user was granted again or claimed elsewhere
	CauseRemovalPending Cause = "removal_pending" // the removal is not yet in effect where the tool can see it
	CauseRemovalFailed  Cause = "removal_failed"  // the removal failed in a way that does not heal by itself
)

// causeError is an error that carries its cause.
type causeError struct {
	cause Cause
	err   error
}

func (e *causeError) Error() string { return e.err.Error() }
func (e *causeError) Unwrap() error { return e.err }

// Because returns err carrying cause c; nil when err is nil. The message is
// err's, unchanged.
func Because(c Cause, err error) error {
	if err == nil {
		return nil
	}
	return &causeError{cause: c, err: err}
}

// CauseOf returns the cause err carries, or fallback when it carries none.
func CauseOf(err error, fallback Cause) Cause {
	var ce *causeError
	if errors.As(err, &ce) {
		return ce.cause
	}
	return fallback
}
