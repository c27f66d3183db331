package waldur_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

func uuidN(kind, i int) waldur.UUID {
	return waldur.UUID(fmt.Sprintf("%08x00004000800000000000%04x", kind, i))
}

// TestTeamsOncePerProjectWithBoundedConcurrency: 1000 resources in 10 projects
// give 10 team calls, each through the project's first resource, with never more
// than Concurrency requests in flight.
func TestTeamsOncePerProjectWithBoundedConcurrency(t *testing.T) {
	const projects, perProject, limit = 10, 100, 3
	srv := waldurtest.New(t)
	first := map[waldur.UUID]waldur.UUID{}
	created := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range projects * perProject {
		p := uuidN(1, i%projects)
		r := srv.AddResource(waldur.Resource{UUID: uuidN(2, i), OfferingUUID: offering, ProjectUUID: p,
			Created: created.Add(time.Duration(i) * time.Minute)})
		if _, ok := first[p]; !ok {
			first[p] = r
		}
	}
	for p := range projects {
		srv.SetTeam(uuidN(1, p), []waldur.TeamMember{{UUID: uuidN(3, p), Username: fmt.Sprintf("user%d", p), Role: "PROJECT.ADMIN"}})
	}
	var mu sync.Mutex
	var teamCalls []waldur.UUID
	srv.OnRequest(func(r *http.Request, _ []byte) {
		if rest, ok := strings.CutSuffix(r.URL.Path, "/team/"); ok {
			mu.Lock()
			teamCalls = append(teamCalls, waldur.UUID(rest[strings.LastIndex(rest, "/")+1:]))
			mu.Unlock()
		}
	})
	srv.SetDelay("/api/", 5*time.Millisecond)
	c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.Concurrency = limit })
	st, err := c.ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != projects*perProject || len(st.Teams) != projects {
		t.Fatalf("%d resources, %d teams", len(st.Resources), len(st.Teams))
	}
	if len(teamCalls) != projects || c.Stats().Requests[waldur.KindTeam] != projects {
		t.Errorf("%d team calls, want %d", len(teamCalls), projects)
	}
	for p, r := range first {
		if !slices.Contains(teamCalls, r) {
			t.Errorf("team of project %s not read through its first resource %s", p, r)
		}
		if got := st.Teams[p]; len(got) != 1 || got[0].Role != "PROJECT.ADMIN" {
			t.Errorf("team of %s: %+v", p, got)
		}
	}
	if peak := srv.MaxInFlight("/api/"); peak > limit || peak < 2 {
		t.Errorf("peak of %d requests in flight, want 2..%d", peak, limit)
	}
}

// seedMixed stores resources, orders, users and teams in the given order, with
// equal creation times so that only the uuid tie-break orders them.
func seedMixed(srv *waldurtest.Server, order []int) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, i := range order {
		p := uuidN(1, i%3)
		srv.AddResource(waldur.Resource{UUID: uuidN(2, i), OfferingUUID: offering, ProjectUUID: p, CustomerUUID: uuidN(6, 0),
			Created: at, Name: fmt.Sprint("r", i), Slug: fmt.Sprint("r", i)})
		srv.AddOrder(offering, waldur.Order{UUID: uuidN(4, i), MarketplaceResourceUUID: uuidN(2, i), Created: at})
		srv.AddOfferingUser(offering, waldur.OfferingUser{UUID: uuidN(5, i), UserUUID: uuidN(3, i), Username: fmt.Sprint("u", i)})
	}
	for p := range 3 {
		members := []waldur.TeamMember{}
		for _, i := range order {
			members = append(members, waldur.TeamMember{UUID: uuidN(3, i), Username: fmt.Sprint("user", i), Role: "member"})
		}
		srv.SetTeam(uuidN(1, p), members)
	}
}

