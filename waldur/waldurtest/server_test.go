package waldurtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

const offering = waldur.UUID("7d1f3b2c9a4e4c0f8b6a5e2d1c0b9a87")

// collector gathers violations instead of failing the test.
type collector struct {
	mu   sync.Mutex
	seen []waldurtest.Violation
}

func (c *collector) add(v waldurtest.Violation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, v)
}

func (c *collector) take() []waldurtest.Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.seen
	c.seen = nil
	return out
}

// do sends a raw request with the server's token (unless auth is given).
func do(t *testing.T, srv *waldurtest.Server, method, path, body string, auth ...string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Token "+srv.Token())
	if len(auth) > 0 {
		req.Header.Set("Authorization", auth[0])
		if auth[0] == "" {
			req.Header.Del("Authorization")
		}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func seedResources(srv *waldurtest.Server, n int) {
	for range n {
		srv.AddResource(waldur.Resource{OfferingUUID: offering})
	}
}

func TestPagingFollowsDRF(t *testing.T) {
	srv := waldurtest.New(t)
	seedResources(srv, 25)
	base := srv.URL() + "/api/marketplace-provider-resources/"
	link := func(q string) string { return "<" + base + q + ">" }
	tests := []struct {
		name, query string
		wantStatus  int
		wantItems   int
		wantLink    string
	}{
		{"default page size is 10", "", 200, 10,
			link("") + `; rel="first", ` + link("?page=2") + `; rel="next", ` + link("?page=3") + `; rel="last"`},
		{"middle page, prev to page 1 drops page, keys sorted", "?page_size=10&page=2&o=created", 200, 10,
			link("?o=created&page_size=10") + `; rel="first", ` + link("?o=created&page_size=10") + `; rel="prev", ` +
				link("?o=created&page=3&page_size=10") + `; rel="next", ` + link("?o=created&page=3&page_size=10") + `; rel="last"`},
		{"last page has no next", "?page=3&page_size=10", 200, 5,
			link("?page_size=10") + `; rel="first", ` + link("?page=2&page_size=10") + `; rel="prev", ` + link("?page=3&page_size=10") + `; rel="last"`},
		{"page size clamped to 300, single page has no page in last", "?page_size=1000", 200, 25,
			link("?page_size=1000") + `; rel="first", ` + link("?page_size=1000") + `; rel="last"`},
		{"past the end", "?page=4&page_size=10", 404, 0, ""},
		{"page zero", "?page=0", 404, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, srv, "GET", "/api/marketplace-provider-resources/"+tt.query, "")
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantStatus == 404 {
				if body != `{"detail":"Invalid page."}` {
					t.Errorf("body %s", body)
				}
				return
			}
			var items []map[string]any
			if err := json.Unmarshal([]byte(body), &items); err != nil {
				t.Fatalf("body is not a bare array: %v", err)
			}
			if len(items) != tt.wantItems {
				t.Errorf("got %d items, want %d", len(items), tt.wantItems)
			}
			if got := resp.Header.Get("X-Result-Count"); got != "25" {
				t.Errorf("X-Result-Count %q", got)
			}
			if got := resp.Header.Get("Link"); got != tt.wantLink {
				t.Errorf("Link\n got %s\nwant %s", got, tt.wantLink)
			}
		})
	}
}

// A listing read page by page sees every change made between two pages:
// by a request or by a test through the server's methods.
func TestPagesSeeChangesBetweenThem(t *testing.T) {
	srv := waldurtest.New(t)
	seedResources(srv, 5)
	count := func(query string) string {
		t.Helper()
		resp, body := do(t, srv, "GET", "/api/marketplace-provider-resources/"+query, "")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if resp.ContentLength != int64(len(body)) { // declared, as Django declares it
			t.Errorf("Content-Length %d, body of %d bytes", resp.ContentLength, len(body))
		}
		return resp.Header.Get("X-Result-Count")
	}
	if got := count("?page_size=2&o=created"); got != "5" {
		t.Fatalf("page 1: %s resources", got)
	}
	if got := count("?page_size=2&o=created&page=2"); got != "5" {
		t.Fatalf("page 2, nothing changed: %s resources", got)
	}
	srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "late", State: waldur.ResourceOK})
	if got := count("?page_size=2&o=created&page=3"); got != "6" {
		t.Errorf("page 3 after a resource was added: %s resources, want 6", got)
	}
}

