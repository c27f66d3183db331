package waldur

import (
	"context"
	"fmt"
	"net/http"
)

// Offering-user states of the deletion workflow, as Waldur spells them.
const (
	// OfferingUserRequestedDeletion: Waldur asks the provider to remove the
	// user's access; the provider claims the request with set_deleting.
	OfferingUserRequestedDeletion = "Requested deletion"
	// OfferingUserDeleting: a provider claimed the request and is removing
	// the user's access.
	OfferingUserDeleting = "Deleting"
	// OfferingUserDeleted: the provider reported the access removed; final.
	OfferingUserDeleted = "Deleted"
	// OfferingUserErrorDeleting: the provider could not remove the access;
	// a new claim is allowed.
	OfferingUserErrorDeleting = "Error deleting"
)

// Call kinds of the offering-user deletion actions.
const (
	KindOfferingUserDeleting      = "offering_users.set_deleting"
	KindOfferingUserDeleted       = "offering_users.set_deleted"
	KindOfferingUserErrorDeleting = "offering_users.set_error_deleting"
	KindOfferingUserGet           = "offering_users.get"
)

// GetOfferingUser reads one offering user
// (GET marketplace-offering-users/<uuid>/), as after a refused claim.
func (c *Client) GetOfferingUser(ctx context.Context, user UUID) (*OfferingUser, error) {
	var out OfferingUser
	if err := c.getOne(ctx, KindOfferingUserGet, "marketplace-offering-users/", user, offeringUserFields, &out); err != nil {
		return nil, fmt.Errorf("read offering user %s: %w", user, err)
	}
	return &out, nil
}

// The deletion actions take no body and answer 200 with none; Waldur answers
// 400 when the user is not in a state the transition starts from. Like the
// order writes they are retried on transport errors, 429 and 5xx only.

// SetOfferingUserDeleting claims a deletion request
// (POST marketplace-offering-users/<uuid>/set_deleting/). Waldur allows it
// from Requested deletion and Error deleting; IsRefusedClaim tells its
// refusal from other failures.
func (c *Client) SetOfferingUserDeleting(ctx context.Context, user UUID) error {
	return c.postAction(ctx, KindOfferingUserDeleting, "offering user", user, "set_deleting", nil)
}

// SetOfferingUserDeleted reports a claimed user's access removed
// (set_deleted, from Deleting).
func (c *Client) SetOfferingUserDeleted(ctx context.Context, user UUID) error {
	return c.postAction(ctx, KindOfferingUserDeleted, "offering user", user, "set_deleted", nil)
}

// SetOfferingUserErrorDeleting reports that a claimed user's access could not
// be removed (set_error_deleting, from Deleting); the next claim retries.
func (c *Client) SetOfferingUserErrorDeleting(ctx context.Context, user UUID) error {
	return c.postAction(ctx, KindOfferingUserErrorDeleting, "offering user", user, "set_error_deleting", nil)
}

// IsRefusedClaim reports whether err is Waldur refusing a state transition of
// an offering user (400: the user is not in a state it starts from; for a
// claim, the user was granted access again or another agent claimed it).
func IsRefusedClaim(err error) bool {
	return HasStatus(err, http.StatusBadRequest, http.StatusConflict)
}