func TestReadOfferingIsDeterministic(t *testing.T) {
	order := rand.Perm(12)
	reversed := slices.Clone(order)
	slices.Reverse(reversed)
	var states []*waldur.OfferingState
	for _, o := range [][]int{order, reversed} {
		srv := waldurtest.New(t)
		seedMixed(srv, o)
		c := clientFor(t, srv, pageSize(5))
		for range 2 {
			st, err := c.ReadOffering(context.Background(), "iris", offering)
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, st)
		}
	}
	for i := 1; i < len(states); i++ {
		if !reflect.DeepEqual(states[0], states[i]) {
			t.Fatalf("read %d differs from read 0", i)
		}
	}
	st := states[0]
	sorted := func(n int, key func(int) waldur.UUID) bool {
		for i := 1; i < n; i++ {
			if key(i-1) >= key(i) {
				return false
			}
		}
		return true
	}
	if !sorted(len(st.Resources), func(i int) waldur.UUID { return st.Resources[i].UUID }) ||
		!sorted(len(st.Orders), func(i int) waldur.UUID { return st.Orders[i].UUID }) ||
		!sorted(len(st.OfferingUsers), func(i int) waldur.UUID { return st.OfferingUsers[i].UUID }) {
		t.Error("lists are not sorted by (created, uuid) / uuid")
	}
	for p, team := range st.Teams {
		if !sorted(len(team), func(i int) waldur.UUID { return team[i].UUID }) {
			t.Errorf("team %s not sorted by uuid", p)
		}
	}
	if len(st.Resources) != 12 || len(st.Orders) != 12 || len(st.OfferingUsers) != 12 || len(st.Teams) != 3 {
		t.Errorf("counts %d/%d/%d/%d", len(st.Resources), len(st.Orders), len(st.OfferingUsers), len(st.Teams))
	}
	if st.Name != "iris" || st.OfferingUUID != offering {
		t.Errorf("header %q %q", st.Name, st.OfferingUUID)
	}
}

func TestReadOfferingSortsByCreatedFirst(t *testing.T) {
	srv := waldurtest.New(t)
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	late := srv.AddResource(waldur.Resource{UUID: uuidN(2, 1), OfferingUUID: offering, Created: at.Add(time.Hour)})
	early := srv.AddResource(waldur.Resource{UUID: uuidN(2, 2), OfferingUUID: offering, Created: at})
	st, err := clientFor(t, srv).ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if st.Resources[0].UUID != early || st.Resources[1].UUID != late {
		t.Errorf("order %s, %s", st.Resources[0].UUID, st.Resources[1].UUID)
	}
}

// TestReadOfferingFailsOnAnyError: one failing call fails the whole read and no
// partial state is returned.
func TestReadOfferingFailsOnAnyError(t *testing.T) {
	tests := []struct {
		name, path string
		status     int
		wantInErr  string
	}{
		{"resources", "/api/marketplace-provider-resources/?", 403, "resources of offering"},
		{"orders", "/api/marketplace-orders/", 404, "list orders of offering"},
		{"offering users", "/api/marketplace-offering-users/", 500, "list offering users of offering"},
		{"one team", "/team/", 400, "read team of resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t)
			seedMixed(srv, []int{0, 1, 2, 3})
			path := tt.path
			if path == "/team/" {
				path = resourcesPath + string(uuidN(2, 1)) + "/team/"
			}
			path = strings.TrimSuffix(path, "?")
			srv.InjectFault(waldurtest.Fault{Count: 100, PathPrefix: path, Status: tt.status})
			if tt.path == resourcesPath+"?" {
				srv.InjectFault(waldurtest.Fault{Count: 100, PathPrefix: resourcesPath, Status: tt.status})
			}
			st, err := clientFor(t, srv, func(o *waldur.ClientOptions) { o.RetryMax = 1 }).ReadOffering(context.Background(), "iris", offering)
			if st != nil || err == nil {
				t.Fatalf("got state %v, error %v", st, err)
			}
			if !strings.Contains(err.Error(), `read offering "iris": `) || !strings.Contains(err.Error(), tt.wantInErr) ||
				!waldur.HasStatus(err, tt.status) {
				t.Errorf("error %v", err)
			}
		})
	}
}

