package render

import (
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

// An executing Update order without limits is rendered with its plan's quotas,
// as the site agent does; when those are unknown the order is held (not
// fulfilled, so it stays executing) and the resource keeps the limits it has
// without that order.
func TestUpdateWithoutLimitsUsesPlanQuotas(t *testing.T) {
	plan := waldur.UUID("9a000000000040008000000000000001")
	order := func(i int, l waldur.Limits, p waldur.UUID) waldur.Order {
		return waldur.Order{UUID: waldur.UUID(strings.Replace(string(resUUID(i)), "a", "d", 1)), Type: waldur.OrderUpdate, State: waldur.OrderExecuting,
			MarketplaceResourceUUID: resUUID(1), Limits: l, PlanUUID: p, Created: time.Date(2026, 2, 1, 0, 0, i, 0, time.UTC)}
	}
	withLimits := order(1, limits("cpu", 6, "ram", 12, "storage", 100, "gpu", 1), "")
	tests := []struct {
		name       string
		orders     []waldur.Order
		quotas     map[waldur.UUID]waldur.Limits
		wantCPU    float64
		wantOrders int    // orders the tenant fulfils
		wantHeld   string // part of the held reason of the newest order, "" for none
	}{
		{name: "plan quotas", orders: []waldur.Order{order(2, nil, plan)},
			quotas: map[waldur.UUID]waldur.Limits{plan: limits("cpu", 8, "ram", 16, "storage", 200, "gpu", 2)}, wantCPU: 8, wantOrders: 1},
		{name: "fractional plan quotas", orders: []waldur.Order{order(2, nil, plan)},
			quotas: map[waldur.UUID]waldur.Limits{plan: limits("cpu", 2.5, "ram", 1.5, "storage", 10, "gpu", 0)}, wantCPU: 2.5, wantOrders: 1},
		{name: "newest order wins over older limits", orders: []waldur.Order{withLimits, order(2, nil, plan)},
			quotas: map[waldur.UUID]waldur.Limits{plan: limits("cpu", 8, "ram", 16, "storage", 200, "gpu", 2)}, wantCPU: 8, wantOrders: 2},
		{name: "plan not read", orders: []waldur.Order{order(2, nil, plan)}, wantCPU: 4, wantHeld: "were not read"},
		{name: "plan without quotas", orders: []waldur.Order{order(2, nil, plan)},
			quotas: map[waldur.UUID]waldur.Limits{plan: {}}, wantCPU: 4, wantHeld: "has no quotas"},
		{name: "no plan", orders: []waldur.Order{order(2, nil, "")}, wantCPU: 4, wantHeld: "neither limits nor a plan"},
		{name: "held order after one with limits", orders: []waldur.Order{withLimits, order(2, nil, plan)},
			wantCPU: 6, wantOrders: 1, wantHeld: "were not read"},
	}
	cfg := mustConfig(t, "k8s-ut-namespace", "", utComponents)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := state([]waldur.Resource{resource(1, "alpha", utLimits())}, tt.orders, member("alice", "PROJECT.ADMIN"))
			st.Offerings[0].PlanQuotas = tt.quotas
			res := mustRender(t, cfg, st)
			if len(res.Tenants) != 1 {
				t.Fatalf("%d tenants, skipped %v", len(res.Tenants), res.Skipped)
			}
			tn := res.Tenants[0]
			if tn.Limits["cpu"] != tt.wantCPU {
				t.Errorf("cpu %v, want %v (limits %v)", tn.Limits["cpu"], tt.wantCPU, tn.Limits)
			}
			if len(tn.Orders) != tt.wantOrders {
				t.Errorf("tenant fulfils %v, want %d orders", tn.Orders, tt.wantOrders)
			}
			newest := tt.orders[len(tt.orders)-1].UUID
			why, held := res.Held[newest]
			switch {
			case tt.wantHeld == "" && held:
				t.Errorf("order held: %s", why)
			case tt.wantHeld != "" && !strings.Contains(why, tt.wantHeld):
				t.Errorf("held reason %q, want it to mention %q", why, tt.wantHeld)
			}
		})
	}
}
