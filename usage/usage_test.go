package usage_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/usage"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

const offering = waldur.UUID("0ff0000000004000800000000000000b")

// cluster is a fake of the two list calls measuring makes.
type cluster struct {
	mu       sync.Mutex
	used     map[string]map[string]string // namespace → key → quantity
	ns       map[string]waldur.UUID       // namespace → resource label
	deleting map[string]bool              // namespaces being deleted
	err      error
}

func (c *cluster) set(ns string, res waldur.UUID, used map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.used == nil {
		c.used, c.ns = map[string]map[string]string{}, map[string]waldur.UUID{}
	}
	c.used[ns], c.ns[ns] = used, res
}

func (c *cluster) Namespaces(context.Context, string) ([]kube.Namespace, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	var out []kube.Namespace
	for n, r := range c.ns {
		out = append(out, kube.Namespace{Name: n, Labels: map[string]string{"waldur.io/resource-uuid": string(r)}, Terminating: c.deleting[n]})
	}
	return out, nil
}

func (c *cluster) Quotas(context.Context, string) ([]kube.Quota, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kube.Quota
	for n, used := range c.used {
		if used == nil {
			continue
		}
		q := kube.Quota{Namespace: n, Name: "waldur-quota", Used: map[string]resource.Quantity{}}
		for k, v := range used {
			q.Used[k] = resource.MustParse(v)
		}
		out = append(out, q)
	}
	return out, nil
}

type env struct {
	t       *testing.T
	srv     *waldurtest.Server
	config  *config.Config
	cfg     *config.Offering
	cluster *cluster
	client  *waldur.Client
	posts   []string
	mu      sync.Mutex
}

func newEnv(t *testing.T, components string) *env {
	t.Helper()
	return newEnvTop(t, "", components)
}

// newEnvTop is newEnv with top-level config text before the offerings.
func newEnvTop(t *testing.T, top, components string) *env {
	t.Helper()
	srv := waldurtest.New(t)
	text := top + fmt.Sprintf(`offerings:
- name: Plain
  waldur_api_url: %s
  waldur_offering_uuid: %s
  backend_type: namespace
  backend_components:
%s`, srv.URL(), offering, components)
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := waldur.DefaultClientOptions()
	opts.BaseURL, opts.Token = srv.URL(), srv.Token()
	opts.RetryWaitMin, opts.RetryWaitMax = time.Millisecond, 2*time.Millisecond
	c, err := waldur.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, config: l.Config, cfg: &l.Offerings[0], cluster: &cluster{}, client: c}
	srv.OnRequest(func(r *http.Request, body []byte) {
		if r.Method == http.MethodPost {
			e.mu.Lock()
			e.posts = append(e.posts, string(body))
			e.mu.Unlock()
		}
	})
	return e
}

func (e *env) run(at time.Time) (changeset.Set, error) {
	e.t.Helper()
	r := &usage.Reporter{
		Offerings: []*usage.Offering{{Config: e.cfg, Waldur: e.client, Cluster: e.cluster}},
		Config:    e.config, Location: time.UTC, Now: func() time.Time { return at },
	}
	cs, _, err := changeset.Apart(r.Run(context.Background()))
	return cs, err
}

func (e *env) postCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.posts)
}

// amount returns the stored usage of a component in a billing period.
func (e *env) amount(res waldur.UUID, typ, period string) (string, string) {
	for _, u := range e.srv.Usages(res) {
		if u.Type == typ && u.BillingPeriod == period {
			return string(u.Usage), u.Description
		}
	}
	return "", ""
}

func at(day, hour, minute int) time.Time {
	return time.Date(2026, 3, day, hour, minute, 0, 0, time.UTC)
}

func find(t *testing.T, cs changeset.Set, suffix string) changeset.Entry {
	t.Helper()
	for _, e := range cs.Entries {
		if strings.HasSuffix(e.Subject, suffix) {
			return e
		}
	}
	t.Fatalf("no entry ending %q in %v", suffix, cs.Entries)
	return changeset.Entry{}
}

