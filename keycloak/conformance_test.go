package keycloak_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/waldur/waldur-gitops/internal/testenv/keycloaktest"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
)

// realKC is the package's real Keycloak, started by the first test that
// needs it (none with -short) and stopped by TestMain.
var realKC keycloaktest.Shared

func TestMain(m *testing.M) { os.Exit(keycloaktest.Main(m, &realKC)) }

// rawAPI talks to a Keycloak (real or fake) without gocloak, so that the
// conformance test sees status codes and bodies exactly as they come.
type rawAPI struct {
	base, realm string
	user, pw    string
	token       string
	tokenAt     time.Time // admin tokens of master live 60 s: renewed after 30
	// ids maps a symbolic name to the id this server gave the object, and
	// names the other way round, for writing requests and reading answers.
	ids   map[string]string
	names map[string]string
}

func newRawAPI(t *testing.T, base, user, pw, realm string) *rawAPI {
	t.Helper()
	a := &rawAPI{base: strings.TrimRight(base, "/"), realm: realm, user: user, pw: pw, ids: map[string]string{}, names: map[string]string{}}
	a.login(t)
	return a
}

// login gets an admin token with the password grant.
func (a *rawAPI) login(t *testing.T) {
	t.Helper()
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {a.user}, "password": {a.pw}}
	resp, err := http.PostForm(a.base+"/realms/master/protocol/openid-connect/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("admin login at %s: %s %v", a.base, resp.Status, err)
	}
	a.token, a.tokenAt = tok.AccessToken, time.Now()
}

// answer is a response as the conformance test compares it.
type answer struct {
	status   int
	body     string // canonical JSON, or the raw text when it is not JSON
	location bool   // a Location header was sent
}

// expand replaces {name} in s with the id of name ("{nope}" is an id that
// exists nowhere).
func (a *rawAPI) expand(s string) string {
	for name, id := range a.ids {
		s = strings.ReplaceAll(s, "{"+name+"}", id)
	}
	return strings.ReplaceAll(s, "{nope}", "0b0e0000-0000-4000-8000-000000000000")
}

// do sends one admin request; path is relative to /admin/realms/<realm>
// unless it starts with "!" (relative to the base URL then), and is sent as
// written, unnormalised.
func (a *rawAPI) do(t *testing.T, method, path string, body any, auth bool) answer {
	t.Helper()
	u := a.base + "/admin/realms/" + a.realm + a.expand(path)
	if p, ok := strings.CutPrefix(path, "!"); ok {
		u = a.base + strings.ReplaceAll(a.expand(p), "{realm}", a.realm)
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader([]byte(a.expand(string(b))))
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		if a.user != "" && time.Since(a.tokenAt) > 30*time.Second {
			a.login(t)
		}
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req) // no redirects followed
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	ans := answer{status: resp.StatusCode, location: resp.Header.Get("Location") != ""}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode == http.StatusCreated {
		id := loc[strings.LastIndex(loc, "/")+1:]
		m, _ := body.(map[string]any)
		if u, ok := m["username"].(string); ok && a.names[id] == "" {
			a.ids[strings.ToLower(u)], a.names[id] = id, strings.ToLower(u)
		}
		if name, ok := m["name"].(string); ok && a.names[id] == "" {
			// Named after the group: a later request or answer can refer to it.
			key := name
			if _, dup := a.ids[key]; dup {
				key = name + "#2"
			}
			a.ids[key], a.names[id] = id, key
		}
	}
	var v any
	if len(bytes.TrimSpace(raw)) == 0 {
		ans.body = ""
	} else if err := json.Unmarshal(raw, &v); err != nil {
		ans.body = "text: " + strings.TrimSpace(string(raw))
	} else {
		c, _ := json.Marshal(a.canonical(v, ""))
		ans.body = string(c)
	}
	return ans
}

// volatile are keys whose values differ between any two servers.
var volatile = map[string]bool{"createdTimestamp": true}

