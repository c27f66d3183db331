package orders_test

import (
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/capacity"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/waldur"
)

// capacityHarness is the harness with a pool of 4 CPUs (fixed) for the
// offering, whose tenants count their limits.cpu.
func capacityHarness(t *testing.T, extra string) *harness {
	h := newHarness(t, "  capacity: {pool: p, resources: [cpu], fixed: {cpu: '4'}, overcommit: {cpu: 1}}\n"+extra)
	h.stage.Capacity = capacity.FromConfig(h.cfg.Offerings, "", nil)
	return h
}

// With a capacity section the approve step lets capacity decide: an Update
// that would oversell waits with its reason, one that lowers the quota
// passes; where a person approves (auto_approve: false), an order that would
// oversell is flagged and one that fits is not.
func TestApproveWithCapacity(t *testing.T) {
	tests := []struct {
		name       string
		extra      string
		setup      func(h *harness) waldur.UUID
		state      string
		cause      changeset.Cause
		reason     string
		exactMatch bool
	}{
		{"an Update that would oversell waits", "", func(h *harness) waldur.UUID {
			r := h.resource("lab", waldur.ResourceOK, limits("cpu", "2"))
			return h.order(waldur.OrderUpdate, waldur.OrderPendingProvider, r, limits("cpu", "7"))
		}, waldur.OrderPendingProvider, changeset.CauseCapacityExceeded, "pending: would oversell pool p: cpu requested 5, 2 free of 4", false},
		{"an Update that lowers the quota passes", "", func(h *harness) waldur.UUID {
			h.resource("other", waldur.ResourceOK, limits("cpu", "3"))
			r := h.resource("lab", waldur.ResourceOK, limits("cpu", "2"))
			return h.order(waldur.OrderUpdate, waldur.OrderPendingProvider, r, limits("cpu", "1"))
		}, waldur.OrderExecuting, "", "approved", true},
		{"a person decides: flagged", "  auto_approve: false\n", func(h *harness) waldur.UUID {
			return h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("big", waldur.ResourceCreating, limits("cpu", "8")), nil)
		}, waldur.OrderPendingProvider, changeset.CauseAwaitingApproval, "pending provider approval: auto_approve is off; it would oversell pool p: cpu requested 8, 4 free of 4", false},
		{"a person decides: fits, not flagged", "  auto_approve: false\n", func(h *harness) waldur.UUID {
			return h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("small", waldur.ResourceCreating, limits("cpu", "1")), nil)
		}, waldur.OrderPendingProvider, changeset.CauseAwaitingApproval, "pending provider approval: auto_approve is off", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := capacityHarness(t, tc.extra)
			id := tc.setup(h)
			c := h.cycle(false, false)
			e := entry(t, c.approve, id)
			if got := h.orderState(id); got != tc.state {
				t.Errorf("order is %s, want %s", got, tc.state)
			}
			if e.Cause != tc.cause {
				t.Errorf("cause %q, want %q", e.Cause, tc.cause)
			}
			if tc.exactMatch && e.Reason != tc.reason || !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("reason %q, want %q", e.Reason, tc.reason)
			}
		})
	}
}
