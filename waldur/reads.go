package waldur

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
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
// Erred, Updating and Terminating, sorted by (created, uuid). Records that
// cannot be used are left out (ReadOffering reports them); an inconsistent
// listing is an *InconsistentListingError.
func (c *Client) ListResources(ctx context.Context, offering UUID) ([]Resource, error) {
	out, bad, err := c.listResources(ctx, offering)
	if err != nil {
		return nil, fmt.Errorf("list resources of offering %s: %w", offering, err)
	}
	c.logBad(bad)
	return out, nil
}

func (c *Client) listResources(ctx context.Context, offering UUID) ([]Resource, []BadRecord, error) {
	offering, err := canonical("offering", offering)
	if err != nil {
		return nil, nil, err
	}
	q := url.Values{"offering_uuid": {offering.Hex()}, "state": ListedResourceStates, "o": {"created"}, "field": resourceFields}
	raws, err := listAll(ctx, c, KindResourcesList, "marketplace-provider-resources/", q)
	if err != nil {
		return nil, nil, withOffering(err, offering)
	}
	all, bad := decodeRecords[Resource](RecordResource, raws)
	out := all[:0]
	for _, r := range all {
		if r.OfferingUUID != "" && r.OfferingUUID != offering {
			return nil, nil, fmt.Errorf("server returned resource %s of offering %s; is the offering_uuid filter supported?", r.UUID, r.OfferingUUID)
		}
		if r.State != ResourceTerminated {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Resource) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID))
	})
	return out, bad, nil
}

func (c *Client) listTerminated(ctx context.Context, offering UUID, since time.Time) ([]UUID, []BadRecord, error) {
	offering, err := canonical("offering", offering)
	if err != nil {
		return nil, nil, err
	}
	q := url.Values{"offering_uuid": {offering.Hex()}, "state": {ResourceTerminated}, "o": {"created"}, "field": {"uuid", "state"}}
	if !since.IsZero() {
		q.Set("modified", since.UTC().Format(time.RFC3339))
	}
	raws, err := listAll(ctx, c, KindTerminatedList, "marketplace-provider-resources/", q)
	if err != nil {
		return nil, nil, withOffering(err, offering)
	}
	type terminated struct {
		UUID  UUID   `json:"uuid"`
		State string `json:"state"`
	}
	var out []UUID
	var bad []BadRecord
	for i, raw := range raws {
		var t terminated
		if err := json.Unmarshal(raw, &t); err != nil || !t.UUID.Valid() {
			bad = append(bad, BadRecord{Kind: RecordResource, UUID: validKey(raw), Key: "uuid",
				Reason: fmt.Sprintf("record %d of the Terminated listing: key uuid is not a uuid", i+1)})
			continue
		}
		if t.State == ResourceTerminated {
			out = append(out, t.UUID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), bad, nil
}

// logBad warns about records left out of a listing whose caller does not
// return them.
func (c *Client) logBad(bad []BadRecord) {
	if len(bad) > 0 {
		c.log.Warn("waldur records skipped", "count", len(bad), "records", badRecordsText(bad))
	}
}

// ListOrders returns the orders of one offering in states pending-provider and
// executing, sorted by (created, uuid). Records that cannot be used are left
// out (ReadOffering reports them).
func (c *Client) ListOrders(ctx context.Context, offering UUID) ([]Order, error) {
	out, bad, err := c.listOrders(ctx, offering)
	if err != nil {
		return nil, err
	}
	c.logBad(bad)
	return out, nil
}

func (c *Client) listOrders(ctx context.Context, offering UUID) ([]Order, []BadRecord, error) {
	offering, err := canonical("offering", offering)
	if err != nil {
		return nil, nil, fmt.Errorf("list orders: %w", err)
	}
	q := url.Values{"offering_uuid": {offering.Hex()}, "state": listedOrderStates, "o": {"created"}, "field": orderFields}
	raws, err := listAll(ctx, c, KindOrdersList, "marketplace-orders/", q)
	if err != nil {
		return nil, nil, fmt.Errorf("list orders of offering %s: %w", offering, withOffering(err, offering))
	}
	out, bad := decodeRecords[Order](RecordOrder, raws)
	slices.SortStableFunc(out, func(a, b Order) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID))
	})
	return out, bad, nil
}

// ListOfferingUsers returns the unrestricted offering users of one offering,
// sorted by uuid. Records that cannot be used are left out (ReadOffering
// reports them).
func (c *Client) ListOfferingUsers(ctx context.Context, offering UUID) ([]OfferingUser, error) {
	out, bad, err := c.listOfferingUsers(ctx, offering)
	if err != nil {
		return nil, err
	}
	c.logBad(bad)
	return out, nil
}

func (c *Client) listOfferingUsers(ctx context.Context, offering UUID) ([]OfferingUser, []BadRecord, error) {
	offering, err := canonical("offering", offering)
	if err != nil {
		return nil, nil, fmt.Errorf("list offering users: %w", err)
	}
	q := url.Values{"offering_uuid": {offering.Hex()}, "is_restricted": {"false"}, "o": {"created"}, "field": offeringUserFields}
	raws, err := listAll(ctx, c, KindOfferingUsersList, "marketplace-offering-users/", q)
	if err != nil {
		return nil, nil, fmt.Errorf("list offering users of offering %s: %w", offering, withOffering(err, offering))
	}
	out, bad := decodeRecords[OfferingUser](RecordOfferingUser, raws)
	slices.SortStableFunc(out, func(a, b OfferingUser) int { return cmp.Compare(a.UUID, b.UUID) })
	return out, bad, nil
}

