package waldur_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

const resourcesPath = "/api/marketplace-provider-resources/"

// TestPaging reads lists over several pages and stops by X-Result-Count, by the
// Link header when the count is missing, and at a short or empty page when both
// are missing.
func TestPaging(t *testing.T) {
	tests := []struct {
		name         string
		n, pageSize  int
		count, link  bool
		wantRequests int
	}{
		{"750 by 300 with X-Result-Count", 750, 300, true, true, 3},
		{"exact multiple stops by count", 60, 30, true, false, 2},
		{"Link only", 75, 30, false, true, 3},
		{"Link only, exact multiple", 60, 30, false, true, 2},
		{"no headers: short page", 75, 30, false, false, 3},
		{"no headers: exact multiple ends at the 404 past the last page", 60, 30, false, false, 3},
		{"empty list", 0, 300, true, true, 1},
		{"small pages", 7, 2, true, true, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t)
			srv.SetPagingHeaders(tt.count, tt.link)
			for range tt.n {
				srv.AddResource(waldur.Resource{OfferingUUID: offering})
			}
			srv.OnRequest(func(r *http.Request, _ []byte) {
				if r.URL.Query().Get("page_size") == "" {
					t.Errorf("request without page_size: %s", r.URL)
				}
			})
			c := clientFor(t, srv, pageSize(tt.pageSize))
			res, err := c.ListResources(context.Background(), offering)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != tt.n {
				t.Errorf("got %d resources, want %d", len(res), tt.n)
			}
			seen := map[waldur.UUID]bool{}
			for _, r := range res {
				if seen[r.UUID] {
					t.Fatalf("duplicate %s", r.UUID)
				}
				seen[r.UUID] = true
			}
			if got := srv.Requests(resourcesPath); got != tt.wantRequests {
				t.Errorf("%d list requests, want %d", got, tt.wantRequests)
			}
			if got := c.Stats().Requests[waldur.KindResourcesList]; got != tt.wantRequests {
				t.Errorf("stats count %d requests, want %d", got, tt.wantRequests)
			}
		})
	}
}

// TestPagingRestartsWhenTheListChanges: a resource added between two pages
// changes X-Result-Count; the client starts over instead of returning a list that
// may have skipped or repeated items.
func TestPagingRestartsWhenTheListChanges(t *testing.T) {
	srv := waldurtest.New(t)
	for range 5 {
		srv.AddResource(waldur.Resource{OfferingUUID: offering})
	}
	var added atomic.Bool
	srv.OnRequest(func(r *http.Request, _ []byte) {
		if r.URL.Query().Get("page") == "2" && added.CompareAndSwap(false, true) {
			srv.AddResource(waldur.Resource{OfferingUUID: offering})
		}
	})
	res, err := clientFor(t, srv, pageSize(2)).ListResources(context.Background(), offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 6 {
		t.Errorf("got %d resources, want 6", len(res))
	}
	// 2 pages of the first pass, then 3 pages of 6 items.
	if got := srv.Requests(resourcesPath); got != 5 {
		t.Errorf("%d requests, want 5", got)
	}
}

func TestPagingGivesUpWhenTheListKeepsChanging(t *testing.T) {
	srv := waldurtest.New(t)
	for range 5 {
		srv.AddResource(waldur.Resource{OfferingUUID: offering})
	}
	srv.OnRequest(func(r *http.Request, _ []byte) {
		if r.URL.Query().Get("page") == "2" {
			srv.AddResource(waldur.Resource{OfferingUUID: offering})
		}
	})
	_, err := clientFor(t, srv, pageSize(2)).ListResources(context.Background(), offering)
	if err == nil || !strings.Contains(err.Error(), "changed while it was being paged") {
		t.Fatalf("error %v", err)
	}
}