// canonical replaces the ids this server gave with their symbolic names and
// volatile values with a placeholder; json.Marshal then sorts the keys.
func (a *rawAPI) canonical(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = a.canonical(e, k)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = a.canonical(e, "")
		}
		return out
	case string:
		if n, ok := a.names[x]; ok {
			return "<" + n + ">"
		}
		if volatile[key] {
			return "<volatile>"
		}
		return x
	case float64:
		if volatile[key] {
			return "<volatile>"
		}
	}
	return v
}

// conformanceSetup makes the same realm on a server: groups "parent" (with an
// attribute) and "Parent", twelve children of parent, a top-level "kid03",
// users "Alice" and "bob", alice a member of parent. It returns the answers,
// which the test compares too.
func conformanceSetup(t *testing.T, a *rawAPI) []answer {
	t.Helper()
	var out []answer
	step := func(method, path string, body any) {
		out = append(out, a.do(t, method, path, body, true))
	}
	step("POST", "!/admin/realms", map[string]any{"realm": a.realm, "enabled": true})
	if out[0].status != http.StatusCreated {
		t.Fatalf("%s: create realm %s: %+v", a.base, a.realm, out[0])
	}
	step("POST", "/groups", map[string]any{"name": "parent", "attributes": map[string][]string{"managed_by": {"waldur-gitops"}}})
	step("POST", "/groups", map[string]any{"name": "Parent"})
	for i := range 12 {
		step("POST", "/groups/{parent}/children", map[string]any{"name": fmt.Sprintf("kid%02d", i), "attributes": map[string][]string{"n": {fmt.Sprint(i)}}})
	}
	step("POST", "/groups", map[string]any{"name": "kid03"})
	for _, u := range []string{"Alice", "bob"} {
		ans := a.do(t, "POST", "/users", map[string]any{"username": u, "enabled": true}, true)
		out = append(out, ans)
		// Users are found by name: their ids come from a search.
		var us []struct{ ID, Username string }
		req, _ := http.NewRequest("GET", a.base+"/admin/realms/"+a.realm+"/users?exact=true&username="+url.QueryEscape(u), nil)
		req.Header.Set("Authorization", "Bearer "+a.token) // fresh: do just ran
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&us)
		resp.Body.Close()
		if len(us) != 1 {
			t.Fatalf("%s: user %s not found after creating it (%+v): %v", a.base, u, ans, us)
		}
		name := strings.ToLower(u)
		a.ids[name], a.names[us[0].ID] = us[0].ID, name
	}
	step("PUT", "/users/{alice}/groups/{parent}", nil)
	return out
}

// probe is one request of the conformance test.
type probe struct {
	why          string
	method, path string
	body         any
	noAuth       bool
}

