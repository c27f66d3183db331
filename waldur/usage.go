package waldur

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ComponentUsage is one usage record: the amount of one component of one
// resource in one billing month (GET /api/marketplace-component-usages/).
type ComponentUsage struct {
	UUID         UUID   `json:"uuid"`
	ResourceUUID UUID   `json:"resource_uuid"`
	Type         string `json:"type"`
	// Usage is declared an integer by the 8.0.5 schema but is a decimal(20,2)
	// column: it arrives as "57.25" or 57.25.
	Usage       Amount    `json:"usage"`
	Description string    `json:"description"`
	Date        time.Time `json:"date"`
	// BillingPeriod is the first day of the month, YYYY-MM-DD.
	BillingPeriod string    `json:"billing_period"`
	Created       time.Time `json:"created"`
}

// componentUsageFields is the field selection of usage lists.
var componentUsageFields = jsonFields[ComponentUsage]()

// UsageFilter selects usage records; empty fields do not filter.
type UsageFilter struct {
	Offering UUID
	Resource UUID
	// BillingPeriod is a month; only its year and month are used.
	BillingPeriod time.Time
}

// BillingPeriod formats the billing period of month t as Waldur does (the first
// day of the month, YYYY-MM-DD), in t's location.
func BillingPeriod(t time.Time) string {
	return fmt.Sprintf("%04d-%02d-01", t.Year(), int(t.Month()))
}

// ListComponentUsages returns the usage records matching f, sorted by resource,
// then component type.
func (c *Client) ListComponentUsages(ctx context.Context, f UsageFilter) ([]ComponentUsage, error) {
	q := url.Values{"field": componentUsageFields}
	for _, p := range []struct {
		name string
		id   UUID
	}{{"offering_uuid", f.Offering}, {"resource_uuid", f.Resource}} {
		if p.id == "" {
			continue
		}
		id, err := canonical(strings.TrimSuffix(p.name, "_uuid"), p.id)
		if err != nil {
			return nil, fmt.Errorf("list component usages: %w", err)
		}
		q.Set(p.name, id.Hex())
	}
	if !f.BillingPeriod.IsZero() {
		q.Set("billing_period", BillingPeriod(f.BillingPeriod))
	}
	out, err := listStrict[ComponentUsage](ctx, c, KindUsagesList, "marketplace-component-usages/", q)
	if err != nil {
		return nil, fmt.Errorf("list component usages (%s): %w", describeUsageFilter(f), err)
	}
	slices.SortStableFunc(out, func(a, b ComponentUsage) int {
		return cmp.Or(cmp.Compare(a.ResourceUUID, b.ResourceUUID), cmp.Compare(a.Type, b.Type), cmp.Compare(a.BillingPeriod, b.BillingPeriod))
	})
	return out, nil
}

func describeUsageFilter(f UsageFilter) string {
	var parts []string
	if f.Offering != "" {
		parts = append(parts, "offering "+string(f.Offering))
	}
	if f.Resource != "" {
		parts = append(parts, "resource "+string(f.Resource))
	}
	if !f.BillingPeriod.IsZero() {
		parts = append(parts, "billing period "+BillingPeriod(f.BillingPeriod))
	}
	return strings.Join(parts, ", ")
}

// UsageItem is the amount of one component in a usage report.
type UsageItem struct {
	Type string `json:"type"`
	// Amount is a decimal string with at most two decimals, e.g. "12.50".
	Amount      string `json:"amount"`
	Description string `json:"description,omitempty"`
}

// UsageReport is the body of set_usage: month-to-date totals of one resource.
type UsageReport struct {
	Resource UUID `json:"resource"`
	// Date decides the billing month; it is sent with its offset.
	Date   time.Time   `json:"-"`
	Usages []UsageItem `json:"usages"`
}

// FormatAmount renders v as the two-decimal string set_usage takes.
func FormatAmount(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// SetUsage reports component usage of a resource (set_usage). Waldur keeps one
// record per resource, component and billing month and replaces its amount, so
// a report carries month-to-date totals, not increments. Waldur accepts it only
// for resources in state OK, Updating or Terminating (400 otherwise).
func (c *Client) SetUsage(ctx context.Context, r UsageReport) error {
	id, err := canonical("resource", r.Resource)
	if err != nil {
		return fmt.Errorf("set usage: %w", err)
	}
	body := map[string]any{"resource": id.Hex(), "usages": r.Usages}
	if !r.Date.IsZero() {
		body["date"] = r.Date.Format(time.RFC3339)
	}
	if _, err := c.do(ctx, call{kind: KindUsageSet, method: http.MethodPost, path: "marketplace-component-usages/set_usage/", body: body}); err != nil {
		return fmt.Errorf("set usage of resource %s: %w", id, err)
	}
	return nil
}

// ProviderOffering is what the provider side reads of an offering
// (GET /api/marketplace-provider-offerings/<uuid>/, ProviderOfferingDetails;
// a contract operation of the 8.1 subset, outside the 8.0.5 one). Only the
// fields used here are decoded.
type ProviderOffering struct {
	UUID         UUID                `json:"uuid"`
	Name         string              `json:"name"`
	Type         string              `json:"type"`
	State        string              `json:"state"`
	CustomerName string              `json:"customer_name"`
	BackendID    string              `json:"backend_id"`
	Components   []OfferingComponent `json:"components"`
}

// OfferingComponent is one component of an offering.
type OfferingComponent struct {
	Type         string `json:"type"`
	Name         string `json:"name"`
	MeasuredUnit string `json:"measured_unit"`
	// BillingType is fixed, usage, limit, one or few.
	BillingType string `json:"billing_type"`
}

var providerOfferingFields = jsonFields[ProviderOffering]()

// GetProviderOffering reads an offering as its provider sees it.
func (c *Client) GetProviderOffering(ctx context.Context, offering UUID) (*ProviderOffering, error) {
	var out ProviderOffering
	if err := c.getOne(ctx, KindOfferingGet, "marketplace-provider-offerings/", offering, providerOfferingFields, &out); err != nil {
		return nil, fmt.Errorf("read offering %s: %w", offering, err)
	}
	return &out, nil
}

// User is the authenticated user (GET /api/users/me/, UserMe in the 8.1
// subset; outside the 8.0.5 one).
type User struct {
	UUID     UUID   `json:"uuid"`
	Username string `json:"username"`
	FullName string `json:"full_name"`
	IsStaff  Flag   `json:"is_staff"`
}

// CurrentUser reads the user the token belongs to; it is the cheapest check
// that the token is valid.
func (c *Client) CurrentUser(ctx context.Context) (*User, error) {
	r, err := c.do(ctx, call{kind: KindUserMe, method: http.MethodGet, path: "users/me/"})
	if err != nil {
		return nil, fmt.Errorf("read the token's user: %w", err)
	}
	var u User
	if err := decodeJSON(r, &u); err != nil {
		return nil, fmt.Errorf("read the token's user: %w", err)
	}
	return &u, nil
}
