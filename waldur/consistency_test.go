package waldur_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// seedN adds n resources of one project, created one minute apart, and returns
// their uuids in listing order.
func seedN(srv *waldurtest.Server, n int) []waldur.UUID {
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	ids := make([]waldur.UUID, n)
	for i := range n {
		ids[i] = srv.AddResource(waldur.Resource{UUID: uuidN(2, i), OfferingUUID: offering, ProjectUUID: projectA,
			Created: at.Add(time.Duration(i) * time.Minute), Name: fmt.Sprint("r", i), Slug: fmt.Sprint("r", i)})
	}
	srv.SetTeam(projectA, []waldur.TeamMember{{Username: "ana", Role: "PROJECT.ADMIN"}})
	return ids
}

func resourceIDs(rs []waldur.Resource) []waldur.UUID {
	out := make([]waldur.UUID, len(rs))
	for i, r := range rs {
		out[i] = r.UUID
	}
	return out
}

// TestConcurrentTerminationIsReadAgain: a resource leaves the listing between
// two pages, so offset paging would skip the resource at the page boundary.
// The listing is read again; the skipped resource is there and the
// terminated one is reported as Terminated, not as missing.
func TestConcurrentTerminationIsReadAgain(t *testing.T) {
	srv := waldurtest.New(t)
	ids := seedN(srv, 5)
	srv.InjectListFault(waldurtest.ListFault{Kind: waldurtest.ListTerminateBetweenPages, PathPrefix: resourcesPath, Count: 1})
	st, err := clientFor(t, srv, pageSize(2)).ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resourceIDs(st.Resources), ids[1:]; !slices.Equal(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
	if !slices.Equal(st.Terminated, ids[:1]) || !st.IsTerminated(ids[0]) || st.IsTerminated(ids[1]) {
		t.Errorf("terminated %v, want %v", st.Terminated, ids[:1])
	}
}

// TestInconsistentListings: a page that repeats an item in place of another
// and an X-Result-Count that disagrees with the items are read again; when
// the fault lasts, the read fails with an InconsistentListingError naming the
// offering, the counts and the repeated uuid.
func TestInconsistentListings(t *testing.T) {
	tests := []struct {
		name      string
		fault     waldurtest.ListFault
		lasting   bool
		wantDups  bool
		wantCount int
	}{
		{"repeated item, once", waldurtest.ListFault{Kind: waldurtest.ListRepeatItem}, false, false, 5},
		{"repeated item, lasting", waldurtest.ListFault{Kind: waldurtest.ListRepeatItem}, true, true, 5},
		{"count one too high, once", waldurtest.ListFault{Kind: waldurtest.ListWrongCount, CountDelta: 1}, false, false, 6},
		{"count one too high, lasting", waldurtest.ListFault{Kind: waldurtest.ListWrongCount, CountDelta: 1}, true, false, 6},
		{"count one too low, lasting", waldurtest.ListFault{Kind: waldurtest.ListWrongCount, CountDelta: -1}, true, false, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t)
			ids := seedN(srv, 5)
			f := tt.fault
			f.PathPrefix, f.Count, f.Query = resourcesPath, 1, url.Values{"state": {waldur.ResourceOK}}
			if tt.lasting {
				f.Count = 1000
			}
			srv.InjectListFault(f)
			c := clientFor(t, srv, pageSize(2))
			st, err := c.ReadOffering(context.Background(), "iris", offering)
			if !tt.lasting {
				if err != nil {
					t.Fatal(err)
				}
				if got := resourceIDs(st.Resources); !slices.Equal(got, ids) {
					t.Errorf("resources %v, want %v", got, ids)
				}
				return
			}
			var ie *waldur.InconsistentListingError
			if st != nil || !errors.As(err, &ie) || !waldur.IsInconsistentListing(err) {
				t.Fatalf("got %v, %v; want an InconsistentListingError", st, err)
			}
			if ie.Offering != offering || ie.Kind != waldur.KindResourcesList || ie.Expected != tt.wantCount || ie.Attempts != 4 {
				t.Errorf("error %+v", ie)
			}
			if tt.wantDups && (len(ie.Duplicates) == 0 || ie.Got != 5-len(ie.Duplicates)) {
				t.Errorf("duplicates %v, got %d; want repeats and as many items missing", ie.Duplicates, ie.Got)
			}
			for _, want := range []string{string(offering), "gave up after 4 attempts", fmt.Sprint("X-Result-Count ", tt.wantCount)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// listServer answers the resource listing with fixed records and count.
func listServer(t *testing.T, count string, records ...string) *httptest.Server {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if count != "" {
			w.Header().Set("X-Result-Count", count)
		}
		_, _ = w.Write([]byte("[" + strings.Join(records, ",") + "]"))
	}))
	t.Cleanup(hs.Close)
	return hs
}

func rec(id waldur.UUID, name string) string {
	return fmt.Sprintf(`{"uuid": %q, "name": %q, "state": "OK", "offering_uuid": %q, "project_uuid": %q, "created": "2026-01-01T00:00:00Z"}`,
		id, name, offering, projectA)
}

// TestDuplicateRecords: a record listed twice with the same content counts
// once (never a collision with itself) when X-Result-Count agrees; with
// different content, or without a count to check, the listing is
// inconsistent.
func TestDuplicateRecords(t *testing.T) {
	a, b := uuidN(2, 1), uuidN(2, 2)
	tests := []struct {
		name    string
		count   string
		records []string
		want    []waldur.UUID
	}{
		{"same content, counted once", "2", []string{rec(a, "a"), rec(b, "b"), rec(a, "a")}, []waldur.UUID{a, b}},
		{"different content", "2", []string{rec(a, "a"), rec(b, "b"), rec(a, "a2")}, nil},
		{"no count to check", "", []string{rec(a, "a"), rec(a, "a")}, nil},
		{"count includes the repeat", "3", []string{rec(a, "a"), rec(b, "b"), rec(a, "a")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := listServer(t, tt.count, tt.records...)
			res, err := newClient(t, hs.URL, secretToken).ListResources(context.Background(), offering)
			if tt.want == nil {
				var ie *waldur.InconsistentListingError
				if !errors.As(err, &ie) || !slices.Contains(ie.Duplicates, a) {
					t.Fatalf("got %v, %v; want an InconsistentListingError naming %s", res, err, a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := resourceIDs(res); !slices.Equal(got, tt.want) {
				t.Errorf("resources %v, want %v", got, tt.want)
			}
		})
	}
}

// TestLookupResource: a listing can miss a live resource when one resource
// leaves it and another joins it between two pages (the count stays the
// same); the direct read finds it. Only Waldur's own JSON 404 says
// "absent"; a proxy's HTML 404 is an error.
func TestLookupResource(t *testing.T) {
	srv := waldurtest.New(t)
	ids := seedN(srv, 5)
	srv.InjectListFault(waldurtest.ListFault{Kind: waldurtest.ListTerminateBetweenPages, PathPrefix: resourcesPath, Count: 1})
	var added atomic.Bool
	srv.OnRequest(func(r *http.Request, _ []byte) {
		if r.URL.Query().Get("page") == "2" && added.CompareAndSwap(false, true) {
			srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA, Created: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)})
		}
	})
	c := clientFor(t, srv, pageSize(2))
	res, err := c.ListResources(context.Background(), offering)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(resourceIDs(res), ids[2]) {
		t.Fatalf("the listing was expected to skip %s: %v", ids[2], resourceIDs(res))
	}
	got, found, err := c.LookupResource(context.Background(), ids[2])
	if err != nil || !found || got.UUID != ids[2] || got.State != waldur.ResourceOK {
		t.Errorf("lookup of the skipped resource: %+v, %v, %v", got, found, err)
	}
	got, found, err = c.LookupResource(context.Background(), ids[0])
	if err != nil || !found || got.State != waldur.ResourceTerminated {
		t.Errorf("lookup of the terminated resource: %+v, %v, %v", got, found, err)
	}
	if got, found, err := c.LookupResource(context.Background(), uuidN(2, 99)); err != nil || found || got != nil {
		t.Errorf("lookup of an unknown resource: %+v, %v, %v; want positively absent", got, found, err)
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<html><h1>404 Not Found</h1>nginx</html>"))
	}))
	defer proxy.Close()
	if _, found, err := newClient(t, proxy.URL, secretToken).LookupResource(context.Background(), ids[2]); err == nil || found {
		t.Errorf("a proxy's HTML 404 gave found=%v, error %v; want an error", found, err)
	}
}

