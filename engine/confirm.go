package engine

import (
	"context"
	"fmt"

	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Confirmer and Gone are confirm-before-delete's (guard/confirm); the
// Source implements Confirmer when it can read single resources.
type (
	Confirmer = confirm.Confirmer
	Gone      = confirm.Gone
)

// Confirm looks each resource up with the offering's client.
func (s *APISource) Confirm(ctx context.Context, offering string, ids []waldur.UUID) (map[waldur.UUID]Gone, error) {
	o := s.offering(offering)
	if o == nil {
		return nil, fmt.Errorf("offering %q is not configured", offering)
	}
	c, err := s.Client(o)
	if err != nil {
		return nil, err
	}
	gone := map[waldur.UUID]Gone{}
	for _, id := range ids {
		r, found, err := c.LookupResource(ctx, id)
		switch {
		case err != nil:
			return gone, fmt.Errorf("confirm resource %s: %w", id, err)
		case !found:
			gone[id] = Gone{Why: "Waldur answers 404 for it"}
		case r.State == waldur.ResourceTerminated || r.State == waldur.ResourceTerminating:
			gone[id] = Gone{Why: "Waldur reports it " + r.State, Terminated: true}
		case r.OfferingUUID != waldur.UUID(o.WaldurOfferingUUID):
			gone[id] = Gone{Why: "it moved to offering " + string(r.OfferingUUID)}
		}
	}
	return gone, nil
}

// settle and explainGone are confirm.Settle and confirm.ExplainGone for the
// publishers.
func settle(ctx context.Context, c Confirmer, offering string, ids []waldur.UUID, res *render.Result) (map[waldur.UUID]string, map[string]string) {
	return confirm.Settle(ctx, c, offering, ids, res)
}

func explainGone(explained map[string]string, res *render.Result) map[string]string {
	return confirm.ExplainGone(explained, res)
}