func TestTokenAuthentication(t *testing.T) {
	var c collector
	srv := waldurtest.New(t, waldurtest.WithViolationHandler(c.add))
	tests := []struct {
		name, header   string
		wantStatus     int
		wantDetail     string
		wantViolations bool // the contract's security requirement is not met
	}{
		{"valid", "Token " + srv.Token(), 200, "", false},
		{"keyword in any case", "tOKEN " + srv.Token(), 200, "", false},
		{"wrong key", "Token 0000", 401, "Invalid token.", false},
		{"missing header", "", 401, "Authentication credentials were not provided.", true},
		{"other keyword", "Basic abc", 401, "Authentication credentials were not provided.", true},
		{"keyword only", "Token", 401, "Invalid token header. No credentials provided.", true},
		{"three parts", "Token a b", 401, "Invalid token header. Token string should not contain spaces.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, srv, "GET", "/api/version/", "", tt.header)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus == 401 {
				if resp.Header.Get("WWW-Authenticate") != "Token" {
					t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
				}
				var d struct{ Detail string }
				_ = json.Unmarshal([]byte(body), &d)
				if d.Detail != tt.wantDetail {
					t.Errorf("detail %q, want %q", d.Detail, tt.wantDetail)
				}
			}
			if v := c.take(); (len(v) > 0) != tt.wantViolations {
				t.Errorf("violations %v, want some: %v", v, tt.wantViolations)
			}
		})
	}
}

