package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/manifest"
)

// What happens to an order that would oversell its pool (capacity.on_exceeded).
const (
	// CapacityWait leaves the order pending until it fits.
	CapacityWait = "wait"
	// CapacityReject rejects it, saying what is free.
	CapacityReject = "reject"
)

// DefaultMaxBypass is capacity.max_bypass's default: how long a waiting
// order may see younger orders of its pool go ahead of it.
const DefaultMaxBypass = 24 * time.Hour

// DefaultCapacityResources are capacity.resources' default.
var DefaultCapacityResources = []string{"cpu", "memory"}

// DefaultOvercommit is the overcommit ratio of cpu and memory when
// capacity.overcommit names none; every other resource's is 1. CPU is
// shared by time, so a quota is rarely all in use at once; memory and
// devices are not.
var DefaultOvercommit = map[string]float64{"cpu": 2, "memory": 1}

// Capacity is an offering's capacity section: the pool its tenants draw
// from and what happens to an order that would oversell it.
type Capacity struct {
	// Pool names the pool; offerings naming the same pool share it (default:
	// the offering's cluster, see PoolName).
	Pool string `yaml:"pool"`
	// Resources are the resources accounted (default cpu and memory): a
	// Node resource such as nvidia.com/gpu, or a quota key such as
	// requests.storage whose total is in Fixed.
	Resources []string `yaml:"resources"`
	// NodeSelector restricts the Nodes that make the pool's total (a label
	// selector such as "gpu=true,zone in (a,b)"; default: every Node).
	NodeSelector string `yaml:"node_selector"`
	// Fixed gives the total of a resource instead of the Nodes' allocatable.
	Fixed map[string]string `yaml:"fixed"`
	// Overcommit maps a resource to the ratio of its total that may be sold
	// (default DefaultOvercommit, 1 for the others).
	Overcommit map[string]float64 `yaml:"overcommit"`
	// OnExceeded is CapacityWait (the default) or CapacityReject.
	OnExceeded string `yaml:"on_exceeded"`
	// MaxBypass is a duration (default 24h): after it, nothing younger in
	// the pool goes ahead of a waiting order.
	MaxBypass string `yaml:"max_bypass"`

	maxBypass time.Duration
	fixed     map[string]resource.Quantity
	// kubeconfig and context read the pool's Nodes.
	kubeconfig, context string
}

// Bypass is capacity.max_bypass.
func (c *Capacity) Bypass() time.Duration { return c.maxBypass }

// Total returns the fixed total of a resource, if capacity.fixed gives one.
func (c *Capacity) Total(res string) (resource.Quantity, bool) {
	q, ok := c.fixed[res]
	return q, ok
}

// Ratio is the overcommit ratio of a resource.
func (c *Capacity) Ratio(res string) float64 {
	if r, ok := c.Overcommit[res]; ok {
		return r
	}
	return cmp.Or(DefaultOvercommit[res], 1)
}

// Cluster names the kubeconfig (path and context, "" for client-go's
// default rules) the pool's Nodes are read through.
func (c *Capacity) Cluster() (path, context string) { return c.kubeconfig, c.context }

// NeedsNodes reports whether some resource's total comes from the Nodes.
func (c *Capacity) NeedsNodes() bool {
	return slices.ContainsFunc(c.Resources, func(r string) bool { _, ok := c.fixed[r]; return !ok })
}

