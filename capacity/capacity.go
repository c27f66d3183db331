// Package capacity keeps waldur-gitops from selling what a cluster does not
// have. Offerings with a capacity section draw from a pool: its total is the
// allocatable of the Ready, schedulable Nodes of its cluster (optionally
// those a label selector picks) or a fixed quantity, times an overcommit
// ratio; what it has sold is the sum of the quotas waldur-gitops renders for
// the pool's tenants, counted as each backend's registration says
// (backend.Capacity: the request quota where one is rendered, else the
// limit; a rancher tenant once, from its downstream quota).
//
// Before approval (Decide, called by package orders), a Create, Restore or
// Update order that would push a resource past what its pool may sell
// waits, or is rejected under on_exceeded: reject; terminations and
// decreases always pass and free capacity in the same run. Waiting orders
// are considered oldest first: a younger order that fits may go ahead of an
// older one only while the older one has waited less than max_bypass.
//
// A Site reads each cluster's Nodes once per run and, after the render,
// reports every pool's account (Report): the "capacity" stage of the run
// report and its metrics.
package capacity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
)

// Stage and Kind of the entries the capacity stage produces.
const (
	Stage     = "capacity"
	EntryKind = "Pool"
)

// Pool is one capacity pool: the offerings that share it and its settings
// (those of its first offering; config checks that they agree).
type Pool struct {
	Name string
	// Offerings are the config names of its offerings, in config order.
	Offerings []string
	Config    *config.Capacity
	// types maps each offering to its backend type, configs to its
	// capacity section (on_exceeded and max_bypass are the offering's).
	types   map[string]string
	configs map[string]*config.Capacity
}

// Pools groups the configured offerings that have a capacity section by
// pool, in the order their first offering is configured.
func Pools(offerings []config.Offering) []*Pool {
	var out []*Pool
	byName := map[string]*Pool{}
	for i := range offerings {
		o := &offerings[i]
		if o.Capacity == nil {
			continue
		}
		p := byName[o.Capacity.Pool]
		if p == nil {
			p = &Pool{Name: o.Capacity.Pool, Config: o.Capacity, types: map[string]string{}, configs: map[string]*config.Capacity{}}
			byName[p.Name] = p
			out = append(out, p)
		}
		p.Offerings = append(p.Offerings, o.Name)
		p.types[o.Name], p.configs[o.Name] = o.BackendType, o.Capacity
	}
	return out
}

// Has reports whether an offering draws from the pool.
func (p *Pool) Has(offering string) bool { _, ok := p.types[offering]; return ok }

// Line is a pool's account of one resource, in the resource's base unit
// (cores, bytes, devices).
type Line struct {
	Resource string
	// Allocatable is the total: the counted Nodes' allocatable, or fixed.
	Allocatable float64
	Overcommit  float64
	// Committed is what the pool's rendered quotas reserve.
	Committed float64
	// Waiting is what the orders left waiting would add.
	Waiting float64
}

// Sellable is what the pool may sell of the resource.
func (l Line) Sellable() float64 { return l.Allocatable * l.Overcommit }

// Free is what is left to sell (0 when oversold).
func (l Line) Free() float64 { return math.Max(0, l.Sellable()-l.Committed) }

// Account is one pool's totals and what it has sold.
type Account struct {
	Pool string
	// Cluster names what the Nodes were read through ("" when every total is fixed).
	Cluster string
	// Nodes is how many Nodes count (Ready, schedulable, selected).
	Nodes int
	Lines []Line
	// Err is why the pool's cluster could not be read: its orders wait.
	Err error
}

// line returns the account's line of a resource.
func (a *Account) line(res string) *Line {
	for i := range a.Lines {
		if a.Lines[i].Resource == res {
			return &a.Lines[i]
		}
	}
	return nil
}