// TestContractValidationCatchesViolations proves that validation is on: each
// broken request or response below must be reported, and a clean one must not.
func TestContractValidationCatchesViolations(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		seed                     func(*waldurtest.Server)
		opts                     []waldurtest.Option
		wantKind                 string // "" = no violation
		wantInErr                string
	}{
		{name: "clean list", method: "GET", path: "/api/marketplace-provider-resources/?state=OK&field=uuid&o=created"},
		{name: "enum value not in schema", method: "GET", path: "/api/marketplace-provider-resources/?state=Active",
			wantKind: "request", wantInErr: "state"},
		{name: "unknown field name", method: "GET", path: "/api/marketplace-orders/?field=no_such_field",
			wantKind: "request", wantInErr: "field"},
		{name: "undeclared query parameter", method: "GET", path: "/api/marketplace-orders/?offering_uid=" + string(offering),
			wantKind: "request", wantInErr: "offering_uid"},
		{name: "malformed uuid filter", method: "GET", path: "/api/marketplace-offering-users/?offering_uuid=xyz",
			wantKind: "request", wantInErr: "offering_uuid"},
		{name: "body where none is declared", method: "POST", path: "/api/marketplace-orders/" + string(offering) + "/set_state_done/",
			body: "{}", wantKind: "request"},
		{name: "enum value not in schema, unchecked", method: "GET", path: "/api/marketplace-provider-resources/?state=Active",
			opts: []waldurtest.Option{waldurtest.WithoutContractChecks()}},
		{name: "response violating the schema, unchecked", method: "GET", path: "/api/marketplace-provider-resources/",
			opts: []waldurtest.Option{waldurtest.WithoutContractChecks()},
			seed: func(s *waldurtest.Server) {
				s.AddResourceJSON([]byte(`{"uuid": "0c1d2e3f405162738495a6b7c8d9e0f1", "state": "Bogus", "limits": {"cpu": "four"}}`))
			}},
		{name: "path outside the subset, unchecked all the same", method: "GET", path: "/api/marketplace-categories/",
			opts: []waldurtest.Option{waldurtest.WithoutContractChecks()}, wantKind: "route"},
		{name: "path outside the subset", method: "GET", path: "/api/marketplace-categories/", wantKind: "route"},
		{name: "path outside the subset, allowed", method: "GET", path: "/api/marketplace-categories/",
			opts: []waldurtest.Option{waldurtest.AllowPath("/api/marketplace-categories/")}},
		{name: "users/me is a contract operation of 8.1", method: "GET", path: "/api/users/me/?field=username"},
		{name: "users/me field outside its enum", method: "GET", path: "/api/users/me/?field=no_such_field",
			wantKind: "request", wantInErr: "field"},
		{name: "users/me is outside the 8.0.5 subset", method: "GET", path: "/api/users/me/",
			opts: []waldurtest.Option{waldurtest.WithSubset(waldurtest.Subset805)}, wantKind: "route"},
		{name: "users/me allowed under 8.0.5", method: "GET", path: "/api/users/me/",
			opts: []waldurtest.Option{waldurtest.WithSubset(waldurtest.Subset805), waldurtest.AllowPath("/api/users/me/")}},
		{name: "fractional limits are valid in 8.1", method: "GET", path: "/api/marketplace-provider-resources/",
			seed: func(s *waldurtest.Server) {
				s.AddResource(waldur.Resource{UUID: "0c1d2e3f405162738495a6b7c8d9e0f1", Limits: waldur.Limits{"cpu": "2.5"}})
			}},
		{name: "fractional limits violate the 8.0.5 contract", method: "GET", path: "/api/marketplace-provider-resources/",
			opts: []waldurtest.Option{waldurtest.WithSubset(waldurtest.Subset805)},
			seed: func(s *waldurtest.Server) {
				s.AddResource(waldur.Resource{UUID: "0c1d2e3f405162738495a6b7c8d9e0f1", Limits: waldur.Limits{"cpu": "2.5"}})
			},
			wantKind: "response", wantInErr: "limits"},
		{name: "plan read is a contract operation of 8.1", method: "GET", path: "/api/marketplace-plans/0c1d2e3f405162738495a6b7c8d9e0f1/",
			seed: func(s *waldurtest.Server) {
				s.AddPlan(waldur.Plan{UUID: "0c1d2e3f405162738495a6b7c8d9e0f1", Name: "large", Quotas: waldur.Limits{"cpu": "8"}})
			}},
		{name: "plan read takes no field selection", method: "GET", path: "/api/marketplace-plans/0c1d2e3f405162738495a6b7c8d9e0f1/?field=quotas",
			wantKind: "request", wantInErr: "field"},
		{name: "method not in the subset", method: "DELETE", path: "/api/marketplace-orders/" + string(offering) + "/",
			wantKind: "route"},
		{name: "response violating the schema", method: "GET", path: "/api/marketplace-provider-resources/",
			seed: func(s *waldurtest.Server) {
				s.AddResourceJSON([]byte(`{"uuid": "0c1d2e3f405162738495a6b7c8d9e0f1", "state": "Bogus", "limits": {"cpu": "four"}}`))
			},
			wantKind: "response", wantInErr: "state"},
		{name: "response missing a required key", method: "GET", path: "/api/marketplace-provider-resources/0c1d2e3f405162738495a6b7c8d9e0f1/team/",
			seed: func(s *waldurtest.Server) {
				s.AddResource(waldur.Resource{UUID: "0c1d2e3f405162738495a6b7c8d9e0f1", ProjectUUID: "a0b1c2d3e4f5461788990a1b2c3d4e5f"})
				s.SetTeamJSON("a0b1c2d3e4f5461788990a1b2c3d4e5f", []byte(`[{"uuid": "3e2d1c0b9a8f47e6d5c4b3a291807f6e", "username": "x", "role": "admin"}]`))
			},
			wantKind: "response", wantInErr: "offering_user_state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c collector
			srv := waldurtest.New(t, append(tt.opts, waldurtest.WithViolationHandler(c.add))...)
			if tt.seed != nil {
				tt.seed(srv)
			}
			do(t, srv, tt.method, tt.path, tt.body)
			got := c.take()
			if tt.wantKind == "" {
				if len(got) > 0 {
					t.Fatalf("unexpected violations: %v", got)
				}
				return
			}
			if len(got) == 0 {
				t.Fatalf("no violation reported")
			}
			if got[0].Kind != tt.wantKind || !strings.Contains(got[0].Err.Error(), tt.wantInErr) {
				t.Errorf("violation %v, want kind %s mentioning %q", got[0], tt.wantKind, tt.wantInErr)
			}
			if len(srv.Violations()) != len(got) {
				t.Errorf("Violations() = %d, handler saw %d", len(srv.Violations()), len(got))
			}
		})
	}
}