// Measured usage accumulates over report runs: each run adds the last sample
// times the hours since it, read back from Waldur's record.
func TestMeasuredUsageAccumulatesOverRuns(t *testing.T) {
	e := newEnv(t, "    cpu_hours: {accounting_type: usage, measured_from: requests.cpu}\n    mem_hours: {accounting_type: usage, measured_from: requests.memory, unit_factor: 2}\n")
	res := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "alpha", Limits: waldur.Limits{"cpu": "4"}})
	e.cluster.set("waldur-alpha", res, map[string]string{"requests.cpu": "2", "requests.memory": "4Gi"})

	cs, err := e.run(at(5, 10, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := find(t, cs, "alpha cpu_hours"); got.Action != changeset.Create {
		t.Errorf("first run: %+v", got)
	}
	if a, d := e.amount(res, "cpu_hours", "2026-03-01"); a != "0.00" || !strings.HasSuffix(d, "last sample 2 at 2026-03-05T10:00:00Z") {
		t.Errorf("after run 1: %s %q", a, d)
	}
	e.cluster.set("waldur-alpha", res, map[string]string{"requests.cpu": "500m", "requests.memory": "1Gi"})
	if _, err := e.run(at(5, 13, 0)); err != nil {
		t.Fatal(err)
	}
	// 2 cores held for 3 hours; 4 GiB for 3 hours at unit_factor 2.
	if a, _ := e.amount(res, "cpu_hours", "2026-03-01"); a != "6.00" {
		t.Errorf("cpu after run 2: %s", a)
	}
	if a, _ := e.amount(res, "mem_hours", "2026-03-01"); a != "6.00" {
		t.Errorf("memory after run 2: %s", a)
	}
	cs, err = e.run(at(5, 15, 0))
	if err != nil {
		t.Fatal(err)
	}
	if a, d := e.amount(res, "cpu_hours", "2026-03-01"); a != "7.00" || !strings.HasSuffix(d, "last sample 0.5 at 2026-03-05T15:00:00Z") {
		t.Errorf("after run 3: %s %q", a, d)
	}
	if got := find(t, cs, "alpha cpu_hours"); got.Action != changeset.Update || !strings.HasPrefix(got.Reason, "6.00 → 7.00") {
		t.Errorf("run 3 entry %+v", got)
	}
	if v := e.srv.Violations(); len(v) > 0 {
		t.Errorf("contract violations: %v", v)
	}
}

// A run that would change neither the total nor the sample posts nothing and
// does not move the sample's time, so no hours are lost.
func TestUnchangedIsSkippedWithoutLosingHours(t *testing.T) {
	e := newEnv(t, "    cpu_hours: {accounting_type: usage, measured_from: requests.cpu}\n")
	res := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "beta"})
	e.cluster.set("waldur-beta", res, map[string]string{"requests.cpu": "0"})
	mustRun(t, e, at(2, 0, 0))
	n := e.postCount()
	cs := mustRun(t, e, at(2, 1, 0))
	if got := find(t, cs, "beta cpu_hours"); got.Action != changeset.Unchanged || e.postCount() != n {
		t.Errorf("idle run: %+v, posts %d → %d", got, n, e.postCount())
	}
	e.cluster.set("waldur-beta", res, map[string]string{"requests.cpu": "3"})
	mustRun(t, e, at(2, 2, 0)) // the sample changes: posted, total still 0
	if a, _ := e.amount(res, "cpu_hours", "2026-03-01"); a != "0.00" {
		t.Errorf("after the new sample: %s", a)
	}
	mustRun(t, e, at(2, 3, 0))
	if a, _ := e.amount(res, "cpu_hours", "2026-03-01"); a != "3.00" {
		t.Errorf("one hour at 3 cores: %s", a)
	}
}