// total builds a pool's account from its cluster's Nodes (nil when every
// total is fixed), before anything is committed.
func total(p *Pool, nodes []kube.Node) *Account {
	a := &Account{Pool: p.Name}
	sel := labels.Everything()
	if p.Config.NodeSelector != "" {
		sel, _ = labels.Parse(p.Config.NodeSelector) // checked by config
	}
	sums := map[string]*resource.Quantity{}
	for _, n := range nodes {
		if !n.Ready || n.Unschedulable || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		a.Nodes++
		for _, res := range p.Config.Resources {
			q, ok := n.Allocatable[res]
			if !ok {
				continue
			}
			if sums[res] == nil {
				sums[res] = &resource.Quantity{}
			}
			sums[res].Add(q)
		}
	}
	for _, res := range p.Config.Resources {
		l := Line{Resource: res, Overcommit: p.Config.Ratio(res)}
		if q, ok := p.Config.Total(res); ok {
			l.Allocatable = q.AsApproximateFloat64()
		} else if s := sums[res]; s != nil {
			l.Allocatable = s.AsApproximateFloat64()
		}
		a.Lines = append(a.Lines, l)
	}
	return a
}

// Reserved is what one tenant reserves of each of the pool's resources, or
// nil when the tenant does not count (another target of its backend, or an
// offering outside the pool). A resource counts with its request quota
// (requests.<r>, or <r> as a ResourceQuota reads it) where one is
// rendered, else its limit; a quota key such as requests.storage as is.
func (p *Pool) Reserved(t *render.Tenant) map[string]float64 {
	typ, ok := p.types[t.Offering]
	if !ok {
		return nil
	}
	c := backend.CapacityOf(typ)
	if target(t.Dir) != c.Target {
		return nil
	}
	quota := make(map[string]string, len(t.Quota))
	for k, v := range t.Quota {
		quota[cmp.Or(c.Keys[k], k)] = v
	}
	out := make(map[string]float64, len(p.Config.Resources))
	for _, res := range p.Config.Resources {
		keys := []string{"requests." + res, res, "limits." + res}
		if strings.HasPrefix(res, "requests.") {
			keys = []string{res}
		}
		for _, k := range keys {
			if v, ok := quota[k]; ok {
				if q, err := resource.ParseQuantity(v); err == nil {
					out[res] = q.AsApproximateFloat64()
				}
				break
			}
		}
	}
	return out
}

// target is the target part of a tenant's directory, <offering>/<target>/<name>.
func target(dir string) string {
	parts := strings.Split(dir, "/")
	if len(parts) < 3 {
		return ""
	}
	return parts[len(parts)-2]
}

// committed adds up what the rendered tenants of the pool reserve.
func (a *Account) committed(p *Pool, res *render.Result) {
	if res == nil {
		return
	}
	for _, t := range res.Tenants {
		for r, v := range p.Reserved(t) {
			if l := a.line(r); l != nil {
				l.Committed += v
			}
		}
	}
}

// Format shows an amount of a resource as a Kubernetes quantity: bytes in
// binary units (Gi), others in decimal ones, exact to a thousandth.
func Format(res string, v float64) string {
	if isBytes(res) {
		return resource.NewQuantity(int64(math.Round(v)), resource.BinarySI).String()
	}
	return resource.NewMilliQuantity(int64(math.Round(v*1000)), resource.DecimalSI).String()
}

// isBytes reports whether a resource is counted in bytes.
func isBytes(res string) bool {
	base := strings.TrimPrefix(res, "requests.")
	return base == "memory" || base == "storage" || base == "ephemeral-storage" || strings.HasPrefix(base, "hugepages-")
}

// String sums a line up for people: what is sold of what may be sold.
func (l Line) String() string {
	s := fmt.Sprintf("allocatable %s, overcommit %s, committed %s, requested by waiting orders %s, free %s",
		Format(l.Resource, l.Allocatable), trimRatio(l.Overcommit), Format(l.Resource, l.Committed),
		Format(l.Resource, l.Waiting), Format(l.Resource, l.Free()))
	return s
}

func trimRatio(r float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", r), ".0") }

// sortedLines returns the lines in resource order.
func sortedLines(a *Account) []Line {
	out := slices.Clone(a.Lines)
	slices.SortFunc(out, func(x, y Line) int { return cmp.Compare(x.Resource, y.Resource) })
	return out
}