func TestFiltersAndFieldSelection(t *testing.T) {
	srv := waldurtest.New(t)
	other := waldur.UUID("11111111111141118111111111111111")
	srv.AddResource(waldur.Resource{OfferingUUID: offering, State: waldur.ResourceOK, Name: "a"})
	srv.AddResource(waldur.Resource{OfferingUUID: offering, State: waldur.ResourceErred, Name: "b"})
	srv.AddResource(waldur.Resource{OfferingUUID: other, State: waldur.ResourceOK, Name: "c"})
	srv.AddOfferingUser(offering, waldur.OfferingUser{Username: "u1"})
	srv.AddOfferingUser(offering, waldur.OfferingUser{Username: "u2", IsRestricted: true})
	tests := []struct {
		name, path string
		wantStatus int
		wantNames  []string
		wantKeys   int
	}{
		{"offering filter", "/api/marketplace-provider-resources/?offering_uuid=" + string(offering) + "&field=name", 200, []string{"a", "b"}, 1},
		{"offering filter, dashed, comma list", "/api/marketplace-provider-resources/?offering_uuid=" + offering.Dashed() + "," + string(other) + "&field=name", 200, []string{"a", "b", "c"}, 1},
		{"repeated state", "/api/marketplace-provider-resources/?state=Erred&state=Creating&field=name&field=uuid", 200, []string{"b"}, 2},
		{"descending order", "/api/marketplace-provider-resources/?o=-created&field=name", 200, []string{"c", "b", "a"}, 1},
		{"is_restricted", "/api/marketplace-offering-users/?is_restricted=false&field=username", 200, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, srv, "GET", tt.path, "")
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var items []map[string]any
			if err := json.Unmarshal([]byte(body), &items); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, it := range items {
				if len(it) != tt.wantKeys {
					t.Errorf("item has keys %v, want %d", it, tt.wantKeys)
				}
				if n, ok := it["name"].(string); ok {
					names = append(names, n)
				}
				if u, ok := it["username"].(string); ok && u != "u1" {
					t.Errorf("restricted user %q listed", u)
				}
			}
			if tt.wantNames != nil && strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("names %v, want %v", names, tt.wantNames)
			}
		})
	}
}

func TestBadFilterValueIs400(t *testing.T) {
	var c collector
	srv := waldurtest.New(t, waldurtest.WithViolationHandler(c.add))
	resp, body := do(t, srv, "GET", "/api/marketplace-orders/?offering_uuid=not-a-uuid", "")
	if resp.StatusCode != 400 || body != `{"offering_uuid":["Enter a valid UUID."]}` {
		t.Errorf("got %d %s", resp.StatusCode, body)
	}
	if len(c.take()) == 0 {
		t.Error("the malformed filter was not reported as a request violation")
	}
}