// Limit components report the allocation in effect (an executing Update
// order's limits win); a decrease is never reported.
func TestAllocationsNeverDecrease(t *testing.T) {
	e := newEnv(t, "    cpu: {accounting_type: limit}\n    ram: {accounting_type: limit}\n    cpu_hours: {accounting_type: usage}\n")
	res := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "gamma", Limits: waldur.Limits{"cpu": "4", "ram": "8"}})
	e.cluster.set("waldur-gamma", res, nil)
	cs := mustRun(t, e, at(3, 9, 0))
	if a, _ := e.amount(res, "cpu", "2026-03-01"); a != "4.00" {
		t.Errorf("cpu %s", a)
	}
	for _, en := range cs.Entries {
		if strings.HasSuffix(en.Subject, "cpu_hours") {
			t.Errorf("a usage component without measured_from was reported: %+v", en)
		}
	}
	e.srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: res, Limits: waldur.Limits{"cpu": "2", "ram": "16"}})
	cs = mustRun(t, e, at(3, 10, 0))
	if a, _ := e.amount(res, "cpu", "2026-03-01"); a != "4.00" {
		t.Errorf("cpu after a decrease: %s", a)
	}
	if got := find(t, cs, "gamma cpu"); got.Action != changeset.Unchanged || !strings.Contains(got.Reason, "a decrease is not reported") {
		t.Errorf("entry %+v", got)
	}
	if a, _ := e.amount(res, "ram", "2026-03-01"); a != "16.00" {
		t.Errorf("ram after an increase: %s", a)
	}
}

// The first report of a month closes the previous month up to the month's
// first instant and carries the last sample on from there.
func TestMonthChangeClosesThePreviousMonth(t *testing.T) {
	e := newEnv(t, "    cpu_hours: {accounting_type: usage, measured_from: requests.cpu}\n")
	res := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "delta"})
	e.cluster.set("waldur-delta", res, map[string]string{"requests.cpu": "2"})
	mustRun(t, e, time.Date(2026, 2, 28, 22, 0, 0, 0, time.UTC))
	mustRun(t, e, time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC)) // Feb: 2.00
	e.cluster.set("waldur-delta", res, map[string]string{"requests.cpu": "6"})
	cs := mustRun(t, e, time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC))
	if a, d := e.amount(res, "cpu_hours", "2026-02-01"); a != "4.00" || !strings.HasSuffix(d, "at 2026-03-01T00:00:00Z") {
		t.Errorf("February: %s %q", a, d)
	}
	if a, _ := e.amount(res, "cpu_hours", "2026-03-01"); a != "4.00" {
		t.Errorf("March: %s", a)
	}
	if len(cs.Entries) != 2 {
		t.Errorf("entries %v", cs.Entries)
	}
	// The closing report was posted before the month's own.
	e.mu.Lock()
	last := e.posts[len(e.posts)-2:]
	e.mu.Unlock()
	if !strings.Contains(last[0], `"date":"2026-02-01T00:00:00Z"`) || !strings.Contains(last[1], `"date":"2026-03-01T00:00:00Z"`) {
		t.Errorf("post order: %v", last)
	}
}

// Billing months follow the configured time zone.
func TestTimezoneDatesTheMonth(t *testing.T) {
	e := newEnv(t, "    cpu: {accounting_type: limit}\n")
	e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "eps", Limits: waldur.Limits{"cpu": "1"}})
	tallinn, err := time.LoadLocation("Europe/Tallinn")
	if err != nil {
		t.Skip(err)
	}
	r := &usage.Reporter{
		Offerings: []*usage.Offering{{Config: e.cfg, Waldur: e.client}},
		Location:  tallinn, Now: func() time.Time { return time.Date(2026, 3, 31, 22, 30, 0, 0, time.UTC) }, // 1 April 01:30 in Tallinn
	}
	if _, _, err := changeset.Apart(r.Run(context.Background())); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.posts) != 1 || !strings.Contains(e.posts[0], `"date":"2026-04-01T00:00:00+03:00"`) {
		t.Errorf("posts %v", e.posts)
	}
}

