package waldur

import (
	"context"
	"fmt"
	"net/http"
)

// Write calls for order processing. Like reads they are retried on transport
// errors, 429 and 5xx only; a retried transition that had in fact succeeded
// answers 409 (IsConflict), which callers should re-check with GetOrder.

// ApproveOrder moves a pending-provider order to executing (approve_by_provider).
func (c *Client) ApproveOrder(ctx context.Context, order UUID) error {
	return c.orderAction(ctx, KindOrderApprove, order, "approve_by_provider", struct{}{})
}

// RejectOrder rejects a pending-provider order, with an optional comment shown to
// the consumer.
func (c *Client) RejectOrder(ctx context.Context, order UUID, comment string) error {
	body := map[string]string{}
	if comment != "" {
		body["provider_rejection_comment"] = comment
	}
	return c.orderAction(ctx, KindOrderReject, order, "reject_by_provider", body)
}

// SetOrderDone marks an executing order as done.
func (c *Client) SetOrderDone(ctx context.Context, order UUID) error {
	return c.orderAction(ctx, KindOrderDone, order, "set_state_done", nil)
}

// SetOrderErred marks an executing order as erred. Both keys are always sent:
// older servers fail with 500 when either is missing.
func (c *Client) SetOrderErred(ctx context.Context, order UUID, message, traceback string) error {
	body := map[string]string{"error_message": message, "error_traceback": traceback}
	return c.orderAction(ctx, KindOrderErred, order, "set_state_erred", body)
}

// SetResourceBackendID stores the provider's identifier of a resource.
func (c *Client) SetResourceBackendID(ctx context.Context, resource UUID, backendID string) error {
	if err := c.postAction(ctx, KindResourceBackendID, "resource", resource, "set_backend_id", map[string]string{"backend_id": backendID}); err != nil {
		return fmt.Errorf("set backend id of resource %s: %w", resource, err)
	}
	return nil
}

func (c *Client) orderAction(ctx context.Context, kind string, order UUID, action string, body any) error {
	if err := c.postAction(ctx, kind, "order", order, action, body); err != nil {
		return fmt.Errorf("%s order %s: %w", action, order, err)
	}
	return nil
}

func (c *Client) resourceAction(ctx context.Context, kind string, resource UUID, action string, body any) error {
	if err := c.postAction(ctx, kind, "resource", resource, action, body); err != nil {
		return fmt.Errorf("%s resource %s: %w", action, resource, err)
	}
	return nil
}

// actionPaths are the collections of the objects postAction acts on, by
// the noun that names them.
var actionPaths = map[string]string{"order": "marketplace-orders", "resource": "marketplace-provider-resources", "offering user": "marketplace-offering-users"}

// postAction calls the action of an order, a resource or an offering user (noun):
// POST <collection>/<uuid>/<action>/ with body, counted as kind.
func (c *Client) postAction(ctx context.Context, kind, noun string, obj UUID, action string, body any) error {
	id, err := canonical(noun, obj)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, call{kind: kind, method: http.MethodPost, path: actionPaths[noun] + "/" + id.Hex() + "/" + action + "/", body: body})
	if err != nil && noun == "offering user" {
		return fmt.Errorf("%s offering user %s: %w", action, obj, err)
	}
	return err
}

// SetResourceLimits records a resource's limits in Waldur
// (POST marketplace-provider-resources/<uuid>/set_limits/), as the site agent
// does when the backend holds other limits than Waldur.
func (c *Client) SetResourceLimits(ctx context.Context, resource UUID, limits Limits) error {
	if limits == nil {
		limits = Limits{}
	}
	if err := c.postAction(ctx, KindResourceLimits, "resource", resource, "set_limits", map[string]Limits{"limits": limits}); err != nil {
		return fmt.Errorf("set limits of resource %s: %w", resource, err)
	}
	return nil
}