// probes are the requests waldur-gitops makes, and the answers it relies on,
// in an order that builds on earlier ones.
var probes = []probe{
	{why: "top-level listing, no parameters: brief, subGroupCount, empty subGroups", method: "GET", path: "/groups"},
	{why: "top-level listing as the client asks: full, paged", method: "GET", path: "/groups?first=0&max=100&briefRepresentation=false"},
	{why: "second page", method: "GET", path: "/groups?first=2&max=2&briefRepresentation=false"},
	{why: "children, no parameters: 10 per page, full", method: "GET", path: "/groups/{parent}/children"},
	{why: "children as the client asks", method: "GET", path: "/groups/{parent}/children?first=10&max=100&briefRepresentation=false"},
	{why: "children, brief asked", method: "GET", path: "/groups/{parent}/children?first=0&max=3&briefRepresentation=true"},
	{why: "children of a group without any", method: "GET", path: "/groups/{kid03}/children"},
	{why: "children of an unknown group", method: "GET", path: "/groups/{nope}/children"},
	{why: "exact search: the top-level match and the parent of the child match", method: "GET", path: "/groups?search=kid03&exact=true&first=0&max=100&briefRepresentation=false"},
	{why: "exact search is case-sensitive", method: "GET", path: "/groups?search=PARENT&exact=true&first=0&max=100&briefRepresentation=false"},
	{why: "exact search of a top-level name", method: "GET", path: "/groups?search=parent&exact=true&first=0&max=100&briefRepresentation=false"},
	{why: "non-exact search is case-insensitive, substring", method: "GET", path: "/groups?search=PAR&first=0&max=100&briefRepresentation=false"},
	{why: "non-exact search default representation", method: "GET", path: "/groups?search=kid1"},
	{why: "duplicate top-level name", method: "POST", path: "/groups", body: map[string]any{"name": "parent"}},
	{why: "duplicate sibling name", method: "POST", path: "/groups/{parent}/children", body: map[string]any{"name": "kid01"}},
	{why: "names are case-sensitive: PARENT beside parent and Parent", method: "POST", path: "/groups", body: map[string]any{"name": "PARENT"}},
	{why: "a child may share a top-level group's name", method: "POST", path: "/groups/{Parent}/children", body: map[string]any{"name": "kid03", "attributes": map[string][]string{"a": {"b"}}}},
	{why: "attributes must be lists", method: "POST", path: "/groups", body: map[string]any{"name": "x", "attributes": map[string]string{"a": "b"}}},
	{why: "a group by id", method: "GET", path: "/groups/{parent}"},
	{why: "an unknown group by id", method: "GET", path: "/groups/{nope}"},
	{why: "update without attributes keeps them", method: "PUT", path: "/groups/{parent}", body: map[string]any{"id": "{parent}", "name": "parent"}},
	{why: "… as the next read shows", method: "GET", path: "/groups/{parent}"},
	{why: "update with attributes replaces them", method: "PUT", path: "/groups/{kid00}", body: map[string]any{"id": "{kid00}", "name": "kid00", "attributes": map[string][]string{"m": {"1", "2"}}}},
	{why: "… as the next read shows", method: "GET", path: "/groups/{kid00}"},
	{why: "update of an unknown group", method: "PUT", path: "/groups/{nope}", body: map[string]any{"id": "{nope}", "name": "x"}},
	{why: "group by path, normalised", method: "GET", path: "/group-by-path/parent/kid01"},
	{why: "group by path with a leading slash gives // : not normalised", method: "GET", path: "/group-by-path//parent"},
	{why: "an unknown path", method: "GET", path: "/group-by-path/nope"},
	{why: "a doubled slash elsewhere", method: "GET", path: "//groups"},
	{why: "a dot segment", method: "GET", path: "/groups/./{parent}"},
	{why: "members, no parameters", method: "GET", path: "/groups/{parent}/members"},
	{why: "members as the client asks: brief", method: "GET", path: "/groups/{parent}/members?first=0&max=100&briefRepresentation=true"},
	{why: "members of an unknown group", method: "GET", path: "/groups/{nope}/members?first=0&max=100&briefRepresentation=true"},
	{why: "adding a member twice: 204 again", method: "PUT", path: "/users/{alice}/groups/{parent}"},
	{why: "removing a non-member: 204", method: "DELETE", path: "/users/{bob}/groups/{parent}"},
	{why: "adding to an unknown group", method: "PUT", path: "/users/{alice}/groups/{nope}"},
	{why: "removing from an unknown group", method: "DELETE", path: "/users/{alice}/groups/{nope}"},
	{why: "adding an unknown user", method: "PUT", path: "/users/{nope}/groups/{parent}"},
	{why: "a user by id", method: "GET", path: "/users/{alice}"},
	{why: "an unknown user id", method: "GET", path: "/users/{nope}"},
	{why: "a user name is not an id", method: "GET", path: "/users/alice"},
	{why: "exact user search ignores case; names are stored lower-case", method: "GET", path: "/users?username=ALICE&exact=true&briefRepresentation=true"},
	{why: "non-exact user search", method: "GET", path: "/users?username=li&briefRepresentation=true"},
	{why: "user search, default representation", method: "GET", path: "/users?username=alice&exact=true"},
	{why: "exact user search, no match", method: "GET", path: "/users?username=ali&exact=true&briefRepresentation=true"},
	{why: "deleting a group", method: "DELETE", path: "/groups/{kid11}"},
	{why: "deleting it again", method: "DELETE", path: "/groups/{kid11}"},
	{why: "no token", method: "GET", path: "/groups", noAuth: true},
	{why: "an unknown realm", method: "GET", path: "!/admin/realms/{realm}-nope/groups"},
}

