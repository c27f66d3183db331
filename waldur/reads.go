package waldur

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// ListedResourceStates are the resource states ListResources returns.
var ListedResourceStates = []string{ResourceCreating, ResourceOK, ResourceErred, ResourceUpdating, ResourceTerminating}

// listedOrderStates are the order states ListOrders returns.
var listedOrderStates = []string{OrderPendingProvider, OrderExecuting}

// Field selections: exactly the JSON keys of the types decoded, derived from their
// struct tags so that they follow types.go.
var (
	resourceFields     = jsonFields[Resource]()
	orderFields        = jsonFields[Order]()
	offeringUserFields = jsonFields[OfferingUser]()
)

// jsonFields lists the JSON names of T's fields.
func jsonFields[T any]() []string {
	t := reflect.TypeFor[T]()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() {
			names = append(names, name)
		}
	}
	return names
}

// ListResources returns the resources of one offering in states Creating, OK,
// Erred, Updating and Terminating, sorted by (created, uuid).
func (c *Client) ListResources(ctx context.Context, offering UUID) ([]Resource, error) {
	out, err := c.listResources(ctx, offering)
	if err != nil {
		return nil, fmt.Errorf("list resources of offering %s: %w", offering, err)
	}
	return out, nil
}

func (c *Client) listResources(ctx context.Context, offering UUID) ([]Resource, error) {
	offering, err := canonical("offering", offering)
	if err != nil {
		return nil, err
	}
	q := url.Values{"offering_uuid": {offering.Hex()}, "state": ListedResourceStates, "o": {"created"}, "field": resourceFields}
	all, err := listAll[Resource](ctx, c, KindResourcesList, "marketplace-provider-resources/", q)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, r := range all {
		if r.OfferingUUID != "" && r.OfferingUUID != offering {
			return nil, fmt.Errorf("server returned resource %s of offering %s; is the offering_uuid filter supported?", r.UUID, r.OfferingUUID)
		}
		if r.State != ResourceTerminated {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Resource) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID))
	})
	return out, nil
}

// ListOrders returns the orders of one offering in states pending-provider and
// executing, sorted by (created, uuid).
func (c *Client) ListOrders(ctx context.Context, offering UUID) ([]Order, error) {
	offering, err := canonical("offering", offering)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	q := url.Values{"offering_uuid": {offering.Hex()}, "state": listedOrderStates, "o": {"created"}, "field": orderFields}
	out, err := listAll[Order](ctx, c, KindOrdersList, "marketplace-orders/", q)
	if err != nil {
		return nil, fmt.Errorf("list orders of offering %s: %w", offering, err)
	}
	slices.SortStableFunc(out, func(a, b Order) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID))
	})
	return out, nil
}

// ListOfferingUsers returns the unrestricted offering users of one offering,
// sorted by uuid.
func (c *Client) ListOfferingUsers(ctx context.Context, offering UUID) ([]OfferingUser, error) {
	offering, err := canonical("offering", offering)
	if err != nil {
		return nil, fmt.Errorf("list offering users: %w", err)
	}
	q := url.Values{"offering_uuid": {offering.Hex()}, "is_restricted": {"false"}, "o": {"created"}, "field": offeringUserFields}
	out, err := listAll[OfferingUser](ctx, c, KindOfferingUsersList, "marketplace-offering-users/", q)
	if err != nil {
		return nil, fmt.Errorf("list offering users of offering %s: %w", offering, err)
	}
	slices.SortStableFunc(out, func(a, b OfferingUser) int { return cmp.Compare(a.UUID, b.UUID) })
	return out, nil
}

// Team returns the team of a resource's project (an unpaginated list), sorted by
// user uuid.
func (c *Client) Team(ctx context.Context, resource UUID) ([]TeamMember, error) {
	out, err := c.team(ctx, resource)
	if err != nil {
		return nil, fmt.Errorf("read team of resource %s: %w", resource, err)
	}
	return out, nil
}

func (c *Client) team(ctx context.Context, resource UUID) ([]TeamMember, error) {
	resource, err := canonical("resource", resource)
	if err != nil {
		return nil, err
	}
	r, err := c.do(ctx, call{kind: KindTeam, method: http.MethodGet, path: "marketplace-provider-resources/" + resource.Hex() + "/team/"})
	if err != nil {
		return nil, err
	}
	out, err := decodeList[TeamMember](r)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b TeamMember) int { return cmp.Compare(a.UUID, b.UUID) })
	return out, nil
}

// GetResource reads one provider resource.
func (c *Client) GetResource(ctx context.Context, resource UUID) (*Resource, error) {
	var out Resource
	if err := c.getOne(ctx, KindResourceGet, "marketplace-provider-resources/", resource, resourceFields, &out); err != nil {
		return nil, fmt.Errorf("read resource %s: %w", resource, err)
	}
	return &out, nil
}

// GetOrder reads one order.
func (c *Client) GetOrder(ctx context.Context, order UUID) (*Order, error) {
	var out Order
	if err := c.getOne(ctx, KindOrderGet, "marketplace-orders/", order, orderFields, &out); err != nil {
		return nil, fmt.Errorf("read order %s: %w", order, err)
	}
	return &out, nil
}

func (c *Client) getOne(ctx context.Context, kind, collection string, id UUID, fields []string, out any) error {
	id, err := canonical("uuid", id)
	if err != nil {
		return err
	}
	r, err := c.do(ctx, call{kind: kind, method: http.MethodGet, path: collection + id.Hex() + "/", query: url.Values{"field": fields}})
	if err != nil {
		return err
	}
	return decodeJSON(r, out)
}

// VersionInfo is the answer of GET /api/version/.
type VersionInfo struct {
	Version       string `json:"version"`
	LatestVersion string `json:"latest_version,omitempty"`
}

// Version reads the server version (Waldur lets staff and support users call it).
func (c *Client) Version(ctx context.Context) (*VersionInfo, error) {
	r, err := c.do(ctx, call{kind: KindVersion, method: http.MethodGet, path: "version/"})
	if err != nil {
		return nil, fmt.Errorf("read waldur version: %w", err)
	}
	var v VersionInfo
	if err := decodeJSON(r, &v); err != nil {
		return nil, fmt.Errorf("read waldur version: %w", err)
	}
	return &v, nil
}

// canonical normalises u and rejects a malformed UUID before it reaches a URL.
func canonical(what string, u UUID) (UUID, error) {
	p, err := ParseUUID(string(u))
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}
