package waldur

import (
	"context"
	"fmt"
	"net/http"
)

// Plan is what a provider reads of a marketplace plan
// (GET /api/marketplace-plans/<uuid>/, ProviderPlanDetails). Only the fields the
// tool uses are decoded.
type Plan struct {
	UUID UUID   `json:"uuid"`
	Name string `json:"name"`
	// Quotas are the plan's amounts by component type. An Update order without
	// limits (a plan switch) asks for them, as the site agent reads them.
	Quotas Limits `json:"quotas"`
}

// GetPlan reads a plan. The operation takes no field selection, so the whole
// plan is read and only Plan's fields are kept.
func (c *Client) GetPlan(ctx context.Context, plan UUID) (*Plan, error) {
	id, err := canonical("plan", plan)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	r, err := c.do(ctx, call{kind: KindPlanGet, method: http.MethodGet, path: "marketplace-plans/" + id.Hex() + "/"})
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", id, err)
	}
	var p Plan
	if err := decodeJSON(r, &p); err != nil {
		return nil, fmt.Errorf("read plan %s: %w", id, err)
	}
	return &p, nil
}