// validateCapacity defaults and checks an offering's capacity section; it
// runs after the backend settings are decoded (the pool's cluster is the
// kubeconfig of the backend's capacity target).
func (o *Offering) validateCapacity(at string, r *report) {
	c := o.Capacity
	if c == nil {
		return
	}
	at += ".capacity"
	c.kubeconfig, c.context = o.Settings.Kubeconfig(backend.CapacityOf(o.BackendType).Target)
	c.Pool = strings.TrimSpace(c.Pool)
	if c.Pool == "" {
		c.Pool = cmp.Or(c.context, c.kubeconfig, "in-cluster")
	}
	if len(c.Resources) == 0 {
		c.Resources = slices.Clone(DefaultCapacityResources)
	}
	c.OnExceeded = cmp.Or(strings.ToLower(strings.TrimSpace(c.OnExceeded)), CapacityWait)
	checkOneOf(at+".on_exceeded", c.OnExceeded, []string{CapacityWait, CapacityReject}, r)
	c.MaxBypass = cmp.Or(c.MaxBypass, DefaultMaxBypass.String())
	if d, err := time.ParseDuration(c.MaxBypass); err != nil || d < 0 {
		r.addf(at+".max_bypass", nil, "must be a duration such as 24h or 0s, got %q", c.MaxBypass)
	} else {
		c.maxBypass = d
	}
	if c.NodeSelector != "" {
		if _, err := labels.Parse(c.NodeSelector); err != nil {
			r.addf(at+".node_selector", nil, "%q is not a label selector such as gpu=true,zone in (a,b): %v", c.NodeSelector, err)
		}
	}
	c.checkResources(at, r)
}

// checkResources checks resources, fixed and overcommit.
func (c *Capacity) checkResources(at string, r *report) {
	seen := map[string]bool{}
	for i, res := range c.Resources {
		k := fmt.Sprintf("%s.resources[%d]", at, i)
		switch {
		case !manifest.IsQualifiedName(res):
			r.addf(k, nil, "%q is not a resource name such as cpu, memory or nvidia.com/gpu", res)
		case seen[res]:
			r.addf(k, nil, "%q is listed twice", res)
		case strings.HasPrefix(res, "limits."):
			r.addf(k, nil, "%q: name the resource (%s); its request quota counts, or its limit where none is rendered", res, strings.TrimPrefix(res, "limits."))
		}
		seen[res] = true
	}
	c.fixed = map[string]resource.Quantity{}
	for _, res := range slices.Sorted(maps.Keys(c.Fixed)) {
		k := at + ".fixed." + res
		q, err := resource.ParseQuantity(c.Fixed[res])
		switch {
		case !seen[res]:
			r.addf(k, nil, "%q is not one of capacity.resources", res)
		case err != nil:
			r.addf(k, nil, "%q is not a quantity such as 16, 500m or 64Gi", c.Fixed[res])
		case q.Sign() < 0:
			r.addf(k, nil, "must not be negative, got %s", c.Fixed[res])
		default:
			c.fixed[res] = q
		}
	}
	for i, res := range c.Resources {
		if _, ok := c.fixed[res]; !ok && strings.HasPrefix(res, "requests.") {
			r.addf(fmt.Sprintf("%s.resources[%d]", at, i), nil, "%q is not on Nodes: give its total in capacity.fixed", res)
		}
	}
	for _, res := range slices.Sorted(maps.Keys(c.Overcommit)) {
		k := at + ".overcommit." + res
		if !seen[res] {
			r.addf(k, nil, "%q is not one of capacity.resources", res)
		} else if v := c.Overcommit[res]; v <= 0 {
			r.addf(k, nil, "must be a ratio above 0 such as 1.5, got %v", v)
		}
	}
}

// checkPools checks that the offerings naming one pool describe it alike:
// read through the same cluster, with the same resources, selector, fixed
// totals and overcommit.
func (c *Config) checkPools(r *report) {
	first := map[string]int{}
	for i := range c.Offerings {
		p := c.Offerings[i].Capacity
		if p == nil {
			continue
		}
		j, ok := first[p.Pool]
		if !ok {
			first[p.Pool] = i
			continue
		}
		q, at := c.Offerings[j].Capacity, fmt.Sprintf("offerings[%d].capacity", i)
		for _, d := range []struct {
			key  string
			same bool
		}{
			{"pool", p.kubeconfig == q.kubeconfig && p.context == q.context},
			{"resources", slices.Equal(p.Resources, q.Resources)},
			{"node_selector", p.NodeSelector == q.NodeSelector},
			{"fixed", maps.Equal(p.Fixed, q.Fixed)},
			{"overcommit", maps.Equal(p.Overcommit, q.Overcommit)},
		} {
			if !d.same {
				r.addf(at+"."+d.key, nil, "pool %q is described differently by offerings[%d] (%s): offerings sharing a pool must agree on its cluster, resources, node_selector, fixed and overcommit", p.Pool, j, c.Offerings[j].Name)
			}
		}
	}
}