// ListServiceAccounts returns the project service accounts of one offering,
// in every state, sorted by uuid. Records that cannot be used are left out
// (ReadOffering reports them).
func (c *Client) ListServiceAccounts(ctx context.Context, offering UUID) ([]ServiceAccount, error) {
	out, bad, err := c.serviceAccounts(ctx, offering)
	if err != nil {
		return nil, err
	}
	c.logBad(bad)
	return out, nil
}

// ListCourseAccounts returns the course accounts of one offering, in every
// state, sorted by uuid. Records that cannot be used are left out
// (ReadOffering reports them).
func (c *Client) ListCourseAccounts(ctx context.Context, offering UUID) ([]CourseAccount, error) {
	out, bad, err := c.courseAccounts(ctx, offering)
	if err != nil {
		return nil, err
	}
	c.logBad(bad)
	return out, nil
}

// serviceAccounts lists the project service accounts of offering, sorted
// by uuid, and the records that cannot be used.
func (c *Client) serviceAccounts(ctx context.Context, offering UUID) ([]ServiceAccount, []BadRecord, error) {
	return listAccounts[ServiceAccount](ctx, c, offering, KindServiceAccounts, "list_project_service_accounts", RecordServiceAccount)
}

// courseAccounts lists the course accounts of offering, sorted by uuid, and
// the records that cannot be used.
func (c *Client) courseAccounts(ctx context.Context, offering UUID) ([]CourseAccount, []BadRecord, error) {
	return listAccounts[CourseAccount](ctx, c, offering, KindCourseAccounts, "list_course_accounts", RecordCourseAccount)
}

// listAccounts reads an offering's account listing (action is
// list_project_service_accounts or list_course_accounts). The endpoints take
// the offering filters, not the accounts' own, and no field selection, so
// every account is read and the caller filters.
func listAccounts[T ServiceAccount | CourseAccount](ctx context.Context, c *Client, offering UUID, kind, action, record string) ([]T, []BadRecord, error) {
	what := strings.ReplaceAll(strings.TrimPrefix(action, "list_"), "_", " ")
	offering, err := canonical("offering", offering)
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", what, err)
	}
	raws, err := listAll(ctx, c, kind, "marketplace-provider-offerings/"+offering.Hex()+"/"+action+"/", url.Values{})
	if err != nil {
		return nil, nil, fmt.Errorf("list %s of offering %s: %w", what, offering, withOffering(err, offering))
	}
	out, bad := decodeRecords[T](record, raws)
	slices.SortStableFunc(out, func(a, b T) int { return cmp.Compare(accountUUID(a), accountUUID(b)) })
	return out, bad, nil
}

func accountUUID[T ServiceAccount | CourseAccount](a T) UUID {
	switch v := any(a).(type) {
	case ServiceAccount:
		return v.UUID
	case CourseAccount:
		return v.UUID
	}
	return ""
}

// listStrict reads a listing and decodes every record; one that does not
// decode fails the listing.
func listStrict[T any](ctx context.Context, c *Client, kind, path string, q url.Values) ([]T, error) {
	raws, err := listAll(ctx, c, kind, path, q)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(raws))
	for i, raw := range raws {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decode record %d of %s: %w", i+1, path, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Team returns the team of a resource's project (an unpaginated list), sorted by
// user uuid. Members that cannot be used are left out (ReadOffering reports
// them).
func (c *Client) Team(ctx context.Context, resource UUID) ([]TeamMember, error) {
	out, bad, err := c.team(ctx, resource)
	if err != nil {
		return nil, fmt.Errorf("read team of resource %s: %w", resource, err)
	}
	c.logBad(bad)
	return out, nil
}

func (c *Client) team(ctx context.Context, resource UUID) ([]TeamMember, []BadRecord, error) {
	resource, err := canonical("resource", resource)
	if err != nil {
		return nil, nil, err
	}
	r, err := c.do(ctx, call{kind: KindTeam, method: http.MethodGet, path: "marketplace-provider-resources/" + resource.Hex() + "/team/"})
	if err != nil {
		return nil, nil, err
	}
	raws, err := decodeRaws(r)
	if err != nil {
		return nil, nil, err
	}
	out, bad := decodeRecords[TeamMember](RecordTeamMember, raws)
	for i := range bad {
		bad[i].Resource = resource
	}
	slices.SortStableFunc(out, func(a, b TeamMember) int { return cmp.Compare(a.UUID, b.UUID) })
	return out, bad, nil
}

// LookupResource reads one resource directly (GET
// marketplace-provider-resources/<uuid>/), to confirm an absence that a
// listing suggests. found is false with a nil error only when Waldur itself
// answered 404 with its JSON "Not found." body: the resource does not exist,
// or is no longer visible to the token's provider. Any other failure —
// including a 404 page that is not JSON, from a proxy or a wrong URL — is an
// error, and the resource's absence is unknown. A found resource may be in
// any state (Terminated included) and of any offering: check both.
func (c *Client) LookupResource(ctx context.Context, resource UUID) (res *Resource, found bool, err error) {
	res, err = c.GetResource(ctx, resource)
	var ae *APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound && ae.JSON {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return res, true, nil
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