// TestTerminatedAndForeignResources uses a server that ignores the state and
// offering filters (as an older or misconfigured one might).
func TestTerminatedAndForeignResources(t *testing.T) {
	list := func(extra string) string {
		return `[{"uuid": "` + string(uuidN(2, 1)) + `", "state": "OK", "offering_uuid": "` + string(offering) + `"},` +
			`{"uuid": "` + string(uuidN(2, 2)) + `", "state": "Terminated", "offering_uuid": "` + string(offering) + `"}` + extra + `]`
	}
	tests := []struct {
		name, body string
		wantErr    string
		wantN      int
	}{
		{"terminated resources are skipped", list(""), "", 1},
		{"a resource of another offering is an error", list(`,{"uuid": "` + string(uuidN(2, 3)) + `", "offering_uuid": "` + string(uuidN(9, 9)) + `"}`),
			"is the offering_uuid filter supported?", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(tt.body))
			}))
			defer hs.Close()
			res, err := newClient(t, hs.URL, "tok").ListResources(context.Background(), offering)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil || len(res) != tt.wantN || res[0].State != waldur.ResourceOK {
				t.Fatalf("got %+v, %v", res, err)
			}
		})
	}
}

// TestLenientDecoding feeds payloads that break the 8.0.5 schema the way other
// server versions do: dashed UUIDs, numbers and flags as strings.
func TestLenientDecoding(t *testing.T) {
	srv := waldurtest.New(t, waldurtest.LogViolations())
	srv.AddResourceJSON([]byte(`{
		"uuid": "0C1D2E3F-4051-6273-8495-A6B7C8D9E0F1",
		"offering_uuid": "7d1f3b2c-9a4e-4c0f-8b6a-5e2d1c0b9a87",
		"project_uuid": "a0b1c2d3-e4f5-4617-8899-0a1b2c3d4e5f",
		"state": "OK", "name": "genomics", "slug": "genomics",
		"limits": {"cpu": "4", "ram": 57.25, "gpu": null},
		"paused": "true", "downscaled": "false", "restrict_member_access": null,
		"created": "2026-03-11T10:22:31.774210+00:00",
		"unknown_new_field": {"nested": [1, 2, 3]}
	}`))
	res, err := clientFor(t, srv).ListResources(context.Background(), offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d resources", len(res))
	}
	r := res[0]
	if r.UUID != "0c1d2e3f405162738495a6b7c8d9e0f1" || r.ProjectUUID != projectA || r.OfferingUUID != offering {
		t.Errorf("uuids not normalised: %+v", r)
	}
	if r.Limits["cpu"] != "4" || r.Limits["ram"] != "57.25" || r.Limits["gpu"] != "" {
		t.Errorf("limits %v", r.Limits)
	}
	if !r.Paused || r.Downscaled || r.RestrictMemberAccess {
		t.Errorf("flags %v %v %v", r.Paused, r.Downscaled, r.RestrictMemberAccess)
	}
	if r.Created.IsZero() {
		t.Error("created not decoded")
	}
	if len(srv.Violations()) == 0 {
		t.Error("the drift was not even reported as a contract violation")
	}
}