// TestConformance sends the same requests to a real Keycloak and to kctest
// and compares status codes, Location headers and bodies (ids and volatile
// values replaced by names): the fake may not drift from what the real
// server answers on any endpoint waldur-gitops uses.
func TestConformance(t *testing.T) {
	kc := realKC.Need(t)
	fake := kctest.NewServer()
	defer fake.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	realm := "conformance-" + hex.EncodeToString(b[:])
	real := newRawAPI(t, kc.URL, keycloaktest.AdminUser, kc.AdminPassword, realm)
	fa := newRawAPI(t, fake.URL, kctest.AdminUser, kctest.AdminPassword, realm)
	t.Cleanup(func() { real.do(t, "DELETE", "", nil, true) })

	rs, fs := conformanceSetup(t, real), conformanceSetup(t, fa)
	for i := range rs {
		if rs[i] != fs[i] {
			t.Errorf("setup step %d: real %+v, fake %+v", i, rs[i], fs[i])
		}
	}
	for _, p := range probes {
		ra := real.do(t, p.method, p.path, p.body, !p.noAuth)
		fa := fa.do(t, p.method, p.path, p.body, !p.noAuth)
		if ra != fa {
			t.Errorf("%s %s (%s):\n  real %d location=%v %s\n  fake %d location=%v %s", p.method, p.path, p.why,
				ra.status, ra.location, ra.body, fa.status, fa.location, fa.body)
		} else if testing.Verbose() {
			t.Logf("%s %s: %d %s", p.method, p.path, ra.status, ra.body)
		}
	}
}

// permissionProbes are the calls waldur-gitops makes, asked by service
// accounts with too few roles.
var permissionProbes = []probe{
	{why: "list groups", method: "GET", path: "/groups?first=0&max=100&briefRepresentation=false"},
	{why: "search a group", method: "GET", path: "/groups?search=parent&exact=true&first=0&max=100&briefRepresentation=false"},
	{why: "list subgroups", method: "GET", path: "/groups/{parent}/children?first=0&max=100&briefRepresentation=false"},
	{why: "list members", method: "GET", path: "/groups/{parent}/members?first=0&max=100&briefRepresentation=true"},
	{why: "a user by id", method: "GET", path: "/users/{alice}"},
	{why: "a user by name", method: "GET", path: "/users?username=alice&exact=true&briefRepresentation=true"},
	{why: "create a group", method: "POST", path: "/groups", body: map[string]any{"name": "new"}},
	{why: "create a subgroup", method: "POST", path: "/groups/{parent}/children", body: map[string]any{"name": "kid99"}},
	{why: "update a group", method: "PUT", path: "/groups/{kid00}", body: map[string]any{"id": "{kid00}", "name": "kid00", "attributes": map[string][]string{"a": {"b"}}}},
	{why: "add a member", method: "PUT", path: "/users/{bob}/groups/{kid01}"},
	{why: "remove a member", method: "DELETE", path: "/users/{alice}/groups/{parent}"},
	{why: "delete a group", method: "DELETE", path: "/groups/{kid02}"},
}

// TestConformancePermissions compares what a realm-scoped service account
// with one set of realm-management roles may do on the real server and on
// kctest: no role refuses everything (403), query-groups alone lists no
// group (200, []) and refuses the rest, view-users reads and may not write,
// manage-users does everything.
func TestConformancePermissions(t *testing.T) {
	kc := realKC.Need(t)
	fake := kctest.NewServer()
	defer fake.Close()
	for _, roles := range [][]string{{}, {"query-groups"}, {"query-users"}, {"view-users"}, {"manage-users"}} {
		t.Run(strings.Join(append([]string{"roles"}, roles...), " "), func(t *testing.T) {
			var b [4]byte
			_, _ = rand.Read(b[:])
			realm := "permissions-" + hex.EncodeToString(b[:])
			var got [2][]answer
			for i, srv := range []struct{ base, pw string }{{kc.URL, kc.AdminPassword}, {fake.URL, kctest.AdminPassword}} {
				admin := newRawAPI(t, srv.base, keycloaktest.AdminUser, srv.pw, realm)
				conformanceSetup(t, admin)
				if i == 0 {
					t.Cleanup(func() { admin.do(t, "DELETE", "", nil, true) })
				}
				secret := ServiceAccount(t, gocloak.NewClient(srv.base), admin.token, realm, "waldur-gitops", roles)
				sa := *admin
				sa.user, sa.token = "", serviceToken(t, srv.base, realm, "waldur-gitops", secret)
				for _, p := range permissionProbes {
					got[i] = append(got[i], sa.do(t, p.method, p.path, p.body, true))
				}
			}
			for i, p := range permissionProbes {
				if got[0][i] != got[1][i] {
					t.Errorf("%s %s (%s):\n  real %d %s\n  fake %d %s", p.method, p.path, p.why, got[0][i].status, got[0][i].body, got[1][i].status, got[1][i].body)
				} else if testing.Verbose() {
					t.Logf("%s %s: %d %.80s", p.method, p.path, got[0][i].status, got[0][i].body)
				}
			}
		})
	}
}