// Waldur down: a read error, and nothing is posted. A cluster that cannot be
// read is a cluster error, and nothing is posted either.
func TestReadFailuresPostNothing(t *testing.T) {
	e := newEnv(t, "    cpu: {accounting_type: limit}\n    cpu_hours: {accounting_type: usage, measured_from: requests.cpu}\n")
	res := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "zeta", Limits: waldur.Limits{"cpu": "1"}})
	e.cluster.set("waldur-zeta", res, map[string]string{"requests.cpu": "1"})
	e.srv.InjectFault(waldurtest.Fault{Count: 100, PathPrefix: "/api/marketplace-component-usages/", Status: http.StatusServiceUnavailable})
	_, err := e.run(at(4, 0, 0))
	var re *usage.ReadError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "503") || e.postCount() != 0 {
		t.Errorf("error %v, posts %d", err, e.postCount())
	}
	e.srv.ClearFaults()
	e.cluster.err = errors.New("connection refused")
	_, err = e.run(at(4, 0, 0))
	var ce *usage.ClusterError
	if !errors.As(err, &ce) || e.postCount() != 0 {
		t.Errorf("error %v, posts %d", err, e.postCount())
	}
}

// Resources Waldur takes no usage for are skipped with the reason; a resource
// without a quota reporting the key is not measured.
func TestSkips(t *testing.T) {
	e := newEnv(t, "    cpu: {accounting_type: limit}\n    gpu_hours: {accounting_type: usage, measured_from: requests.nvidia.com/gpu}\n")
	e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "erred", State: waldur.ResourceErred, Limits: waldur.Limits{"cpu": "1"}})
	ok := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "fine", Limits: waldur.Limits{"cpu": "1"}})
	e.cluster.set("waldur-fine", ok, map[string]string{"requests.cpu": "1"})
	cs := mustRun(t, e, at(6, 0, 0))
	if got := find(t, cs, "erred cpu"); got.Action != changeset.Skip || !strings.Contains(got.Reason, "this one is Erred") {
		t.Errorf("erred: %+v", got)
	}
	if got := find(t, cs, "fine gpu_hours"); got.Action != changeset.Skip || !strings.Contains(got.Reason, "reports requests.nvidia.com/gpu") {
		t.Errorf("unmeasured: %+v", got)
	}
	if got := find(t, cs, "fine cpu"); got.Action != changeset.Create {
		t.Errorf("fine: %+v", got)
	}
}

// A dry run posts nothing.
func TestDryRunPostsNothing(t *testing.T) {
	e := newEnv(t, "    cpu: {accounting_type: limit}\n")
	e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "eta", Limits: waldur.Limits{"cpu": "1"}})
	r := &usage.Reporter{Offerings: []*usage.Offering{{Config: e.cfg, Waldur: e.client}}, DryRun: true, Now: func() time.Time { return at(7, 0, 0) }}
	cs, _, err := changeset.Apart(r.Run(context.Background()))
	if err != nil || e.postCount() != 0 || !strings.HasPrefix(find(t, cs, "eta cpu").Reason, "would report for 2026-03-01") {
		t.Errorf("err %v posts %d entries %v", err, e.postCount(), cs.Entries)
	}
}

