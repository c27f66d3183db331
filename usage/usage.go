// Package usage reports component usage to Waldur (set_usage): month-to-date
// totals, dated the first instant of the billing month in the configured time
// zone, one record per resource, component and month.
//
// Only resources whose tenant exists are billed: the state read is rendered
// as sync renders it (render.Renderer, claims across offerings included), a
// resource without a rendered tenant is left out, and where the cluster is
// read so is one whose namespace is not there (see NotBilled). Each left-out
// resource is a skip entry with the reason.
//
// Two kinds of component are reported:
//
//   - Limit-based components (accounting_type: limit) report the allocation in
//     effect: the limit the renderer puts into the tenant's quota (the newest
//     executing Update order's limits, else the resource's, with the paused and
//     downscaled rules applied). With usage.allocation peak (the default) the
//     month's value is the highest allocation seen: a lower one is never
//     reported. With time_weighted it is unit-hours, each allocation × the
//     hours it held, accumulated as measured usage is (below), the allocation
//     in effect at each report being the sample.
//   - Measured components (accounting_type: usage with measured_from) report
//     unit-hours: the ResourceQuota status.used value of the key, summed over
//     the resource's namespaces, accumulated over time.
//
// The accumulation is stateless: the running total and the last sample are
// kept in Waldur itself. Each report writes, next to the total, a description
// "… last sample <value> at <time>"; the next report reads the month's record
// back (component-usages list), adds sample × elapsed hours (the sample is
// assumed to hold until the next one: a zero-order hold) and writes the new
// total with the new sample. A report that would change neither the total
// (at two decimals) nor the sample is skipped, and its time is not moved, so
// skipping never loses hours. The first report of a month continues the
// previous month's last sample from the month's first instant, and closes the
// previous month up to that instant (Waldur may refuse to backfill it; that
// slice is then lost and reported). A record without a sample (first report
// ever, or written by someone else) starts the accumulation at the time of the
// report.
package usage

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/templates"
	"github.com/waldur/waldur-gitops/waldur"
)

// Stage and Kind of every entry this package produces.
const (
	EntryStage = "usage"
	EntryKind  = "Usage"
)

// Waldur is the part of the Waldur client reporting uses; *waldur.Client
// implements it.
type Waldur interface {
	// ReadOffering reads the offering's state as sync reads it (resources,
	// open orders, teams, offering users, terminated resources), so that the
	// report renders exactly what sync renders.
	ReadOffering(ctx context.Context, name string, offering waldur.UUID) (*waldur.OfferingState, error)
	ListComponentUsages(ctx context.Context, f waldur.UsageFilter) ([]waldur.ComponentUsage, error)
	SetUsage(ctx context.Context, r waldur.UsageReport) error
}

var _ Waldur = (*waldur.Client)(nil)

// Cluster is what measuring and the tenant check read; *kube.Reader
// implements it. Namespaces is called with selector "" (every namespace).
type Cluster interface {
	Namespaces(ctx context.Context, selector string) ([]kube.Namespace, error)
	Quotas(ctx context.Context, namespace string) ([]kube.Quota, error)
}

var _ Cluster = (*kube.Reader)(nil)

// Offering is one configured offering to report.
type Offering struct {
	Config *config.Offering
	Waldur Waldur
	// Cluster is where measured components are read and where a tenant's
	// namespace must exist for the resource to be billed; nil: measured
	// components are not reported and rendered tenants are billed unchecked.
	Cluster Cluster
}

// Reporter reports the usage of the configured offerings.
type Reporter struct {
	Offerings []*Offering
	// Config is the whole configuration the offerings come from. The state
	// read is rendered with it, as sync renders it, and only resources that
	// get a tenant are billed; its usage.allocation chooses how limit-based
	// components are billed. Nil: a configuration of the Offerings alone,
	// with the defaults (peak allocation).
	Config *config.Config
	// Templates are the templates of Config's offerings
	// (render.LoadTemplates); nil: loaded at Run.
	Templates map[string][]*templates.Template
	// Location is the time zone of billing months (default UTC).
	Location *time.Location
	// DryRun computes and reports, and writes nothing.
	DryRun bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives progress (nil: discarded).
	Log *slog.Logger
}

