package waldur_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestOrderTransitions drives orders through the fake's state machine with the
// client: allowed transitions succeed, wrong states give 409.
func TestOrderTransitions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name         string
		order        waldur.Order
		run          func(c *waldur.Client, id waldur.UUID) error
		wantConflict bool
		wantOrder    string
		wantResource string
	}{
		{"approve pending", waldur.Order{Type: waldur.OrderCreate},
			func(c *waldur.Client, id waldur.UUID) error { return c.ApproveOrder(ctx, id) },
			false, waldur.OrderExecuting, waldur.ResourceCreating},
		{"approve executing is a conflict", waldur.Order{State: waldur.OrderExecuting},
			func(c *waldur.Client, id waldur.UUID) error { return c.ApproveOrder(ctx, id) },
			true, waldur.OrderExecuting, waldur.ResourceCreating},
		{"reject with comment", waldur.Order{Type: waldur.OrderUpdate},
			func(c *waldur.Client, id waldur.UUID) error { return c.RejectOrder(ctx, id, "over budget") },
			false, "rejected", waldur.ResourceCreating},
		{"done from pending is a conflict", waldur.Order{},
			func(c *waldur.Client, id waldur.UUID) error { return c.SetOrderDone(ctx, id) },
			true, waldur.OrderPendingProvider, waldur.ResourceCreating},
		{"create: approve, done", waldur.Order{Type: waldur.OrderCreate},
			func(c *waldur.Client, id waldur.UUID) error {
				if err := c.ApproveOrder(ctx, id); err != nil {
					return err
				}
				return c.SetOrderDone(ctx, id)
			},
			false, waldur.OrderDone, waldur.ResourceOK},
		{"erred with an empty traceback", waldur.Order{Type: waldur.OrderCreate, State: waldur.OrderExecuting},
			func(c *waldur.Client, id waldur.UUID) error {
				return c.SetOrderErred(ctx, id, "quota backend down", "")
			},
			false, waldur.OrderErred, waldur.ResourceErred},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t)
			res := srv.AddResource(waldur.Resource{OfferingUUID: offering, State: waldur.ResourceCreating})
			tt.order.MarketplaceResourceUUID = res
			id := srv.AddOrder(offering, tt.order)
			err := tt.run(clientFor(t, srv), id)
			if tt.wantConflict {
				if !waldur.IsConflict(err) || !strings.Contains(err.Error(), "Valid states for operation") {
					t.Fatalf("error %v, want 409", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if o, _ := srv.Order(id); o.State != tt.wantOrder {
				t.Errorf("order %s, want %s", o.State, tt.wantOrder)
			}
			if r, _ := srv.Resource(res); r.State != tt.wantResource {
				t.Errorf("resource %s, want %s", r.State, tt.wantResource)
			}
		})
	}
}