// serviceToken logs a client in with the client credentials grant.
func serviceToken(t *testing.T, base, realm, clientID, secret string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {secret}}
	resp, err := http.PostForm(strings.TrimRight(base, "/")+"/realms/"+realm+"/protocol/openid-connect/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("client %s login to realm %s: %s %v", clientID, realm, resp.Status, err)
	}
	return tok.AccessToken
}

// TestConformancePageSizes compares the default page sizes where the client
// relies on them or could: 101 top-level groups, 101 users, all members of
// one group, listed and searched without first/max.
func TestConformancePageSizes(t *testing.T) {
	kc := realKC.Need(t)
	fake := kctest.NewServer()
	defer fake.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	realm := "pages-" + hex.EncodeToString(b[:])
	probes := []probe{
		{why: "top-level groups, no max", method: "GET", path: "/groups"},
		{why: "top-level groups, second page of the client's size", method: "GET", path: "/groups?first=100&max=100&briefRepresentation=false"},
		{why: "group search matching all 101, no max", method: "GET", path: "/groups?search=g"},
		{why: "members, no max", method: "GET", path: "/groups/{g000}/members"},
		{why: "users, no max", method: "GET", path: "/users?briefRepresentation=true"},
		{why: "user search, no max", method: "GET", path: "/users?username=user&briefRepresentation=true"},
	}
	var got [2][]answer
	for i, srv := range []struct{ base, pw string }{{kc.URL, kc.AdminPassword}, {fake.URL, kctest.AdminPassword}} {
		a := newRawAPI(t, srv.base, keycloaktest.AdminUser, srv.pw, realm)
		if ans := a.do(t, "POST", "!/admin/realms", map[string]any{"realm": realm, "enabled": true}, true); ans.status != http.StatusCreated {
			t.Fatalf("%s: create realm: %+v", srv.base, ans)
		}
		if i == 0 {
			t.Cleanup(func() { a.do(t, "DELETE", "", nil, true) })
		}
		for n := range 101 {
			for _, ans := range []answer{
				a.do(t, "POST", "/groups", map[string]any{"name": fmt.Sprintf("g%03d", n)}, true),
				a.do(t, "POST", "/users", map[string]any{"username": fmt.Sprintf("user%03d", n), "enabled": true}, true),
			} {
				if ans.status != http.StatusCreated {
					t.Fatalf("%s: setup: %+v", srv.base, ans)
				}
			}
			if ans := a.do(t, "PUT", fmt.Sprintf("/users/{user%03d}/groups/{g000}", n), nil, true); ans.status != http.StatusNoContent {
				t.Fatalf("%s: setup: %+v", srv.base, ans)
			}
		}
		for _, p := range probes {
			got[i] = append(got[i], a.do(t, p.method, p.path, p.body, true))
		}
	}
	for i, p := range probes {
		r, f := got[0][i], got[1][i]
		if r != f {
			t.Errorf("%s %s (%s):\n  real %d, %d bytes: %.300s\n  fake %d, %d bytes: %.300s", p.method, p.path, p.why, r.status, len(r.body), r.body, f.status, len(f.body), f.body)
		} else if testing.Verbose() {
			var items []any
			_ = json.Unmarshal([]byte(r.body), &items)
			t.Logf("%s %s: %d, %d items", p.method, p.path, r.status, len(items))
		}
	}
}