// Error classes of a failed report, so that the caller can choose an exit code.
type (
	// ReadError is a failed read of Waldur: nothing was written.
	ReadError struct{ Err error }
	// ClusterError is a failed read of the cluster: nothing was written.
	ClusterError struct{ Err error }
	// RenderError is a failure to render the state read (templates that do
	// not load): nothing was written.
	RenderError struct{ Err error }
)

func (e *ReadError) Error() string    { return e.Err.Error() }
func (e *ReadError) Unwrap() error    { return e.Err }
func (e *ClusterError) Error() string { return e.Err.Error() }
func (e *ClusterError) Unwrap() error { return e.Err }
func (e *RenderError) Error() string  { return e.Err.Error() }
func (e *RenderError) Unwrap() error  { return e.Err }

// input is everything read about one offering before anything is written.
type input struct {
	o        *Offering
	state    *waldur.OfferingState
	current  map[Key]*waldur.ComponentUsage
	previous map[Key]*waldur.ComponentUsage
	// namespaces (labelled ones, by resource) and cluster (every namespace,
	// by name) are nil without a cluster; quotas are nil unless measuring.
	namespaces map[waldur.UUID][]string
	cluster    map[string]kube.Namespace
	quotas     map[string][]kube.Quota
	// notBilled are the resources left out of billing, with the reason.
	notBilled map[waldur.UUID]string
}

// Key names a usage record of a month: a resource and a component type.
type Key struct {
	Resource waldur.UUID
	Type     string
}

// Run reads every offering (Waldur, then the cluster), then writes the reports.
// A failed read ends the run before anything is written (*ReadError,
// *ClusterError); a failed write is reported as an entry with action skip and
// the others go on, and the error then summarises the failures.
func (r *Reporter) Run(ctx context.Context) (changeset.Result, error) {
	return r.run(ctx, nil, nil)
}

// ReadFunc reads the state of every configured offering (the engine's Source).
type ReadFunc func(ctx context.Context) (*waldur.State, error)

// RenderFunc renders a state as sync renders it, settling the names two
// offerings claim with inPlace (the engine's renderer).
type RenderFunc func(st *waldur.State, inPlace render.InPlace) (*render.Result, error)

// RunWith is Run on a state read once by read and rendered by rend (the
// engine's Source and renderer) instead of each offering's Waldur and a
// render of its own. An offering read needs is not in the state: a *ReadError.
func (r *Reporter) RunWith(ctx context.Context, read ReadFunc, rend RenderFunc) (changeset.Result, error) {
	st, err := read(ctx)
	if err != nil {
		// The read fails as a whole only when no offering could be read.
		names := make([]string, len(r.Offerings))
		for i, o := range r.Offerings {
			names[i] = o.Config.Name
		}
		return changeset.Result{}, &ReadError{fmt.Errorf("offering %s: %w", strings.Join(names, ", "), err)}
	}
	states := map[string]*waldur.OfferingState{}
	for i := range st.Offerings {
		states[st.Offerings[i].Name] = &st.Offerings[i]
	}
	for _, o := range r.Offerings {
		if states[o.Config.Name] == nil {
			why := "not read"
			if st.Unread[o.Config.Name] != "" {
				why = st.Unread[o.Config.Name]
			}
			return changeset.Result{}, &ReadError{fmt.Errorf("offering %s: %s", o.Config.Name, why)}
		}
	}
	return r.run(ctx, states, rend)
}

// run reads what is not in states (every offering's state when it is nil),
// renders with rend (nil: a render of its own), then writes the reports.
func (r *Reporter) run(ctx context.Context, states map[string]*waldur.OfferingState, rend RenderFunc) (changeset.Result, error) {
	var cs changeset.Set
	calls := &counter{m: map[string]int{}}
	now := r.now().In(r.location())
	cfg := r.config()
	var inputs []*input
	for _, o := range r.Offerings {
		in, err := r.read(ctx, o, states[o.Config.Name], now, cfg.Usage.Allocation, calls)
		if err != nil {
			return changeset.Result{Changes: cs, Calls: calls.m}, err
		}
		inputs = append(inputs, in)
	}
	if err := r.decide(cfg, inputs, rend); err != nil {
		return changeset.Result{Changes: cs, Calls: calls.m}, err
	}
	var failures []string
	for _, in := range inputs {
		plan := Plan(in.o.Config, in.snapshot(), now, cfg.Usage.Allocation)
		f := r.write(ctx, in.o, plan, &cs, calls)
		failures = append(failures, f...)
	}
	cs.Sort()
	if len(failures) > 0 {
		return changeset.Result{Changes: cs, Calls: calls.m}, fmt.Errorf("%d usage report(s) failed: %s", len(failures), strings.Join(failures[:min(3, len(failures))], "; "))
	}
	return changeset.Result{Changes: cs, Calls: calls.m}, nil
}