func mustRun(t *testing.T, e *env, when time.Time) changeset.Set {
	t.Helper()
	cs, err := e.run(when)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Only resources whose tenant exists are billed: one the renderer skips (bad
// limits, a slug that is no namespace name) is not, nor one whose namespace
// is missing or being deleted in the cluster (direct mode deleted it, or it
// is not applied yet); a resource being terminated is billed while its
// namespace exists. Each left-out resource is a skip entry with the reason,
// and nothing is posted for it.
func TestBillsOnlyTenantsThatExist(t *testing.T) {
	e := newEnv(t, "    cpu: {accounting_type: limit}\n    cpu_hours: {accounting_type: usage, measured_from: requests.cpu}\n")
	add := func(slug, state string, limits waldur.Limits, ns string) waldur.UUID {
		id := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: slug, State: state, Limits: limits})
		if ns != "" {
			e.cluster.set(ns, id, map[string]string{"requests.cpu": "1"})
		}
		return id
	}
	long := "Bad_Name"
	ids := map[string]waldur.UUID{
		"fine":     add("fine", "", waldur.Limits{"cpu": "2"}, "waldur-fine"),
		"bad":      add("bad", "", waldur.Limits{"cpu": "-1"}, "waldur-bad"),
		"long":     add(long, "", waldur.Limits{"cpu": "2"}, "waldur-bad-name"),
		"gone":     add("gone", "", waldur.Limits{"cpu": "2"}, ""),
		"deleting": add("deleting", "", waldur.Limits{"cpu": "2"}, "waldur-deleting"),
		"leaving":  add("leaving", waldur.ResourceTerminating, waldur.Limits{"cpu": "2"}, "waldur-leaving"),
		"left":     add("left", waldur.ResourceTerminating, waldur.Limits{"cpu": "2"}, ""),
	}
	e.cluster.deleting = map[string]bool{"waldur-deleting": true}
	cs := mustRun(t, e, at(8, 12, 0))
	for _, tc := range []struct {
		slug   string
		billed bool
		reason string
	}{
		{"fine", true, ""},
		{"leaving", true, ""},
		{"bad", false, "not billed: the resource has no rendered tenant (skipped: invalid resource limits: cpu=-1 is negative)"},
		{long, false, "not billed: the resource has no rendered tenant (skipped: namespace name"},
		{"gone", false, "not billed: the tenant's namespace waldur-gone does not exist in the cluster"},
		{"deleting", false, "not billed: the tenant's namespace waldur-deleting is being deleted in the cluster"},
		{"left", false, "no namespace of the resource exists in the cluster (none labelled waldur.io/resource-uuid="},
	} {
		name := tc.slug
		if name == long {
			name = "long"
		}
		t.Run(name, func(t *testing.T) {
			for _, typ := range []string{"cpu", "cpu_hours"} {
				got := find(t, cs, tc.slug+" "+typ)
				posted := len(e.srv.Usages(ids[name])) > 0
				switch {
				case tc.billed && (got.Action != changeset.Create || !posted):
					t.Errorf("%s: want billed, got %+v (posted %v)", typ, got, posted)
				case !tc.billed && (got.Action != changeset.Skip || !strings.Contains(got.Reason, tc.reason) || posted):
					t.Errorf("%s: want a skip with %q, got %+v (posted %v)", typ, tc.reason, got, posted)
				}
			}
		})
	}
	if got := find(t, cs, "left cpu"); !strings.HasSuffix(got.Reason, "(the resource is being terminated)") {
		t.Errorf("left: %q", got.Reason)
	}
}