// TestTerminatedWindow: Terminated resources are listed with their uuid and
// state only, modified within the window (all with a negative window); a
// resource terminated by an order finished elsewhere is among them.
func TestTerminatedWindow(t *testing.T) {
	srv := waldurtest.New(t)
	old := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA, State: waldur.ResourceTerminated,
		Created: time.Now().Add(-200 * 24 * time.Hour)})
	recent := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA, State: waldur.ResourceTerminated,
		Created: time.Now().Add(-time.Hour)})
	live := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA})
	order := srv.AddOrder(offering, waldur.Order{Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: live})
	var fields []string
	srv.OnRequest(func(r *http.Request, _ []byte) {
		if q := r.URL.Query(); slices.Equal(q["state"], []string{waldur.ResourceTerminated}) {
			fields = q["field"]
		}
	})
	c := clientFor(t, srv)
	if err := c.SetOrderDone(context.Background(), order); err != nil {
		t.Fatal(err)
	}
	st, err := c.ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	want := []waldur.UUID{recent, live}
	slices.Sort(want)
	if !slices.Equal(st.Terminated, want) || len(st.Resources) != 0 {
		t.Errorf("terminated %v, resources %v; want terminated %v", st.Terminated, resourceIDs(st.Resources), want)
	}
	if !slices.Equal(fields, []string{"uuid", "state"}) {
		t.Errorf("the Terminated listing asked for fields %v", fields)
	}
	all, err := clientFor(t, srv, func(o *waldur.ClientOptions) { o.TerminatedWindow = -1 }).ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, old)
	slices.Sort(want)
	if !slices.Equal(all.Terminated, want) {
		t.Errorf("without a window: terminated %v, want %v", all.Terminated, want)
	}
}