func (r *Reporter) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (r *Reporter) location() *time.Location {
	if r.Location == nil {
		return time.UTC
	}
	return r.Location
}

func (r *Reporter) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(kind string) {
	c.mu.Lock()
	c.m[kind]++
	c.mu.Unlock()
}

// config is the configuration rendered with: Config, else one of the
// offerings alone.
func (r *Reporter) config() *config.Config {
	if r.Config != nil {
		return r.Config
	}
	cfg := &config.Config{Usage: config.Usage{Allocation: config.AllocationPeak}}
	for _, o := range r.Offerings {
		cfg.Offerings = append(cfg.Offerings, *o.Config)
	}
	return cfg
}

// decide renders the state read, as sync renders it (claims across
// offerings included), and records in each input the resources that are not
// billed: those without a rendered tenant and, where the cluster is read,
// those whose tenant has no namespace there.
func (r *Reporter) decide(cfg *config.Config, inputs []*input, rend RenderFunc) error {
	tpls := r.Templates
	if tpls == nil && rend == nil {
		var err error
		if tpls, err = render.LoadTemplates(cfg); err != nil {
			return &RenderError{fmt.Errorf("usage report: %w", err)}
		}
	}
	st := &waldur.State{}
	byName := map[string]*input{}
	for _, in := range inputs {
		byName[in.o.Config.Name] = in
	}
	for i := range cfg.Offerings {
		name := cfg.Offerings[i].Name
		if in := byName[name]; in != nil {
			st.Offerings = append(st.Offerings, *in.state)
			continue
		}
		if st.Unread == nil {
			st.Unread = map[string]string{}
		}
		st.Unread[name] = "not part of this usage report"
	}
	// A tenant whose namespace is in a cluster holds its names, as sync
	// holds those of the tenants in Git.
	var inPlace render.InPlace
	for _, in := range inputs {
		if in.cluster != nil {
			inPlace = func(id waldur.UUID) bool {
				for _, in := range inputs {
					if len(in.namespaces[id]) > 0 {
						return true
					}
				}
				return false
			}
			break
		}
	}
	if rend == nil {
		rend = func(st *waldur.State, in render.InPlace) (*render.Result, error) {
			res, err := render.New(cfg, tpls).Render(st)
			if err == nil {
				res.ResolveClaims(cfg, st, in)
			}
			return res, err
		}
	}
	res, err := rend(st, inPlace)
	if err != nil {
		return &RenderError{fmt.Errorf("usage report: %w", err)}
	}
	for _, in := range inputs {
		in.notBilled = NotBilled(in.o.Config.Name, in.state, res, in.cluster)
	}
	return nil
}

// NotBilled says which resources of an offering's state are not billed, and
// why: a resource is billed only when it has a tenant in the render result
// (not skipped for bad input, not kept for an unknown state, not lost to
// another resource's name) or is being terminated (a Terminate order, or
// state Terminating: its tenant is removed by the run that closes the
// order). With cluster (every namespace by name; nil when the cluster is not
// read) the tenant must also exist there: a namespace labelled with the
// resource's uuid, or named as one of its tenants or its backend id, that is
// not being deleted. Only resources in a state Waldur takes usage for are
// listed.
func NotBilled(offering string, st *waldur.OfferingState, res *render.Result, cluster map[string]kube.Namespace) map[waldur.UUID]string {
	names := map[waldur.UUID][]string{}
	for _, t := range res.Tenants {
		if t.Offering == offering {
			names[t.Resource] = append(names[t.Resource], t.Name)
		}
	}
	out := map[waldur.UUID]string{}
	for i := range st.Resources {
		r := &st.Resources[i]
		if !slices.Contains(usableStates, r.State) {
			continue
		}
		_, terminating := res.Terminations[r.UUID]
		if why, ok := res.Kept[r.UUID]; ok {
			out[r.UUID] = "not billed: the resource is not rendered (" + why + ")"
			continue
		}
		if why, ok := res.Skipped[r.UUID]; ok {
			out[r.UUID] = "not billed: the resource has no rendered tenant (skipped: " + why + ")"
			continue
		}
		if len(names[r.UUID]) == 0 && !terminating {
			out[r.UUID] = "not billed: the resource has no rendered tenant"
			continue
		}
		if cluster == nil {
			continue
		}
		if why := absent(r, names[r.UUID], cluster); why != "" {
			if terminating {
				why += " (the resource is being terminated)"
			}
			out[r.UUID] = "not billed: " + why
		}
	}
	return out
}