func TestOrderStateMachine(t *testing.T) {
	type step struct {
		action, body string
		wantStatus   int
		wantBody     string
	}
	tests := []struct {
		name          string
		order         waldur.Order
		steps         []step
		wantOrder     string
		wantResource  string
		wantLimits    string
		resourceState string
	}{
		{name: "create: approve then done",
			order: waldur.Order{Type: waldur.OrderCreate},
			steps: []step{
				{"approve_by_provider", "{}", 200, `{"detail":"Order has been approved and is being processed."}`},
				{"approve_by_provider", "{}", 409, `{"detail":"Valid states for operation: pending-provider."}`},
				{"set_state_done", "", 200, ""},
			},
			resourceState: waldur.ResourceCreating, wantOrder: waldur.OrderDone, wantResource: waldur.ResourceOK},
		{name: "done only from executing",
			order:         waldur.Order{Type: waldur.OrderCreate},
			steps:         []step{{"set_state_done", "", 409, `{"detail":"Valid states for operation: executing."}`}},
			resourceState: waldur.ResourceCreating, wantOrder: waldur.OrderPendingProvider, wantResource: waldur.ResourceCreating},
		{name: "update done copies the limits",
			order:         waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting, Limits: waldur.Limits{"cpu": "8"}},
			steps:         []step{{"set_state_done", "", 200, ""}},
			resourceState: waldur.ResourceUpdating, wantOrder: waldur.OrderDone, wantResource: waldur.ResourceOK, wantLimits: `{"cpu":8}`},
		{name: "terminate done",
			order:         waldur.Order{Type: waldur.OrderTerminate, State: waldur.OrderExecuting},
			steps:         []step{{"set_state_done", "", 200, ""}},
			resourceState: waldur.ResourceTerminating, wantOrder: waldur.OrderDone, wantResource: waldur.ResourceTerminated},
		{name: "erred needs both keys",
			order: waldur.Order{Type: waldur.OrderCreate, State: waldur.OrderExecuting},
			steps: []step{
				{"set_state_erred", `{"error_message": "boom"}`, 500, "<h1>Server Error (500)</h1>\n"},
				{"set_state_erred", `{"error_message": "boom", "error_traceback": ""}`, 200, ""},
			},
			resourceState: waldur.ResourceCreating, wantOrder: waldur.OrderErred, wantResource: waldur.ResourceErred},
		{name: "erred on a terminate restores the resource",
			order:         waldur.Order{Type: waldur.OrderTerminate, State: waldur.OrderExecuting},
			steps:         []step{{"set_state_erred", `{"error_message": "", "error_traceback": ""}`, 200, ""}},
			resourceState: waldur.ResourceTerminating, wantOrder: waldur.OrderErred, wantResource: waldur.ResourceOK},
		{name: "erred leaves a pending order alone",
			order:         waldur.Order{Type: waldur.OrderCreate},
			steps:         []step{{"set_state_erred", `{"error_message": "x", "error_traceback": "y"}`, 200, ""}},
			resourceState: waldur.ResourceCreating, wantOrder: waldur.OrderPendingProvider, wantResource: waldur.ResourceCreating},
		{name: "reject",
			order: waldur.Order{Type: waldur.OrderCreate},
			steps: []step{
				{"reject_by_provider", `{"provider_rejection_comment": "no budget"}`, 200, ""},
				{"reject_by_provider", `{}`, 409, `{"detail":"Valid states for operation: pending-provider."}`},
			},
			resourceState: waldur.ResourceCreating, wantOrder: "rejected", wantResource: waldur.ResourceTerminated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t)
			res := srv.AddResource(waldur.Resource{OfferingUUID: offering, State: tt.resourceState, Limits: waldur.Limits{"cpu": "4"}})
			tt.order.MarketplaceResourceUUID = res
			id := srv.AddOrder(offering, tt.order)
			for _, s := range tt.steps {
				resp, body := do(t, srv, "POST", "/api/marketplace-orders/"+string(id)+"/"+s.action+"/", s.body)
				if resp.StatusCode != s.wantStatus || body != s.wantBody {
					t.Errorf("%s: got %d %q, want %d %q", s.action, resp.StatusCode, body, s.wantStatus, s.wantBody)
				}
			}
			if o, _ := srv.Order(id); o.State != tt.wantOrder {
				t.Errorf("order state %q, want %q", o.State, tt.wantOrder)
			}
			r, _ := srv.Resource(res)
			if r.State != tt.wantResource {
				t.Errorf("resource state %q, want %q", r.State, tt.wantResource)
			}
			if tt.wantLimits != "" {
				if b, _ := json.Marshal(r.Limits); string(b) != tt.wantLimits {
					t.Errorf("limits %s, want %s", b, tt.wantLimits)
				}
			}
		})
	}
}