func TestWriteBodies(t *testing.T) {
	srv := waldurtest.New(t)
	var mu sync.Mutex
	bodies := map[string]string{}
	srv.OnRequest(func(r *http.Request, body []byte) {
		mu.Lock()
		defer mu.Unlock()
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		bodies[parts[len(parts)-1]] = string(body)
	})
	ctx := context.Background()
	c := clientFor(t, srv)
	res := srv.AddResource(waldur.Resource{OfferingUUID: offering})
	pending := srv.AddOrder(offering, waldur.Order{MarketplaceResourceUUID: res})
	pending2 := srv.AddOrder(offering, waldur.Order{MarketplaceResourceUUID: res})
	executing := srv.AddOrder(offering, waldur.Order{State: waldur.OrderExecuting, MarketplaceResourceUUID: res})
	for _, err := range []error{
		c.ApproveOrder(ctx, pending),
		c.RejectOrder(ctx, pending2, ""),
		c.SetOrderErred(ctx, executing, "", ""),
		c.SetResourceBackendID(ctx, res, "acc_1"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for action, want := range map[string]string{
		"approve_by_provider": `{}`,
		"reject_by_provider":  `{}`,
		"set_state_erred":     `{"error_message":"","error_traceback":""}`,
		"set_backend_id":      `{"backend_id":"acc_1"}`,
	} {
		if bodies[action] != want {
			t.Errorf("%s body %s, want %s", action, bodies[action], want)
		}
	}
	raw := srv.RawOrder(executing)
	if _, ok := raw["error_traceback"]; !ok || raw["state"] != waldur.OrderErred {
		t.Errorf("erred order %v", raw)
	}
	if r, _ := srv.Resource(res); r.BackendID != "acc_1" {
		t.Errorf("backend id %q", r.BackendID)
	}
}

func TestRejectSendsTheComment(t *testing.T) {
	srv := waldurtest.New(t)
	id := srv.AddOrder(offering, waldur.Order{})
	if err := clientFor(t, srv).RejectOrder(context.Background(), id, "over budget"); err != nil {
		t.Fatal(err)
	}
	if got := srv.RawOrder(id)["provider_rejection_comment"]; got != "over budget" {
		t.Errorf("comment %v", got)
	}
}

func TestGetOrderAndResource(t *testing.T) {
	srv := waldurtest.New(t)
	ctx := context.Background()
	c := clientFor(t, srv)
	res := srv.AddResource(waldur.Resource{OfferingUUID: offering, Name: "genomics", Limits: waldur.Limits{"cpu": "4"}})
	ord := srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, MarketplaceResourceUUID: res, Limits: waldur.Limits{"cpu": "8"}})
	r, err := c.GetResource(ctx, waldur.UUID(res.Dashed()))
	if err != nil || r.Name != "genomics" || r.Limits["cpu"] != "4" {
		t.Fatalf("GetResource = %+v, %v", r, err)
	}
	o, err := c.GetOrder(ctx, ord)
	if err != nil || o.Type != waldur.OrderUpdate || o.MarketplaceResourceUUID != res || o.Limits["cpu"] != "8" {
		t.Fatalf("GetOrder = %+v, %v", o, err)
	}
	if _, err := c.GetOrder(ctx, waldur.UUID("00000000000040008000000000000000")); !waldur.IsNotFound(err) {
		t.Errorf("missing order: %v", err)
	}
}

func TestMalformedUUIDsAreRejectedBeforeSending(t *testing.T) {
	srv := waldurtest.New(t)
	c := clientFor(t, srv)
	ctx := context.Background()
	bad := waldur.UUID("../../users/me")
	for name, err := range map[string]error{
		"approve": c.ApproveOrder(ctx, bad),
		"team":    func() error { _, err := c.Team(ctx, bad); return err }(),
		"read":    func() error { _, err := c.ReadOffering(ctx, "x", bad); return err }(),
		"backend": c.SetResourceBackendID(ctx, bad, "x"),
	} {
		if err == nil || !strings.Contains(err.Error(), "invalid uuid") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := srv.Requests("/"); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestStatsCountCallsByKind(t *testing.T) {
	srv := waldurtest.New(t)
	seedMixed(srv, []int{0, 1, 2, 3, 4})
	srv.InjectFault(waldurtest.Fault{Count: 1, PathPrefix: "/api/marketplace-orders/", Status: 502})
	c := clientFor(t, srv, pageSize(2))
	if _, err := c.ReadOffering(context.Background(), "iris", offering); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	want := map[string]int{
		waldur.KindResourcesList:     3,
		waldur.KindOrdersList:        4, // 3 pages + 1 retry
		waldur.KindOfferingUsersList: 3,
		waldur.KindTeam:              3,
		waldur.KindTerminatedList:    1,
		waldur.KindServiceAccounts:   1,
		waldur.KindCourseAccounts:    1,
		waldur.KindOfferingGet:       1, // the offering itself, first
	}
	for k, n := range want {
		if st.Requests[k] != n {
			t.Errorf("%s: %d requests, want %d", k, st.Requests[k], n)
		}
	}
	if st.TotalRequests() != 17 || st.TotalRetries() != 1 || st.Retries[waldur.KindOrdersList] != 1 || st.TotalErrors() != 0 {
		t.Errorf("stats %+v", st)
	}
	if b, err := json.Marshal(st); err != nil || !strings.Contains(string(b), `"requests"`) {
		t.Errorf("stats JSON %s, %v", b, err)
	}
}