// absent says why the resource's tenant is not in the cluster; "" when a
// namespace of it exists and is not being deleted.
func absent(r *waldur.Resource, tenants []string, cluster map[string]kube.Namespace) string {
	var deleting []string
	seen := map[string]bool{}
	check := func(ns kube.Namespace) bool {
		if seen[ns.Name] {
			return false
		}
		seen[ns.Name] = true
		if ns.Terminating {
			deleting = append(deleting, ns.Name)
			return false
		}
		return true
	}
	for _, name := range slices.Sorted(maps.Keys(cluster)) {
		if ns := cluster[name]; waldur.UUID(ns.Labels[manifest.LabelResourceUUID]) == r.UUID && check(ns) {
			return ""
		}
	}
	want := slices.Clone(tenants)
	if r.BackendID != "" && !strings.Contains(r.BackendID, ":") {
		want = append(want, r.BackendID)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	for _, name := range want {
		if ns, ok := cluster[name]; ok && check(ns) {
			return ""
		}
	}
	switch {
	case len(deleting) > 0:
		return "the tenant's namespace " + strings.Join(deleting, ", ") + " is being deleted in the cluster"
	case len(want) > 0:
		return "the tenant's namespace " + strings.Join(want, ", ") + " does not exist in the cluster (not applied yet, or deleted)"
	}
	return "no namespace of the resource exists in the cluster (none labelled " + manifest.LabelResourceUUID + "=" + string(r.UUID) + ")"
}

// measured reports whether the offering has a measured component.
func measured(o *config.Offering) bool {
	for _, c := range o.BackendComponents {
		if c.AccountingType == "usage" && c.MeasuredFrom != "" {
			return true
		}
	}
	return false
}

// read reads one offering: its state unless given (read once by the
// caller), its usage records and, with a cluster, its namespaces and quotas.
func (r *Reporter) read(ctx context.Context, o *Offering, state *waldur.OfferingState, now time.Time, alloc string, calls *counter) (*input, error) {
	id := waldur.UUID(o.Config.WaldurOfferingUUID)
	in := &input{o: o, state: state}
	var err error
	wrap := func(err error) error { return &ReadError{fmt.Errorf("offering %s: %w", o.Config.Name, err)} }
	if in.state == nil {
		if in.state, err = o.Waldur.ReadOffering(ctx, o.Config.Name, id); err != nil {
			return nil, wrap(err)
		}
		for _, k := range []string{waldur.KindResourcesList, waldur.KindTerminatedList, waldur.KindOrdersList, waldur.KindOfferingUsersList,
			waldur.KindServiceAccounts, waldur.KindCourseAccounts} {
			calls.add(k)
		}
		for range in.state.Teams {
			calls.add(waldur.KindTeam)
		}
	}
	calls.add(waldur.KindUsagesList)
	cur, err := o.Waldur.ListComponentUsages(ctx, waldur.UsageFilter{Offering: id, BillingPeriod: now})
	if err != nil {
		return nil, wrap(err)
	}
	in.current = index(cur)
	measuring := measured(o.Config) && o.Cluster != nil
	if measuring || alloc == config.AllocationTimeWeighted {
		// Accumulated records continue the previous month's last sample.
		calls.add(waldur.KindUsagesList)
		prev, err := o.Waldur.ListComponentUsages(ctx, waldur.UsageFilter{Offering: id, BillingPeriod: monthStart(now).AddDate(0, -1, 0)})
		if err != nil {
			return nil, wrap(err)
		}
		in.previous = index(prev)
	}
	if o.Cluster == nil {
		return in, nil
	}
	cwrap := func(err error) error { return &ClusterError{fmt.Errorf("offering %s: %w", o.Config.Name, err)} }
	calls.add("cluster.namespaces.list")
	nss, err := o.Cluster.Namespaces(ctx, "")
	if err != nil {
		return nil, cwrap(err)
	}
	in.namespaces, in.cluster = map[waldur.UUID][]string{}, map[string]kube.Namespace{}
	for _, ns := range nss {
		in.cluster[ns.Name] = ns
		if id := ns.Labels[manifest.LabelResourceUUID]; id != "" {
			in.namespaces[waldur.UUID(id)] = append(in.namespaces[waldur.UUID(id)], ns.Name)
		}
	}
	if !measuring {
		return in, nil
	}
	calls.add("cluster.resourcequotas.list")
	qs, err := o.Cluster.Quotas(ctx, "")
	if err != nil {
		return nil, cwrap(err)
	}
	in.quotas = map[string][]kube.Quota{}
	for _, q := range qs {
		in.quotas[q.Namespace] = append(in.quotas[q.Namespace], q)
	}
	return in, nil
}

func index(list []waldur.ComponentUsage) map[Key]*waldur.ComponentUsage {
	out := make(map[Key]*waldur.ComponentUsage, len(list))
	for i := range list {
		u := &list[i]
		out[Key{u.ResourceUUID, u.Type}] = u
	}
	return out
}

// Snapshot is what Plan needs about one offering: its resources and orders,
// the month's (and the previous month's) records, and — when measuring — the
// namespaces of each resource and the quotas of each namespace.
type Snapshot struct {
	Resources []waldur.Resource
	Orders    []waldur.Order
	Current   map[Key]*waldur.ComponentUsage
	Previous  map[Key]*waldur.ComponentUsage
	// Namespaces is nil when no cluster is read, Quotas when nothing is measured.
	Namespaces map[waldur.UUID][]string
	Quotas     map[string][]kube.Quota
	// NotBilled maps the resources left out of billing to the reason (see
	// NotBilled); nil bills every resource in a state Waldur takes usage for.
	NotBilled map[waldur.UUID]string
}

func (in *input) snapshot() Snapshot {
	return Snapshot{Resources: in.state.Resources, Orders: in.state.Orders, Current: in.current, Previous: in.previous,
		Namespaces: in.namespaces, Quotas: in.quotas, NotBilled: in.notBilled}
}

// Item is the planned report of one component of one resource.
type Item struct {
	Resource *waldur.Resource
	Type     string
	// Action is Create (no record this month), Update, Unchanged or Skip.
	Action changeset.Action
	// Amount is the new month-to-date total; Description the text sent with it.
	Amount      float64
	Description string
	// Old is the total Waldur holds (0 without a record).
	Old float64
	// Reason explains the item in the report.
	Reason string
	// Cause is why a skipped item is skipped.
	Cause changeset.Cause
	// Close, when set, is the previous month's final total to post first.
	Close *Item
}

// sample is the last sample stored in a record's description.
type sample struct {
	value float64
	at    time.Time
}

var sampleRE = regexp.MustCompile(`last sample (\S+) at (\S+)$`)

func parseSample(desc string) (sample, bool) {
	m := sampleRE.FindStringSubmatch(strings.TrimSpace(desc))
	if m == nil {
		return sample{}, false
	}
	v, err1 := strconv.ParseFloat(m[1], 64)
	t, err2 := time.Parse(time.RFC3339, m[2])
	if err1 != nil || err2 != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return sample{}, false
	}
	return sample{v, t}, true
}

