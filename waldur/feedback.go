package waldur

import (
	"context"
)

// Resource write-backs: what the provider found out about a resource. Like
// the order writes they are retried on transport errors, 429 and 5xx only.

// Membership sync states (set_membership_sync_statuses).
const (
	MemberSynced       = "synced"
	MemberPending      = "pending"
	MemberMissingInIDP = "missing_in_idp"
	MemberError        = "error"
)

// MemberSyncStatus is one member's sync state on a resource.
type MemberSyncStatus struct {
	// ScopeType is "resource" (the tool has no resource projects).
	ScopeType string `json:"scope_type"`
	RoleName  string `json:"role_name"`
	// State is MemberSynced, MemberPending, MemberMissingInIDP or MemberError.
	State    string `json:"state"`
	Username string `json:"username,omitempty"`
	UserUUID UUID   `json:"user_uuid,omitempty"`
	Message  string `json:"message,omitempty"`
}

// SetResourceOK moves a resource to OK (set_as_ok).
func (c *Client) SetResourceOK(ctx context.Context, resource UUID) error {
	return c.resourceAction(ctx, KindResourceOK, resource, "set_as_ok", nil)
}

// SetResourceErred moves a resource to Erred with the reason shown in Waldur
// (set_as_erred). Both keys are sent, as for orders.
func (c *Client) SetResourceErred(ctx context.Context, resource UUID, message string) error {
	return c.resourceAction(ctx, KindResourceErred, resource, "set_as_erred",
		map[string]string{"error_message": message, "error_traceback": ""})
}

// SetResourceBackendMetadata records where the resource lives
// (set_backend_metadata); Waldur replaces what it held.
func (c *Client) SetResourceBackendMetadata(ctx context.Context, resource UUID, metadata map[string]any) error {
	if metadata == nil {
		metadata = map[string]any{}
	}
	return c.resourceAction(ctx, KindResourceMetadata, resource, "set_backend_metadata",
		map[string]any{"backend_metadata": metadata})
}

// RefreshResourceLastSync sets the resource's last_sync to now
// (refresh_last_sync).
func (c *Client) RefreshResourceLastSync(ctx context.Context, resource UUID) error {
	return c.resourceAction(ctx, KindResourceLastSync, resource, "refresh_last_sync", nil)
}

// SetMembershipSyncStatuses reports each member's sync state on a resource
// (set_membership_sync_statuses, Waldur 8.1.0+: check
// Supports(FeatureMembershipSyncStatus) first).
func (c *Client) SetMembershipSyncStatuses(ctx context.Context, resource UUID, statuses []MemberSyncStatus) error {
	if statuses == nil {
		statuses = []MemberSyncStatus{}
	}
	return c.resourceAction(ctx, KindMembershipStatus, resource, "set_membership_sync_statuses",
		map[string]any{"statuses": statuses})
}
