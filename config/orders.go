package config

import (
	"slices"
	"strings"
	"time"

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

// What happens to a quota cut below usage (quota_shrink).
const (
	// QuotaShrinkHold keeps the current value in the render until the
	// namespace's usage fits under the new one; the Update order stays
	// executing meanwhile.
	QuotaShrinkHold = "hold"
	// QuotaShrinkAllow renders the new value at once and warns.
	QuotaShrinkAllow = "allow"
	// QuotaShrinkReview commits the cut on a review branch (see Review)
	// for a person to merge; outside Git it holds.
	QuotaShrinkReview = "review"
)

// QuotaShrinkPolicies are the values quota_shrink takes.
var QuotaShrinkPolicies = []string{QuotaShrinkHold, QuotaShrinkAllow, QuotaShrinkReview}

// DefaultOrderDoneTimeoutSeconds bounds one run's wait for order_done_on: applied.
const DefaultOrderDoneTimeoutSeconds = 300

// DefaultApplyTimeout is how long an order may wait for the cluster to show
// its tenant (orders.apply_timeout) before it is erred.
const DefaultApplyTimeout = time.Hour

// Orders are the order settings of the whole config.
type Orders struct {
	// CompleteWhen is committed or applied: the default of every offering's
	// order_done_on (default committed).
	CompleteWhen string `yaml:"complete_when"`
	// ApplyTimeout is a duration ("1h", "30m"): an order whose tenant the
	// cluster does not show this long after the order was created is erred
	// with what is missing (default 1h).
	ApplyTimeout string `yaml:"apply_timeout"`
	// LastSyncInterval is a duration ("1h"): a resource whose sync succeeded
	// gets refresh_last_sync in Waldur only when Waldur's last_sync of it is
	// older than this (default 1h), so a run that changes nothing writes
	// nothing to Waldur.
	LastSyncInterval string `yaml:"last_sync_interval"`
	// RunInterval is a duration ("15m"): how often a run starts — the
	// CronJob's schedule (default 15m, the example's); serve's --interval
	// replaces it. refresh_last_sync is budgeted by it: a run sends at most
	// resources × run_interval ÷ last_sync_interval of them.
	RunInterval string `yaml:"run_interval"`
	// WriteConcurrency is how many Waldur write-backs of one offering are in
	// flight at once (default DefaultWriteConcurrency).
	WriteConcurrency int `yaml:"write_concurrency"`

	applyTimeout, lastSyncInterval, runInterval time.Duration
}

// DefaultRunInterval is orders.run_interval's default: the example
// CronJob's schedule.
const DefaultRunInterval = 15 * time.Minute

// DefaultWriteConcurrency is orders.write_concurrency's default
// (BENCHMARKS.md, "Write-backs").
const DefaultWriteConcurrency = 16

// MaxWriteConcurrency bounds orders.write_concurrency.
const MaxWriteConcurrency = 64

// Every is orders.run_interval.
func (o Orders) Every() time.Duration {
	if o.runInterval == 0 {
		return DefaultRunInterval
	}
	return o.runInterval
}

// SetEvery makes d the run interval (serve's --interval); zero keeps it.
func (o *Orders) SetEvery(d time.Duration) {
	if d > 0 {
		o.runInterval, o.RunInterval = d, d.String()
	}
}

// Writers is orders.write_concurrency.
func (o Orders) Writers() int {
	if o.WriteConcurrency == 0 {
		return DefaultWriteConcurrency
	}
	return o.WriteConcurrency
}

// DefaultLastSyncInterval is orders.last_sync_interval's default.
const DefaultLastSyncInterval = time.Hour

// LastSync is orders.last_sync_interval.
func (o Orders) LastSync() time.Duration {
	if o.lastSyncInterval == 0 {
		return DefaultLastSyncInterval
	}
	return o.lastSyncInterval
}

// Timeout is orders.apply_timeout.
func (o Orders) Timeout() time.Duration {
	if o.applyTimeout == 0 {
		return DefaultApplyTimeout
	}
	return o.applyTimeout
}

// applyDefaults reads complete_when and apply_timeout.
func (o *Orders) applyDefaults() {
	o.CompleteWhen = strings.ToLower(strings.TrimSpace(o.CompleteWhen))
	if o.CompleteWhen == "" {
		o.CompleteWhen = "committed"
	}
	if o.ApplyTimeout == "" {
		o.ApplyTimeout = DefaultApplyTimeout.String()
	}
	o.applyTimeout, _ = time.ParseDuration(o.ApplyTimeout)
	if o.LastSyncInterval == "" {
		o.LastSyncInterval = DefaultLastSyncInterval.String()
	}
	o.lastSyncInterval, _ = time.ParseDuration(o.LastSyncInterval)
	if o.RunInterval == "" {
		o.RunInterval = DefaultRunInterval.String()
	}
	o.runInterval, _ = time.ParseDuration(o.RunInterval)
}

// validate checks the orders keys.
func (o *Orders) validate(r *report) {
	checkOneOf("orders.complete_when", o.CompleteWhen, []string{"committed", DoneOnApplied}, r)
	if d, err := time.ParseDuration(o.ApplyTimeout); err != nil || d <= 0 {
		r.addf("orders.apply_timeout", nil, "must be a positive duration such as 1h or 30m, got %q", o.ApplyTimeout)
	}
	if d, err := time.ParseDuration(o.LastSyncInterval); err != nil || d <= 0 {
		r.addf("orders.last_sync_interval", nil, "must be a positive duration such as 1h or 30m, got %q", o.LastSyncInterval)
	}
	if d, err := time.ParseDuration(o.RunInterval); err != nil || d <= 0 {
		r.addf("orders.run_interval", nil, "must be a positive duration such as 15m or 1h (the CronJob's schedule), got %q", o.RunInterval)
	}
	if o.WriteConcurrency < 0 || o.WriteConcurrency > MaxWriteConcurrency {
		r.addf("orders.write_concurrency", nil, "must be between 1 and %d, got %d", MaxWriteConcurrency, o.WriteConcurrency)
	}
}

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

func (o *Offering) applyOrderDefaults(all Orders) {
	o.OrderDoneOn = strings.ToLower(strings.TrimSpace(o.OrderDoneOn))
	switch {
	case o.OrderDoneOn == "committed":
		o.OrderDoneOn = DoneOnCommit
	case o.OrderDoneOn == "" && all.CompleteWhen == DoneOnApplied:
		o.OrderDoneOn = DoneOnApplied
	case o.OrderDoneOn == "":
		o.OrderDoneOn = DoneOnCommit
	}
	o.QuotaShrink = strings.ToLower(strings.TrimSpace(o.QuotaShrink))
	if o.QuotaShrink == "" {
		o.QuotaShrink = QuotaShrinkHold
	}
	if o.OrderDoneTimeoutSeconds == nil {
		n := DefaultOrderDoneTimeoutSeconds
		o.OrderDoneTimeoutSeconds = &n
	}
}

// validateOrders checks the order and usage keys of an offering; it runs after
// the backend settings are decoded.
func (o *Offering) validateOrders(at string, r *report) {
	if o.StompWSPort < 0 || o.StompWSPort > 65535 {
		r.addf(at+".stomp_ws_port", nil, "must be a port between 1 and 65535, got %d", o.StompWSPort)
	}
	if o.StompWSPath != "" && !strings.HasPrefix(o.StompWSPath, "/") {
		r.addf(at+".stomp_ws_path", nil, "must start with /, got %q", o.StompWSPath)
	}
	if strings.ContainsAny(o.StompWSHost, "/:@ ") {
		r.addf(at+".stomp_ws_host", nil, "must be a host name or address without scheme, port or path, got %q", o.StompWSHost)
	}
	checkOneOf(at+".order_done_on", o.OrderDoneOn, []string{DoneOnCommit, "committed", DoneOnApplied}, r)
	checkOneOf(at+".quota_shrink", o.QuotaShrink, QuotaShrinkPolicies, r)
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