func describe(key string, s sample) string {
	u := kube.UnitOf(key)
	unit := "unit"
	if u.Name != "" {
		unit = u.Name
	}
	return fmt.Sprintf("waldur-gitops: %s-hours of ResourceQuota %s; last sample %s at %s",
		unit, key, strconv.FormatFloat(s.value, 'g', -1, 64), s.at.UTC().Format(time.RFC3339))
}

// usableStates are the resource states Waldur accepts usage for.
var usableStates = []string{waldur.ResourceOK, waldur.ResourceUpdating, waldur.ResourceTerminating}

// Plan computes the reports of one offering at time now (in the billing time
// zone); allocation is how limit-based components are billed
// (config.AllocationPeak, config.AllocationTimeWeighted). It is pure.
func Plan(o *config.Offering, s Snapshot, now time.Time, allocation string) []Item {
	types := make([]string, 0, len(o.BackendComponents))
	for k := range o.BackendComponents {
		types = append(types, k)
	}
	slices.Sort(types)
	updates := map[waldur.UUID]waldur.Limits{}
	ords := slices.Clone(s.Orders)
	slices.SortStableFunc(ords, func(a, b waldur.Order) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID)) })
	for _, ord := range ords {
		if ord.State == waldur.OrderExecuting && ord.Type == waldur.OrderUpdate && len(ord.Limits) > 0 {
			updates[ord.MarketplaceResourceUUID] = ord.Limits
		}
	}
	var out []Item
	for i := range s.Resources {
		res := &s.Resources[i]
		var lim map[string]float64
		var limErr error
		for _, typ := range types {
			c := o.BackendComponents[typ]
			it := Item{Resource: res, Type: typ}
			if rec := s.Current[Key{res.UUID, typ}]; rec != nil {
				it.Old, _ = rec.Usage.Float()
			}
			switch {
			case c.AccountingType == "limit":
			case c.AccountingType == "usage" && c.MeasuredFrom != "":
				if s.Quotas == nil {
					continue // measuring is off: no cluster
				}
			default:
				continue // not reported by waldur-gitops
			}
			if !slices.Contains(usableStates, res.State) {
				it.Action, it.Reason, it.Cause = changeset.Skip, "Waldur takes usage only for resources in OK, Updating or Terminating; this one is "+res.State, changeset.CauseResourceState
				out = append(out, it)
				continue
			}
			if why, ok := s.NotBilled[res.UUID]; ok {
				it.Action, it.Reason, it.Cause = changeset.Skip, why, changeset.CauseNotBilled
				out = append(out, it)
				continue
			}
			if c.AccountingType == "limit" {
				if lim == nil && limErr == nil {
					lim, limErr = render.EffectiveLimits(o, res, updates[res.UUID])
				}
				if allocation == config.AllocationTimeWeighted {
					planTimeWeighted(&it, s, lim, limErr, now)
				} else {
					planLimit(&it, s, lim, limErr)
				}
			} else {
				planMeasured(&it, o, c, s, now)
			}
			out = append(out, it)
		}
	}
	return out
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func planLimit(it *Item, s Snapshot, lim map[string]float64, err error) {
	if err != nil {
		it.Action, it.Reason, it.Cause = changeset.Skip, err.Error(), usageCause(err)
		return
	}
	v, ok := lim[it.Type]
	if !ok {
		it.Action, it.Reason, it.Cause = changeset.Skip, "the resource has no limit for this component", changeset.CauseNoLimit
		return
	}
	rec := s.Current[Key{it.Resource.UUID, it.Type}]
	if rec != nil && hasSample(rec.Description) {
		it.Action, it.Reason, it.Cause = changeset.Skip, "the month's record holds unit-hours (written with usage.allocation time_weighted): left as it is; peak allocation is billed from next month's record", changeset.CauseOtherMode
		return
	}
	it.Amount = round2(math.Max(v, it.Old))
	it.Description = peakDescription
	switch {
	case rec == nil:
		it.Action, it.Reason = changeset.Create, "allocation "+waldur.FormatAmount(it.Amount)
	case it.Amount == round2(it.Old):
		it.Action, it.Reason = changeset.Unchanged, "allocation "+waldur.FormatAmount(it.Amount)
		if v < it.Old {
			it.Reason += fmt.Sprintf(" (now %s; a decrease is not reported)", waldur.FormatAmount(v))
		}
	default:
		it.Action, it.Reason = changeset.Update, waldur.FormatAmount(it.Old)+" → "+waldur.FormatAmount(it.Amount)
	}
}

