package waldur

import (
	"context"
	"errors"
	"fmt"
)

// OfferingNotFoundError is an offering Waldur does not know, or does not show
// the token's user: reading it (GET marketplace-provider-offerings/<uuid>/)
// answered Waldur's own 404. A listing filtered by such a uuid answers an
// empty page, so only reading the offering tells it from an empty one.
type OfferingNotFoundError struct {
	Offering UUID
	// URL is the Waldur API root the offering was looked up at.
	URL string
	// Err is the 404 answer.
	Err error
}

// Error names the offering and the Waldur it is missing from.
func (e *OfferingNotFoundError) Error() string {
	return fmt.Sprintf("offering %s not found at %s: check waldur_offering_uuid, and that the token's user manages the offering", e.Offering, e.URL)
}

// Unwrap returns the 404 answer.
func (e *OfferingNotFoundError) Unwrap() error { return e.Err }

// IsOfferingNotFound reports whether err is (or wraps) an *OfferingNotFoundError.
func IsOfferingNotFound(err error) bool {
	var nf *OfferingNotFoundError
	return errors.As(err, &nf)
}

// CheckOffering reads the offering itself and fails with an
// *OfferingNotFoundError when Waldur answers that it does not exist. An HTML
// 404 (a proxy, a wrong waldur_api_url) stays the plain *APIError.
func (c *Client) CheckOffering(ctx context.Context, offering UUID) error {
	var out struct {
		UUID UUID `json:"uuid"`
	}
	err := c.getOne(ctx, KindOfferingGet, "marketplace-provider-offerings/", offering, []string{"uuid"}, &out)
	var ae *APIError
	if errors.As(err, &ae) && ae.StatusCode == 404 && ae.JSON {
		return &OfferingNotFoundError{Offering: offering, URL: c.endpoint("", nil).String(), Err: err}
	}
	if err != nil {
		return fmt.Errorf("read offering %s: %w", offering, err)
	}
	return nil
}
