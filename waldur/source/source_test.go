package source_test

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

const offeringUUID = "0ff00000000040008000000000000042"

// TestRefreshReadsOnlyTheNamedResources: a run asked to look at one resource
// reads that resource, its team and the open orders, and no listing of
// resources or teams; the state it builds equals a full read.
func TestRefreshReadsOnlyTheNamedResources(t *testing.T) {
	srv := waldurtest.New(t)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []waldur.UUID
	for i, slug := range []string{"alpha", "beta", "gamma", "delta"} {
		ids = append(ids, srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: slug, Created: created.Add(time.Duration(i) * time.Hour),
			ProjectUUID: waldur.UUID("0aa0000000004000800000000000000" + string(rune('1'+i))), Limits: waldur.Limits{"cpu": "1"}}))
	}
	src, last := readPlain(t, srv)

	// Waldur changes: beta's limit, a new resource epsilon with a Create
	// order, gamma terminated.
	beta, _ := srv.Resource(ids[1])
	beta.Limits = waldur.Limits{"cpu": "4"}
	srv.AddResource(beta)
	eps := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "epsilon", Created: created.Add(90 * time.Minute),
		ProjectUUID: "0aa00000000040008000000000000009", State: waldur.ResourceCreating})
	srv.AddOrder(offeringUUID, waldur.Order{Type: waldur.OrderCreate, MarketplaceResourceUUID: eps})
	gamma, _ := srv.Resource(ids[2])
	gamma.State = waldur.ResourceTerminated
	srv.AddResource(gamma)

	g, f, calls := refreshThenRead(t, src, last, []waldur.UUID{ids[1], eps, ids[2]})
	if calls[waldur.KindResourcesList] != 0 || calls[waldur.KindResourceGet] != 3 || calls[waldur.KindOrdersList] != 1 {
		t.Errorf("refresh made the calls %v, want 3 resource reads and 1 order listing, no resource listing", calls)
	}
	var gs, fs []string
	for _, r := range g.Resources {
		gs = append(gs, r.Slug+":"+r.State+":"+string(r.Limits["cpu"]))
	}
	for _, r := range f.Resources {
		fs = append(fs, r.Slug+":"+r.State+":"+string(r.Limits["cpu"]))
	}
	if len(gs) != len(fs) || len(g.Orders) != len(f.Orders) || len(g.Orders) != 1 {
		t.Fatalf("refreshed %v with %d orders, a full read %v with %d", gs, len(g.Orders), fs, len(f.Orders))
	}
	for i := range gs {
		if gs[i] != fs[i] {
			t.Errorf("resource %d: refreshed %s, read %s", i, gs[i], fs[i])
		}
	}
	if len(last.Offerings[0].Resources) != 4 || last.Offerings[0].Resources[1].Limits["cpu"] != "1" {
		t.Error("refresh changed the last state in place")
	}
}

// TestRefreshReadsTheResourcesOfMovedOrders: a resource whose order was open
// at the last read is read again even when the run is not asked about it
// (the run itself may have moved the order, and with it the resource), and so
// is the resource of an order opened since.
func TestRefreshReadsTheResourcesOfMovedOrders(t *testing.T) {
	srv := waldurtest.New(t)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	updating := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "upd", Created: created, State: waldur.ResourceUpdating,
		ProjectUUID: "0aa00000000040008000000000000001", Limits: waldur.Limits{"cpu": "1"}})
	ord := srv.AddOrder(offeringUUID, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: updating,
		Limits: waldur.Limits{"cpu": "8"}})
	other := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "other", Created: created.Add(time.Hour),
		ProjectUUID: "0aa00000000040008000000000000002", Limits: waldur.Limits{"cpu": "1"}})
	src, last := readPlain(t, srv)
	ctx := context.Background()
	// The order is done (the resource OK with the new limits); a new order
	// opens on "other"; nothing names either.
	c, err := src.Client(&src.Offerings[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetOrderDone(ctx, ord); err != nil {
		t.Fatal(err)
	}
	srv.AddOrder(offeringUUID, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderPendingProvider, MarketplaceResourceUUID: other,
		Limits: waldur.Limits{"cpu": "2"}})
	o2, _ := srv.Resource(other)
	o2.State = waldur.ResourceUpdating
	srv.AddResource(o2)
	got, err := src.Refresh(ctx, last, []waldur.UUID{"e0000000000040008000000000000099"})
	if err != nil {
		t.Fatal(err)
	}
	states := map[waldur.UUID]string{}
	for _, r := range got.Offerings[0].Resources {
		states[r.UUID] = r.State + ":" + string(r.Limits["cpu"])
	}
	if states[updating] != waldur.ResourceOK+":8" || states[other] != waldur.ResourceUpdating+":1" {
		t.Errorf("refreshed %v: want %s OK with cpu 8 and %s Updating", states, updating, other)
	}
}

