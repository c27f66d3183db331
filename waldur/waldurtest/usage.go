package waldurtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

// Component usage reporting, after waldur-api.md §6: one record per resource,
// component type and billing month; set_usage replaces the amount (and the
// description and date) of the records it names and leaves the others alone.

// usageStates are the resource states in which Waldur accepts usage.
var usageStates = []string{waldur.ResourceOK, waldur.ResourceUpdating, waldur.ResourceTerminating}

// amountPattern is the decimal format of ComponentUsageItemRequest.amount.
var amountPattern = regexp.MustCompile(`^-?\d{0,18}(?:\.\d{0,2})?$`)

var usageFilters = []filter{
	{"resource_uuid", "resource_uuid", uuidSingle},
	{"offering_uuid", "offering_uuid", uuidSingle},
	{"project_uuid", "project_uuid", uuidSingle},
	{"billing_period", "billing_period", exact},
	{"type", "type", exact},
}

func (s *Server) listUsages(r *http.Request, _ []byte, op *operation) *response {
	return s.list(r, op, s.data.usages.items, usageFilters)
}

// setUsage implements POST marketplace-component-usages/set_usage/. The billing
// month is the calendar month of the given date as written (its own offset), or
// of the current UTC time without one.
func (s *Server) setUsage(_ *http.Request, body []byte, _ *operation) *response {
	b, bad := decodeBody(body)
	if bad != nil {
		return bad
	}
	if _, ok := b["plan_period"]; ok {
		return jsonResponse(http.StatusBadRequest, map[string][]string{"plan_period": {"waldurtest does not model plan periods."}})
	}
	rid, _ := b["resource"].(string)
	res, ok := s.data.resources.get(rid)
	if !ok {
		return jsonResponse(http.StatusBadRequest, map[string][]string{"resource": {fmt.Sprintf("Invalid pk %q - object does not exist.", rid)}})
	}
	if !slices.Contains(usageStates, fmt.Sprint(res["state"])) {
		return jsonResponse(http.StatusBadRequest, map[string][]string{"resource": {"Resource is not in valid state."}})
	}
	date := time.Now().UTC()
	if v, ok := b["date"].(string); ok && v != "" {
		d, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return jsonResponse(http.StatusBadRequest, map[string][]string{"date": {"Datetime has wrong format."}})
		}
		date = d
	}
	period := waldur.BillingPeriod(date)
	items, _ := b["usages"].([]any)
	var invalid []string
	type item struct {
		typ, desc string
		amount    json.Number
	}
	var parsed []item
	for _, raw := range items {
		m, _ := raw.(map[string]any)
		typ, _ := m["type"].(string)
		amount, _ := m["amount"].(string)
		desc, _ := m["description"].(string)
		if !amountPattern.MatchString(amount) || amount == "" {
			return jsonResponse(http.StatusBadRequest, map[string]any{"usages": []map[string][]string{{"amount": {"A valid number is required."}}}})
		}
		if comps, known := s.data.components[uuidKey(res["offering_uuid"])]; known && !slices.ContainsFunc(comps, func(c waldur.OfferingComponent) bool {
			return c.Type == typ && (c.BillingType == "usage" || c.BillingType == "limit")
		}) {
			invalid = append(invalid, typ)
			continue
		}
		parsed = append(parsed, item{typ: typ, desc: desc, amount: json.Number(normalizeAmount(amount))})
	}
	if len(invalid) > 0 {
		sort.Strings(invalid)
		return jsonResponse(http.StatusBadRequest, []string{"These components are invalid: " + strings.Join(invalid, ", ") + "."})
	}
	current, _ := res["current_usages"].(map[string]any)
	if current == nil {
		current = map[string]any{}
	}
	for _, it := range parsed {
		rec := s.data.usageRecord(res, it.typ, period)
		rec["usage"], rec["description"], rec["date"] = it.amount, it.desc, date.Format(time.RFC3339Nano)
		current[it.typ] = it.amount
	}
	res["current_usages"] = current
	return emptyResponse(http.StatusCreated)
}

// normalizeAmount turns "12.5" into "12.50" and ".5" into "0.50": the number
// Waldur's decimal(20,2) column would render.
func normalizeAmount(a string) string {
	f, err := strconv.ParseFloat(a, 64)
	if err != nil {
		return a
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// usageRecord returns the record of (resource, type, period), creating it.
func (d *store) usageRecord(res object, typ, period string) object {
	rid := uuidKey(res["uuid"])
	for _, u := range d.usages.items {
		if uuidKey(u["resource_uuid"]) == rid && u["type"] == typ && u["billing_period"] == period {
			return u
		}
	}
	seq := d.next()
	id := fmt.Sprintf("5eed%04x000040008000%012x", tagUsage, seq)
	name, unit := typ, ""
	for _, c := range d.components[uuidKey(res["offering_uuid"])] {
		if c.Type == typ {
			name, unit = cmpOr(c.Name, typ), c.MeasuredUnit
		}
	}
	rec := object{
		"uuid": id, "created": now(), "description": "", "type": typ, "name": name, "measured_unit": unit,
		"usage": json.Number("0"), "date": now(), "recurring": false,
		"resource_name": fmt.Sprint(res["name"]), "resource_uuid": rid,
		"offering_name": fmt.Sprint(res["offering_name"]), "offering_uuid": uuidKey(res["offering_uuid"]),
		"project_name": fmt.Sprint(res["project_name"]), "project_uuid": uuidKey(res["project_uuid"]),
		"customer_name": fmt.Sprint(res["customer_name"]), "customer_uuid": uuidKey(res["customer_uuid"]),
		"billing_period": period, "modified_by": nil,
	}
	d.usages.put(rec)
	return rec
}

// Usages returns the stored usage records of a resource, decoded, sorted by
// billing period and component type.
func (s *Server) Usages(resource waldur.UUID) []waldur.ComponentUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []waldur.ComponentUsage
	for _, o := range s.data.usages.items {
		if uuidKey(o["resource_uuid"]) != uuidKey(string(resource)) {
			continue
		}
		b, err := json.Marshal(o)
		var u waldur.ComponentUsage
		if err == nil {
			err = json.Unmarshal(b, &u)
		}
		if err != nil {
			s.t.Errorf("waldurtest: decode stored usage: %v", err)
			continue
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b waldur.ComponentUsage) int {
		if c := strings.Compare(a.BillingPeriod, b.BillingPeriod); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return out
}

// AddUsageJSON stores usage records given as a JSON object or array, verbatim
// (for records another reporter wrote).
func (s *Server) AddUsageJSON(raw []byte) {
	s.putJSON(raw, func(d *store) *collection { return d.usages })
}