// Without a cluster, the render alone decides: a resource the renderer
// skips is not billed, the others are.
func TestBillsOnlyRenderedTenantsWithoutCluster(t *testing.T) {
	e := newEnv(t, "    cpu: {accounting_type: limit}\n")
	fine := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "fine", Limits: waldur.Limits{"cpu": "2"}})
	long := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "Not_A_Label", Limits: waldur.Limits{"cpu": "2"}})
	r := &usage.Reporter{Offerings: []*usage.Offering{{Config: e.cfg, Waldur: e.client}}, Config: e.config, Now: func() time.Time { return at(9, 0, 0) }}
	cs, _, err := changeset.Apart(r.Run(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := e.amount(fine, "cpu", "2026-03-01"); a != "2.00" {
		t.Errorf("fine: %q", a)
	}
	if got := find(t, cs, "Not_A_Label cpu"); got.Action != changeset.Skip || !strings.Contains(got.Reason, "no rendered tenant") || len(e.srv.Usages(long)) > 0 {
		t.Errorf("skipped resource: %+v, records %v", got, e.srv.Usages(long))
	}
}

// usage.allocation time_weighted bills unit-hours of the allocation: each
// limit value × the hours it held, accumulated in Waldur's record as measured
// usage is, across an increase, a decrease and the month change: the worked
// example of docs/orders.md.
func TestTimeWeightedAllocation(t *testing.T) {
	e := newEnvTop(t, "usage: {allocation: time_weighted}\n", "    cpu: {accounting_type: limit}\n")
	res := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "tw", Limits: waldur.Limits{"cpu": "4"}})
	e.cluster.set("waldur-tw", res, nil)
	steps := []struct {
		at     time.Time
		update string // an executing Update order's cpu from this step on
		month  string
		want   string
		sample string
	}{
		{at(5, 10, 0), "", "2026-03-01", "0.00", "last sample 4 at 2026-03-05T10:00:00Z"},
		{at(5, 13, 0), "8", "2026-03-01", "12.00", "last sample 8 at 2026-03-05T13:00:00Z"},                              // 4 cores × 3 h
		{at(5, 14, 30), "", "2026-03-01", "24.00", "last sample 8 at 2026-03-05T14:30:00Z"},                              // + 8 × 1.5 h
		{at(6, 14, 30), "2", "2026-03-01", "216.00", "last sample 2 at 2026-03-06T14:30:00Z"},                            // + 8 × 24 h
		{time.Date(2026, 4, 1, 2, 0, 0, 0, time.UTC), "", "2026-04-01", "4.00", "last sample 2 at 2026-04-01T02:00:00Z"}, // 2 × 2 h of April
	}
	for i, st := range steps {
		if st.update != "" {
			e.srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: res, Limits: waldur.Limits{"cpu": waldur.Amount(st.update)}})
		}
		cs := mustRun(t, e, st.at)
		a, d := e.amount(res, "cpu", st.month)
		if a != st.want || !strings.HasSuffix(d, st.sample) || !strings.Contains(d, "unit-hours of the allocated cpu") {
			t.Errorf("step %d: %s %q, want %s with %q; entries %v", i, a, d, st.want, st.sample, cs.Entries)
		}
	}
	// March closed at its last instant: 216 + 2 × 609.5 h (6 March 14:30 to
	// 1 April), as in the worked example of docs/orders.md.
	if a, d := e.amount(res, "cpu", "2026-03-01"); a != "1435.00" || !strings.HasSuffix(d, "at 2026-04-01T00:00:00Z") {
		t.Errorf("March closed: %s %q", a, d)
	}
	if v := e.srv.Violations(); len(v) > 0 {
		t.Errorf("contract violations: %v", v)
	}
}

// A record of the month written in the other mode is left as it is, with a
// skip entry that says so: the modes mix neither ways.
func TestAllocationModesDoNotMix(t *testing.T) {
	for _, tc := range []struct {
		name, first, second, want string
	}{
		{"peak record, then time_weighted", "peak", "time_weighted", "the month's record holds the peak allocation"},
		{"time_weighted record, then peak", "time_weighted", "peak", "the month's record holds unit-hours"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "    cpu: {accounting_type: limit}\n")
			res := e.srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "mix", Limits: waldur.Limits{"cpu": "4"}})
			e.cluster.set("waldur-mix", res, nil)
			e.config.Usage.Allocation = tc.first
			mustRun(t, e, at(5, 10, 0))
			before, _ := e.amount(res, "cpu", "2026-03-01")
			e.config.Usage.Allocation = tc.second
			cs := mustRun(t, e, at(5, 12, 0))
			after, _ := e.amount(res, "cpu", "2026-03-01")
			if got := find(t, cs, "mix cpu"); got.Action != changeset.Skip || !strings.Contains(got.Reason, tc.want) || before != after {
				t.Errorf("%+v; record %s → %s", got, before, after)
			}
		})
	}
}