// peakDescription is the description of a peak allocation record.
const peakDescription = "waldur-gitops: allocation in effect"

// planTimeWeighted bills a limit-based component as unit-hours: the
// allocation in effect now is the sample, accumulated as measured usage is.
func planTimeWeighted(it *Item, s Snapshot, lim map[string]float64, err error, now time.Time) {
	if err != nil {
		it.Action, it.Reason, it.Cause = changeset.Skip, err.Error(), usageCause(err)
		return
	}
	v, ok := lim[it.Type]
	if !ok {
		it.Action, it.Reason, it.Cause = changeset.Skip, "the resource has no limit for this component", changeset.CauseNoLimit
		return
	}
	if rec := s.Current[Key{it.Resource.UUID, it.Type}]; rec != nil && strings.TrimSpace(rec.Description) == peakDescription {
		it.Action, it.Reason, it.Cause = changeset.Skip, "the month's record holds the peak allocation (written with usage.allocation peak): left as it is; unit-hours are billed from next month's record", changeset.CauseOtherMode
		return
	}
	typ := it.Type
	desc := func(smp sample) string {
		return fmt.Sprintf("waldur-gitops: unit-hours of the allocated %s (time_weighted); last sample %s at %s",
			typ, strconv.FormatFloat(smp.value, 'g', -1, 64), smp.at.UTC().Format(time.RFC3339))
	}
	accumulate(it, s, now, v, 1, desc, fmt.Sprintf(" (unit-hours of allocation %s)", strconv.FormatFloat(v, 'g', 6, 64)))
}

