package config

import (
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/manifest"
)

// When an order is set done (order_done_on).
const (
	// DoneOnCommit sets an order done once the commit carrying its manifests
	// (or their removal) is pushed.
	DoneOnCommit = "commit"
	// DoneOnApplied also waits until the cluster shows the tenant's namespace
	// with the expected quota (or, for a termination, no longer shows it).
	DoneOnApplied = "applied"
)

// DefaultOrderDoneTimeoutSeconds bounds one run's wait for order_done_on: applied.
const DefaultOrderDoneTimeoutSeconds = 300

// AutoApproves reports whether the offering's pending-provider orders are
// decided by waldur-gitops (approved, or rejected when the resource cannot be
// rendered) rather than left for a person.
func (o *Offering) AutoApproves() bool { return o.AutoApprove == nil || *o.AutoApprove }

// DoneTimeoutSeconds returns order_done_timeout_seconds.
func (o *Offering) DoneTimeoutSeconds() int {
	if o.OrderDoneTimeoutSeconds == nil {
		return DefaultOrderDoneTimeoutSeconds
	}
	return *o.OrderDoneTimeoutSeconds
}

func (o *Offering) applyOrderDefaults() {
	o.OrderDoneOn = strings.ToLower(strings.TrimSpace(o.OrderDoneOn))
	if o.OrderDoneOn == "" {
		o.OrderDoneOn = DoneOnCommit
	}
	if o.OrderDoneTimeoutSeconds == nil {
		n := DefaultOrderDoneTimeoutSeconds
		o.OrderDoneTimeoutSeconds = &n
	}
}

// validateOrders checks the order and usage keys of an offering; it runs after
// the backend settings are decoded.
func (o *Offering) validateOrders(at string, r *report) {
	checkOneOf(at+".order_done_on", o.OrderDoneOn, []string{DoneOnCommit, DoneOnApplied}, r)
	if n := *o.OrderDoneTimeoutSeconds; n < 1 || n > 3600 {
		r.addf(at+".order_done_timeout_seconds", nil, "must be between 1 and 3600, got %d", n)
	}
	keys := make([]string, 0, len(o.BackendComponents))
	for k := range o.BackendComponents {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := o.BackendComponents[k]
		if c.MeasuredFrom == "" {
			continue
		}
		ck := at + ".backend_components." + k + ".measured_from"
		if !manifest.IsQualifiedName(c.MeasuredFrom) {
			r.addf(ck, nil, "%q is not a ResourceQuota key such as requests.cpu, limits.memory or requests.nvidia.com/gpu", c.MeasuredFrom)
		}
		if c.AccountingType != "usage" {
			r.addf(ck, nil, "only a component with accounting_type usage is measured; %s has %q", k, c.AccountingType)
		}
	}
}