// TestFixturePayloads decodes the example payloads, and both spellings of team
// roles pass through unchanged and normalise to the same short names.
func TestFixturePayloads(t *testing.T) {
	srv := waldurtest.New(t, waldurtest.LogViolations())
	srv.AddResourceJSON(fixture(t, "provider-resources-list-sparse.json"))
	srv.AddOrderJSON(fixture(t, "orders-list.json"))
	srv.AddOfferingUserJSON(fixture(t, "offering-users.json"))
	legacy := waldur.UUID("0b0b0b0b0b0b4b0b8b0b0b0b0b0b0b0b")
	srv.AddResource(waldur.Resource{UUID: uuidN(2, 7), OfferingUUID: offering, ProjectUUID: legacy})
	srv.SetTeamJSON(projectA, fixture(t, "team.json"))
	srv.SetTeamJSON(legacy, fixture(t, "team-legacy-role-names.json"))

	st, err := clientFor(t, srv).ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 2 || len(st.Orders) != 3 || len(st.OfferingUsers) != 3 {
		t.Fatalf("counts %d/%d/%d", len(st.Resources), len(st.Orders), len(st.OfferingUsers))
	}
	if o := st.Orders[0]; o.UUID != "2b3c4d5e6f70481a9b0c1d2e3f405162" || o.Limits["cpu_k_hours"] != "200" || o.Type != waldur.OrderCreate {
		t.Errorf("order %+v", o)
	}
	if u := st.OfferingUsers[2]; u.Username != "" || u.State != "Requested" {
		t.Errorf("user with a null username: %+v", u)
	}
	roles := func(p waldur.UUID) (raw, norm []string) {
		for _, m := range st.Teams[p] {
			raw = append(raw, m.Role)
			norm = append(norm, waldur.NormalizeRole(m.Role))
		}
		return raw, norm
	}
	newRaw, newNorm := roles(projectA)
	oldRaw, oldNorm := roles(legacy)
	if !slices.Contains(newRaw, "PROJECT.MANAGER") || !slices.Contains(oldRaw, "manager") {
		t.Errorf("roles not passed through: %v / %v", newRaw, oldRaw)
	}
	// team.json has one member more (a guest); the first three are the same users.
	if !slices.Equal(newNorm[:3], oldNorm) {
		t.Errorf("normalised roles differ: %v / %v", newNorm, oldNorm)
	}
	for _, m := range st.Teams[legacy] {
		if m.Username == "mira.lindqvist" && (m.OfferingUserState != "" || m.OfferingUserUsername != "mlindqvist") {
			t.Errorf("legacy member %+v", m)
		}
	}
}

// TestReadOfferingOfAnEmptyOffering: empty lists stay lists, so a snapshot reads
// "resources": [] rather than null.
func TestReadOfferingOfAnEmptyOffering(t *testing.T) {
	srv := waldurtest.New(t)
	srv.AddOffering(waldur.ProviderOffering{UUID: offering, Name: "iris"})
	st, err := clientFor(t, srv).ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	want := `{"name":"iris","offering_uuid":"` + string(offering) + `","resources":[],"orders":[],"teams":{},"offering_users":[]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestReadOfferingOfAnUnknownOffering: an offering Waldur answers 404 for is
// an *OfferingNotFoundError naming it and the Waldur, found before any
// listing (which would answer empty pages and read as an empty offering); a
// 404 that is not Waldur's (an HTML page) stays a plain API error.
func TestReadOfferingOfAnUnknownOffering(t *testing.T) {
	tests := []struct {
		name     string
		base     func(t *testing.T) (url, token string, listings func() int)
		notFound bool
	}{
		{"waldur answers 404", func(t *testing.T) (string, string, func() int) {
			srv := waldurtest.New(t)
			srv.AddResource(waldur.Resource{OfferingUUID: "0c1d2e3f405162738495a6b7c8d9e0f1"}) // another offering
			return srv.URL(), srv.Token(), func() int { return srv.Requests("/") - srv.Requests("/api/marketplace-provider-offerings/") }
		}, true},
		{"a proxy answers an HTML 404", func(t *testing.T) (string, string, func() int) {
			var other atomic.Int32
			h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasPrefix(r.URL.Path, "/api/marketplace-provider-offerings/") {
					other.Add(1)
				}
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, "<html>not here</html>")
			}))
			t.Cleanup(h.Close)
			return h.URL, "0123456789abcdef0123456789abcdef01234567", func() int { return int(other.Load()) }
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url, token, listings := tc.base(t)
			_, err := newClient(t, url, token).ReadOffering(context.Background(), "iris", offering)
			if err == nil {
				t.Fatal("an unknown offering was read")
			}
			want := "offering " + string(offering) + " not found at " + url + "/api/"
			if got := waldur.IsOfferingNotFound(err); got != tc.notFound || strings.Contains(err.Error(), want) != tc.notFound {
				t.Errorf("not found %v, want %v: %v", got, tc.notFound, err)
			}
			if !waldur.IsNotFound(err) {
				t.Errorf("the 404 is not kept: %v", err)
			}
			if n := listings(); n != 0 {
				t.Errorf("%d other requests before the offering was found", n)
			}
		})
	}
}