func planMeasured(it *Item, o *config.Offering, c config.Component, s Snapshot, now time.Time) {
	key := c.MeasuredFrom
	cur, ok, why := used(it.Resource, key, s)
	if !ok {
		it.Action, it.Reason, it.Cause = changeset.Skip, "not measured: "+why, changeset.CauseNotMeasured
		return
	}
	factor := c.UnitFactor
	if factor <= 0 {
		factor = 1
	}
	unit := kube.UnitOf(key).Name
	if unit == "" {
		unit = "unit"
	}
	note := fmt.Sprintf(" (%s %s-hours; sample %s)", key, unit, strconv.FormatFloat(cur, 'g', 6, 64))
	accumulate(it, s, now, cur, factor, func(smp sample) string { return describe(key, smp) }, note)
}

// accumulate plans an accumulated record: Waldur's month-to-date total plus
// the last sample (read back from the record's description) × the hours
// since it, divided by factor, with cur as the new sample; desc writes a
// description holding a sample. The first report of a month closes the
// previous month from its last sample.
func accumulate(it *Item, s Snapshot, now time.Time, cur, factor float64, desc func(sample) string, note string) {
	start := monthStart(now)
	rec := s.Current[Key{it.Resource.UUID, it.Type}]
	var last sample
	var have bool
	if rec != nil {
		last, have = parseSample(rec.Description)
		have = have && !last.at.Before(start) && !last.at.After(now)
	}
	total := it.Old
	switch {
	case have:
		total += last.value * now.Sub(last.at).Hours() / factor
	case rec == nil || !hasSample(rec.Description):
		if p := s.Previous[Key{it.Resource.UUID, it.Type}]; p != nil {
			if ps, ok := parseSample(p.Description); ok && ps.at.Before(start) && !ps.at.Before(start.AddDate(0, -1, 0)) {
				// Carry the previous month's last sample over the month change.
				total += ps.value * now.Sub(start).Hours() / factor
				old, _ := p.Usage.Float()
				closed := sample{ps.value, start}
				it.Close = &Item{
					Resource: it.Resource, Type: it.Type, Old: old, Action: changeset.Update,
					Amount:      round2(math.Max(old, old+ps.value*start.Sub(ps.at).Hours()/factor)),
					Description: desc(closed),
				}
				it.Close.Reason = "previous month closed: " + waldur.FormatAmount(old) + " → " + waldur.FormatAmount(it.Close.Amount)
			}
		}
	}
	next := sample{cur, now}
	it.Amount = round2(math.Max(total, it.Old))
	it.Description = desc(next)
	switch {
	case rec == nil:
		it.Action, it.Reason = changeset.Create, waldur.FormatAmount(it.Amount)+note
	case have && it.Amount == round2(it.Old) && last.value == cur:
		it.Action, it.Reason = changeset.Unchanged, waldur.FormatAmount(it.Amount)+note
		it.Description = rec.Description
	default:
		it.Action, it.Reason = changeset.Update, waldur.FormatAmount(it.Old)+" → "+waldur.FormatAmount(it.Amount)+note
	}
}

func hasSample(desc string) bool { _, ok := parseSample(desc); return ok }

// used sums a quota key's status.used over the resource's namespaces (within a
// namespace every quota tracking the key reports the same usage, so the
// largest is taken).
func used(r *waldur.Resource, key string, s Snapshot) (float64, bool, string) {
	nss := s.Namespaces[r.UUID]
	if len(nss) == 0 && r.BackendID != "" && !strings.Contains(r.BackendID, ":") {
		nss = []string{r.BackendID}
	}
	if len(nss) == 0 {
		return 0, false, "no namespace of the resource found (by label " + manifest.LabelResourceUUID + " or backend id)"
	}
	total := 0.0
	for _, ns := range nss {
		best, found := 0.0, false
		for _, q := range s.Quotas[ns] {
			if v, ok := q.Used[key]; ok {
				best, found = math.Max(best, kube.Amount(key, v)), true
			}
		}
		if !found {
			return 0, false, "no ResourceQuota in namespace " + ns + " reports " + key + " in status.used"
		}
		total += best
	}
	return total, true, ""
}