func TestUnknownObjectsAre404(t *testing.T) {
	srv := waldurtest.New(t)
	missing := "0c1d2e3f405162738495a6b7c8d9e0f1"
	for _, p := range []string{
		"GET /api/marketplace-orders/" + missing + "/",
		"GET /api/marketplace-provider-resources/" + missing + "/",
		"GET /api/marketplace-provider-resources/" + missing + "/team/",
		"POST /api/marketplace-orders/" + missing + "/approve_by_provider/",
		"POST /api/marketplace-provider-resources/" + missing + "/set_backend_id/",
	} {
		method, path, _ := strings.Cut(p, " ")
		resp, body := do(t, srv, method, path, "")
		if resp.StatusCode != 404 || body != `{"detail":"Not found."}` {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
}

func TestSetResourceBackendID(t *testing.T) {
	srv := waldurtest.New(t)
	id := srv.AddResource(waldur.Resource{OfferingUUID: offering})
	for _, want := range []string{"Resource backend_id has been changed.", "Resource backend_id is not changed."} {
		_, body := do(t, srv, "POST", "/api/marketplace-provider-resources/"+string(id)+"/set_backend_id/", `{"backend_id": "acc-1"}`)
		if body != `{"status":"`+want+`"}` {
			t.Errorf("body %s, want status %q", body, want)
		}
	}
	if r, _ := srv.Resource(id); r.BackendID != "acc-1" {
		t.Errorf("backend_id %q", r.BackendID)
	}
}

func TestFaultsCountersAndPrefix(t *testing.T) {
	srv := waldurtest.New(t, waldurtest.WithPathPrefix("/wapi"))
	if !strings.HasSuffix(srv.URL(), "/wapi") {
		t.Fatalf("URL %s", srv.URL())
	}
	srv.InjectFault(waldurtest.Fault{Count: 1, PathPrefix: "/api/version/", Status: 429, RetryAfter: "3"})
	resp, _ := do(t, srv, "GET", "/api/version/", "")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("fault: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, body := do(t, srv, "GET", "/api/version/", "")
	if resp.StatusCode != 200 || body != `{"version":"8.1.3"}` {
		t.Errorf("after the fault: %d %s", resp.StatusCode, body)
	}
	if n := srv.Requests("/api/version/"); n != 2 {
		t.Errorf("Requests = %d, want 2", n)
	}
	var seen []string
	srv.OnRequest(func(r *http.Request, _ []byte) { seen = append(seen, r.URL.Path) })
	do(t, srv, "GET", "/api/version/", "")
	if len(seen) != 1 || seen[0] != "/api/version/" {
		t.Errorf("hook saw %v", seen)
	}
	srv.InjectFault(waldurtest.Fault{Count: 1, Drop: true})
	req, _ := http.NewRequest("GET", srv.URL()+"/api/version/", nil)
	req.Header.Set("Authorization", "Token "+srv.Token())
	tr := &http.Transport{DisableKeepAlives: true}
	if _, err := (&http.Client{Transport: tr}).Do(req); err == nil {
		t.Error("dropped connection gave no error")
	}
	if u, _ := url.Parse(srv.URL()); u.Hostname() != "127.0.0.1" {
		t.Errorf("server not on loopback: %s", srv.URL())
	}
}

// An unknown subset is refused when the server starts.
func TestUnknownSubset(t *testing.T) {
	srv, err := waldurtest.Start(io.Discard, waldurtest.WithSubset("9.9"))
	if err == nil {
		srv.Close()
		t.Fatal("Start accepted subset 9.9")
	}
	if !strings.Contains(err.Error(), `unknown openapi subset "9.9"`) {
		t.Errorf("error %v", err)
	}
}

// TestOfferingsExistAsInWaldur: an offering exists once added, seeded (even
// empty) or owning data; reading any other answers 404 and so do its
// account listings, while a listing filtered by it answers an empty page,
// as Waldur's do.
func TestOfferingsExistAsInWaldur(t *testing.T) {
	const (
		seeded  = "1a2b3c4d5e6f40718293a4b5c6d7e8f9"
		added   = "2b3c4d5e6f7a40818293a4b5c6d7e8f9"
		missing = "0c1d2e3f405162738495a6b7c8d9e0f1"
	)
	srv := waldurtest.New(t)
	srv.Seed(&waldur.State{Offerings: []waldur.OfferingState{{Name: "Empty", OfferingUUID: seeded}}})
	srv.AddOffering(waldur.ProviderOffering{UUID: added, Name: "Added"})
	srv.AddResource(waldur.Resource{OfferingUUID: offering})
	tests := []struct {
		name, path string
		status     int
		body       string
	}{
		{"seeded, empty", "/api/marketplace-provider-offerings/" + seeded + "/", 200, `"name":"Empty"`},
		{"added", "/api/marketplace-provider-offerings/" + added + "/", 200, `"name":"Added"`},
		{"owning a resource", "/api/marketplace-provider-offerings/" + string(offering) + "/", 200, `"uuid":"` + string(offering) + `"`},
		{"unknown", "/api/marketplace-provider-offerings/" + missing + "/", 404, `{"detail":"Not found."}`},
		{"unknown, its accounts", "/api/marketplace-provider-offerings/" + missing + "/list_project_service_accounts/", 404, `{"detail":"Not found."}`},
		{"unknown, its course accounts", "/api/marketplace-provider-offerings/" + missing + "/list_course_accounts/", 404, `{"detail":"Not found."}`},
		{"unknown, a filtered listing", "/api/marketplace-provider-resources/?offering_uuid=" + missing, 200, `[]`},
		{"seeded, its accounts", "/api/marketplace-provider-offerings/" + seeded + "/list_project_service_accounts/", 200, `[]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, srv, http.MethodGet, tc.path, "")
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
}