// TestClientFollowsTheToken: every stage and run shares an offering's client,
// and a rotated token gives a new one.
func TestClientFollowsTheToken(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/token"
	write := func(tok string) {
		if err := os.WriteFile(file, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("0123456789abcdef0123456789abcdef01234567")
	o := config.Offering{Name: "Plain", WaldurAPIURL: "https://waldur.example.org/api/", WaldurOfferingUUID: offeringUUID, WaldurAPITokenFile: file}
	src := &source.API{Offerings: []config.Offering{o}}
	a, err := src.Client(&o)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := src.Client(&o); b != a {
		t.Error("the same token built a second client")
	}
	write("76543210fedcba9876543210fedcba9876543210")
	if c, _ := src.Client(&o); c == a {
		t.Error("a rotated token kept the old client")
	}
}

// TestConfirmAgainstWaldur: source.API.Confirm tells a live resource, a
// terminated one and one Waldur does not know apart.
func TestConfirmAgainstWaldur(t *testing.T) {
	srv := waldurtest.New(t)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "live", Created: created})
	done := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "done", Created: created, State: waldur.ResourceTerminated})
	unknown := waldur.UUID("00000000000040008000000000000bad")
	src := &source.API{Offerings: []config.Offering{{Name: "Plain", WaldurAPIURL: srv.URL(), WaldurOfferingUUID: offeringUUID}}}
	gone, err := src.Confirm(context.Background(), "Plain", []waldur.UUID{live, done, unknown})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gone[live]; ok {
		t.Errorf("a live resource counts as gone: %v", gone[live])
	}
	if g := gone[done]; !g.Terminated {
		t.Errorf("a terminated resource: %+v", g)
	}
	if g, ok := gone[unknown]; !ok || g.Terminated {
		t.Errorf("an unknown resource: %+v %v", g, ok)
	}
}

// TestRefreshReadsTheAccounts: an event run's refresh reads the offering's
// service and course accounts again (an account event names only its
// project), giving what a full read gives, and leaves the last state as it
// was.
func TestRefreshReadsTheAccounts(t *testing.T) {
	srv := waldurtest.New(t)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	const project = waldur.UUID("0aa00000000040008000000000000001")
	id := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "alpha", ProjectUUID: project, Limits: waldur.Limits{"cpu": "1"}})
	srv.AddServiceAccount(offeringUUID, waldur.ServiceAccount{ProjectUUID: project, Username: "robot-1", State: waldur.AccountOK})
	src, last := readPlain(t, srv)
	srv.AddServiceAccount(offeringUUID, waldur.ServiceAccount{ProjectUUID: project, Username: "robot-2", State: waldur.AccountOK})
	srv.AddCourseAccount(offeringUUID, waldur.CourseAccount{ProjectUUID: project, Username: "student-1", State: waldur.AccountOK})

	g, f, calls := refreshThenRead(t, src, last, []waldur.UUID{id})
	if calls[waldur.KindServiceAccounts] != 1 || calls[waldur.KindCourseAccounts] != 1 || calls[waldur.KindResourcesList] != 0 {
		t.Errorf("refresh made the calls %v, want one listing of each kind of account and no resource listing", calls)
	}
	if !reflect.DeepEqual(g.ServiceAccounts, f.ServiceAccounts) || !reflect.DeepEqual(g.CourseAccounts, f.CourseAccounts) || len(g.ServiceAccounts) != 2 || len(g.CourseAccounts) != 1 {
		t.Errorf("refreshed accounts %+v %+v, a full read %+v %+v", g.ServiceAccounts, g.CourseAccounts, f.ServiceAccounts, f.CourseAccounts)
	}
	if len(last.Offerings[0].ServiceAccounts) != 1 || len(last.Offerings[0].CourseAccounts) != 0 {
		t.Error("refresh changed the last state in place")
	}
}

// refreshThenRead refreshes ids into last, counting the calls, then reads
// the whole site: the one offering of each, and the refresh's calls.
func refreshThenRead(t *testing.T, src *source.API, last *waldur.State, ids []waldur.UUID) (got, full waldur.OfferingState, calls map[string]int) {
	t.Helper()
	ctx, tally := waldur.WithTally(context.Background())
	refreshed, err := src.Refresh(ctx, last, ids)
	if err != nil {
		t.Fatal(err)
	}
	read, err := src.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(refreshed.Offerings) != 1 || len(read.Offerings) != 1 {
		t.Fatalf("offerings: %d refreshed, %d read", len(refreshed.Offerings), len(read.Offerings))
	}
	return refreshed.Offerings[0], read.Offerings[0], tally.Stats().Requests
}

// readPlain is a source of srv's offering "Plain" and its first full read.
func readPlain(t *testing.T, srv *waldurtest.Server) (*source.API, *waldur.State) {
	t.Helper()
	src := &source.API{Offerings: []config.Offering{{Name: "Plain", WaldurAPIURL: srv.URL(), WaldurOfferingUUID: offeringUUID}}}
	last, err := src.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return src, last
}