// monthStart is the first instant of t's month in t's location.
func monthStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, t.Location())
}

// write posts the planned items of one offering, one set_usage per resource
// and month (a previous month's closing report first, so that a server that
// files it under the current month has it overwritten at once), and records
// the entries; it returns the failures.
func (r *Reporter) write(ctx context.Context, o *Offering, plan []Item, cs *changeset.Set, calls *counter) []string {
	now := r.now().In(r.location())
	start := monthStart(now)
	type batch struct {
		res   *waldur.Resource
		date  time.Time
		items []*Item
	}
	var batches []*batch
	add := func(res *waldur.Resource, date time.Time, it *Item) {
		for _, b := range batches {
			if b.res == res && b.date.Equal(date) {
				b.items = append(b.items, it)
				return
			}
		}
		batches = append(batches, &batch{res: res, date: date, items: []*Item{it}})
	}
	for i := range plan {
		it := &plan[i]
		if it.Close != nil {
			add(it.Resource, start.AddDate(0, -1, 0), it.Close)
		}
	}
	for i := range plan {
		it := &plan[i]
		if it.Action == changeset.Create || it.Action == changeset.Update {
			add(it.Resource, start, it)
		} else {
			cs.Add(entry(o.Config, it, it.Action, it.Reason, it.Cause))
		}
	}
	var failures []string
	for _, b := range batches {
		label := waldur.BillingPeriod(b.date)
		if r.DryRun {
			for _, it := range b.items {
				cs.Add(entry(o.Config, it, it.Action, "would report for "+label+": "+it.Reason, ""))
			}
			continue
		}
		rep := waldur.UsageReport{Resource: b.res.UUID, Date: b.date}
		for _, it := range b.items {
			rep.Usages = append(rep.Usages, waldur.UsageItem{Type: it.Type, Amount: waldur.FormatAmount(it.Amount), Description: it.Description})
		}
		calls.add(waldur.KindUsageSet)
		err := o.Waldur.SetUsage(ctx, rep)
		past := b.date.Before(start)
		for _, it := range b.items {
			switch {
			case err != nil && past && waldur.HasStatus(err, 400):
				cs.Add(entry(o.Config, it, changeset.Skip, "Waldur refused to close "+label+" (the hours after its last sample are not billed): "+err.Error(), changeset.CauseAPIFailure))
			case err != nil:
				cs.Add(entry(o.Config, it, changeset.Skip, "failed to report for "+label+": "+err.Error(), changeset.CauseAPIFailure))
			default:
				cs.Add(entry(o.Config, it, it.Action, it.Reason, it.Cause))
			}
		}
		switch {
		case err != nil && past && waldur.HasStatus(err, 400):
			r.log().Warn("Waldur refused to close the previous month", "offering", o.Config.Name, "resource", string(b.res.UUID), "billing_period", label, "error", err)
		case err != nil:
			failures = append(failures, fmt.Sprintf("resource %s (%s): %v", b.res.UUID, label, err))
			r.log().Error("usage report failed", "offering", o.Config.Name, "resource", string(b.res.UUID), "billing_period", label, "error", err)
		default:
			r.log().Info("reported usage", "offering", o.Config.Name, "resource", string(b.res.UUID), "billing_period", label, "components", len(b.items))
		}
	}
	return failures
}

func entry(o *config.Offering, it *Item, a changeset.Action, reason string, cause changeset.Cause) changeset.Entry {
	name := it.Resource.Slug
	if name == "" {
		name = string(it.Resource.UUID)
	}
	return changeset.Entry{
		Stage: EntryStage, Kind: EntryKind, Subject: o.DirName() + "/" + name + " " + it.Type,
		Action: a, Offering: o.Name, Resource: string(it.Resource.UUID), Reason: reason, Cause: cause,
	}
}

// usageCause is why an item whose limits could not be read is skipped.
func usageCause(err error) changeset.Cause {
	if changeset.CauseOf(err, "") == changeset.CauseInvalidLimits {
		return changeset.CauseUsageLimits
	}
	return changeset.CauseUsageFailed
}
