package source

import (
	"context"
	"fmt"

	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/waldur"
)

// API is a confirm.Confirmer: a removal nothing explains is confirmed with
// a direct read of the resource.
var _ confirm.Confirmer = (*API)(nil)

// Confirm looks each resource up with the offering's client.
func (s *API) Confirm(ctx context.Context, offering string, ids []waldur.UUID) (map[waldur.UUID]confirm.Gone, error) {
	o := s.offering(offering)
	if o == nil {
		return nil, fmt.Errorf("offering %q is not configured", offering)
	}
	c, err := s.Client(o)
	if err != nil {
		return nil, err
	}
	gone := map[waldur.UUID]confirm.Gone{}
	for _, id := range ids {
		r, found, err := c.LookupResource(ctx, id)
		switch {
		case err != nil:
			return gone, fmt.Errorf("confirm resource %s: %w", id, err)
		case !found:
			gone[id] = confirm.Gone{Why: "Waldur answers 404 for it"}
		case r.State == waldur.ResourceTerminated || r.State == waldur.ResourceTerminating:
			gone[id] = confirm.Gone{Why: "Waldur reports it " + r.State, Terminated: true}
		case r.OfferingUUID != waldur.UUID(o.WaldurOfferingUUID):
			gone[id] = confirm.Gone{Why: "it moved to offering " + string(r.OfferingUUID)}
		}
	}
	return gone, nil
}
