package kctest_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/waldur/waldur-gitops/keycloak/kctest"
)

// These tests drive the fake through the real gocloak client and check that it
// answers as ../../../shared/reference/keycloak-admin-api.md says Keycloak does.

func setup(t *testing.T) (*kctest.Server, *gocloak.GoCloak, string) {
	t.Helper()
	s := kctest.NewServer()
	t.Cleanup(s.Close)
	gc := gocloak.NewClient(s.URL)
	jwt, err := gc.LoginAdmin(context.Background(), kctest.AdminUser, kctest.AdminPassword, kctest.AdminRealm)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return s, gc, jwt.AccessToken
}

func apiCode(err error) int {
	var ae *gocloak.APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return -1
}

func TestLogin(t *testing.T) {
	s := kctest.NewServer()
	defer s.Close()
	s.AddClient(kctest.AdminRealm, "gitops", "s3cret")
	gc := gocloak.NewClient(s.URL)
	ctx := context.Background()
	tests := []struct {
		name    string
		login   func() (*gocloak.JWT, error)
		code    int
		message string
	}{
		{"admin", func() (*gocloak.JWT, error) { return gc.LoginAdmin(ctx, "admin", "admin", "master") }, 0, ""},
		{"bad password", func() (*gocloak.JWT, error) { return gc.LoginAdmin(ctx, "admin", "nope", "master") }, 401, "invalid_grant: Invalid user credentials"},
		{"client credentials", func() (*gocloak.JWT, error) { return gc.LoginClient(ctx, "gitops", "s3cret", "master") }, 0, ""},
		{"bad client secret", func() (*gocloak.JWT, error) { return gc.LoginClient(ctx, "gitops", "x", "master") }, 401, "unauthorized_client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jwt, err := tc.login()
			if tc.code == 0 {
				if err != nil || jwt.AccessToken == "" || jwt.RefreshToken == "" || jwt.ExpiresIn != 60 {
					t.Fatalf("login = %+v, %v", jwt, err)
				}
				return
			}
			if apiCode(err) != tc.code || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error %v, want %d with %q", err, tc.code, tc.message)
			}
		})
	}
}

func TestGroupsThroughGocloak(t *testing.T) {
	s, gc, tok := setup(t)
	ctx := context.Background()
	realm := kctest.Realm
	attrs := map[string][]string{"managed_by": {"waldur-gitops"}}
	top, err := gc.CreateGroup(ctx, tok, realm, gocloak.Group{Name: gocloak.StringP("c_1"), Attributes: &attrs})
	if err != nil || top == "" {
		t.Fatalf("create: %q, %v", top, err)
	}
	if info, _ := s.Group(realm, "/c_1"); info.ID != top {
		t.Fatalf("the id from Location %q is not the group's %q", top, info.ID)
	}
	_, err = gc.CreateGroup(ctx, tok, realm, gocloak.Group{Name: gocloak.StringP("c_1")})
	if apiCode(err) != 409 || !strings.Contains(err.Error(), "409 Conflict: Top level group named 'c_1' already exists.") {
		t.Errorf("duplicate top-level: %v", err)
	}
	if _, err := gc.CreateGroup(ctx, tok, realm, gocloak.Group{}); apiCode(err) != 400 {
		t.Errorf("missing name: %v", err)
	}
	for i := range 12 {
		name := "p_" + string(rune('a'+i))
		id, err := gc.CreateChildGroup(ctx, tok, realm, top, gocloak.Group{Name: &name})
		if err != nil || id == "" {
			t.Fatalf("child %s: %q, %v", name, id, err)
		}
	}
	if _, err := gc.CreateChildGroup(ctx, tok, realm, top, gocloak.Group{Name: gocloak.StringP("p_a")}); apiCode(err) != 409 || !strings.Contains(err.Error(), "Sibling group named 'p_a' already exists.") {
		t.Errorf("duplicate sibling: %v", err)
	}
	if _, err := gc.CreateChildGroup(ctx, tok, realm, "nope", gocloak.Group{Name: gocloak.StringP("x")}); apiCode(err) != 404 {
		t.Errorf("unknown parent: %v", err)
	}
	// The same name may exist at another level.
	if _, err := gc.CreateGroup(ctx, tok, realm, gocloak.Group{Name: gocloak.StringP("p_a")}); err != nil {
		t.Errorf("same name at top level: %v", err)
	}

	t.Run("top-level listing is brief, without subgroups, with subGroupCount", func(t *testing.T) {
		var got []map[string]any
		resp, err := gc.GetRequestWithBearerAuth(ctx, tok).SetResult(&got).Get(s.URL + "/admin/realms/" + realm + "/groups")
		if err != nil || resp.StatusCode() != 200 || !strings.HasPrefix(resp.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("list: %v %v %q", resp, err, resp.Header().Get("Content-Type"))
		}
		if len(got) != 2 || got[0]["name"] != "c_1" || got[0]["subGroupCount"] != float64(12) || len(got[0]["subGroups"].([]any)) != 0 || got[0]["attributes"] != nil {
			t.Errorf("listing: %v", got)
		}
		full, err := gc.GetGroups(ctx, tok, realm, gocloak.GetGroupsParams{BriefRepresentation: gocloak.BoolP(false), Max: gocloak.IntP(1)})
		if err != nil || len(full) != 1 || full[0].Attributes == nil || (*full[0].Attributes)["managed_by"][0] != "waldur-gitops" {
			t.Errorf("full listing: %v %v", full, err)
		}
	})
	t.Run("children page with a default max of 10", func(t *testing.T) {
		var page []*gocloak.Group
		_, err := gc.GetRequestWithBearerAuth(ctx, tok).SetResult(&page).Get(s.URL + "/admin/realms/" + realm + "/groups/" + top + "/children")
		if err != nil || len(page) != 10 || *page[0].Name != "p_a" || *page[0].Path != "/c_1/p_a" {
			t.Fatalf("first page: %d %v", len(page), err)
		}
		_, err = gc.GetRequestWithBearerAuth(ctx, tok).SetResult(&page).SetQueryParams(map[string]string{"first": "10", "max": "10"}).
			Get(s.URL + "/admin/realms/" + realm + "/groups/" + top + "/children")
		if err != nil || len(page) != 2 || *page[1].Name != "p_l" {
			t.Fatalf("second page: %d %v", len(page), err)
		}
	})
	t.Run("search finds any depth and returns the path to the match", func(t *testing.T) {
		got, err := gc.GetGroups(ctx, tok, realm, gocloak.GetGroupsParams{Search: gocloak.StringP("P_B"), BriefRepresentation: gocloak.BoolP(true)})
		if err != nil || len(got) != 1 || *got[0].Name != "c_1" || len(*got[0].SubGroups) != 1 || *(*got[0].SubGroups)[0].Name != "p_b" {
			t.Fatalf("search: %v %v", got, err)
		}
		got, err = gc.GetGroups(ctx, tok, realm, gocloak.GetGroupsParams{Search: gocloak.StringP("p_a"), Exact: gocloak.BoolP(true)})
		if err != nil || len(got) != 2 {
			t.Fatalf("exact search: %d %v", len(got), err)
		}
	})
	t.Run("update replaces attributes, delete takes the subtree", func(t *testing.T) {
		newAttrs := map[string][]string{"x": {"1"}}
		if err := gc.UpdateGroup(ctx, tok, realm, gocloak.Group{ID: &top, Name: gocloak.StringP("c_1"), Attributes: &newAttrs}); err != nil {
			t.Fatal(err)
		}
		if info, _ := s.Group(realm, "/c_1"); len(info.Attributes) != 1 || info.Attributes["x"][0] != "1" {
			t.Errorf("attributes after update: %v", info.Attributes)
		}
		if err := gc.DeleteGroup(ctx, tok, realm, top); err != nil {
			t.Fatal(err)
		}
		if paths := s.Paths(realm); !slices.Equal(paths, []string{"/p_a"}) {
			t.Errorf("left after delete: %v", paths)
		}
		if err := gc.DeleteGroup(ctx, tok, realm, top); apiCode(err) != 404 {
			t.Errorf("second delete: %v", err)
		}
	})
}

func TestUsersAndMembership(t *testing.T) {
	s, gc, tok := setup(t)
	ctx := context.Background()
	realm := kctest.Realm
	alice := s.AddUser(realm, "alice")
	s.AddUser(realm, "alicia")
	parent, _ := s.AddGroup(realm, "", "team", nil)
	child, _ := s.AddGroup(realm, "/team", "devs", nil)
	for i := range 130 {
		s.AddUser(realm, "u"+string(rune('a'+i/26))+string(rune('a'+i%26)))
	}

	t.Run("users", func(t *testing.T) {
		u, err := gc.GetUserByID(ctx, tok, realm, alice)
		if err != nil || *u.Username != "alice" {
			t.Fatalf("by id: %v %v", u, err)
		}
		if _, err := gc.GetUserByID(ctx, tok, realm, "alice"); apiCode(err) != 404 || !strings.Contains(err.Error(), "User not found") {
			t.Errorf("unknown id: %v", err)
		}
		sub, _ := gc.GetUsers(ctx, tok, realm, gocloak.GetUsersParams{Username: gocloak.StringP("ALI")})
		exact, _ := gc.GetUsers(ctx, tok, realm, gocloak.GetUsersParams{Username: gocloak.StringP("Alice"), Exact: gocloak.BoolP(true)})
		if len(sub) != 2 || len(exact) != 1 || *exact[0].ID != alice {
			t.Errorf("substring found %d, exact %d", len(sub), len(exact))
		}
	})
	t.Run("membership is direct and idempotent", func(t *testing.T) {
		for range 2 {
			if err := gc.AddUserToGroup(ctx, tok, realm, alice, child); err != nil {
				t.Fatal(err)
			}
		}
		direct, _ := gc.GetGroupMembers(ctx, tok, realm, child, gocloak.GetGroupsParams{})
		inParent, _ := gc.GetGroupMembers(ctx, tok, realm, parent, gocloak.GetGroupsParams{})
		if len(direct) != 1 || len(inParent) != 0 {
			t.Errorf("child members %d, parent members %d", len(direct), len(inParent))
		}
		groups, _ := gc.GetUserGroups(ctx, tok, realm, alice, gocloak.GetGroupsParams{})
		if len(groups) != 1 || *groups[0].Path != "/team/devs" {
			t.Errorf("user groups: %v", groups)
		}
		if err := gc.DeleteUserFromGroup(ctx, tok, realm, alice, parent); err != nil {
			t.Errorf("removing a non-member: %v", err)
		}
		if err := gc.AddUserToGroup(ctx, tok, realm, alice, "nope"); apiCode(err) != 404 || !strings.Contains(err.Error(), "Group not found") {
			t.Errorf("unknown group: %v", err)
		}
	})
	t.Run("members page with a default max of 100", func(t *testing.T) {
		users, _ := gc.GetUsers(ctx, tok, realm, gocloak.GetUsersParams{Username: gocloak.StringP("u"), Max: gocloak.IntP(1000)})
		for _, u := range users {
			_ = gc.AddUserToGroup(ctx, tok, realm, *u.ID, parent)
		}
		first, _ := gc.GetGroupMembers(ctx, tok, realm, parent, gocloak.GetGroupsParams{})
		rest, _ := gc.GetGroupMembers(ctx, tok, realm, parent, gocloak.GetGroupsParams{First: gocloak.IntP(100), Max: gocloak.IntP(100)})
		if len(users) != 130 || len(first) != 100 || len(rest) != 30 {
			t.Errorf("users %d, first page %d, second %d", len(users), len(first), len(rest))
		}
	})
}

func TestTokensAndFaults(t *testing.T) {
	s, gc, tok := setup(t)
	ctx := context.Background()
	list := func(tok string) error {
		_, err := gc.GetGroups(ctx, tok, kctest.Realm, gocloak.GetGroupsParams{})
		return err
	}
	if err := list(tok); err != nil {
		t.Fatal(err)
	}
	if err := list(""); apiCode(err) != 401 || !strings.Contains(err.Error(), "401 Unauthorized: HTTP 401 Unauthorized") {
		t.Errorf("no token: %v", err)
	}
	s.ExpireTokens()
	if err := list(tok); apiCode(err) != 401 {
		t.Errorf("expired token: %v", err)
	}
	s.Inject(kctest.Fault{Method: http.MethodGet, Path: "/groups", Status: 503, Times: 2})
	// Go's transport retries an idempotent request once on a reused connection
	// that was closed, so it takes two drops to see a transport error.
	s.Inject(kctest.Fault{Path: "/groups", Status: 0, Times: 2})
	jwt, _ := gc.LoginAdmin(ctx, "admin", "admin", "master")
	for i, want := range []int{503, 503, 0} {
		if err := list(jwt.AccessToken); apiCode(err) != want {
			t.Errorf("call %d: %v, want code %d", i, err, want)
		}
	}
	if err := list(jwt.AccessToken); err != nil {
		t.Errorf("after the faults: %v", err)
	}
	if got := s.Calls()["GET /groups"]; got != 8 {
		t.Errorf("GET /groups counted %d times, want 8", got)
	}
	if s.Writes() != 0 {
		t.Errorf("writes %d", s.Writes())
	}
}

// TestWriteLatency: with a write latency, reads answer at once and a write
// takes effect after the delay; a write its client gives up on changes
// nothing.
func TestWriteLatency(t *testing.T) {
	s, gc, tok := setup(t)
	ctx := context.Background()
	const delay = 200 * time.Millisecond
	s.SetWriteLatency(delay)
	start := time.Now()
	if _, err := gc.GetGroups(ctx, tok, kctest.Realm, gocloak.GetGroupsParams{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= delay {
		t.Errorf("a read took %s", d)
	}
	start = time.Now()
	if _, err := gc.CreateGroup(ctx, tok, kctest.Realm, gocloak.Group{Name: gocloak.StringP("slow")}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < delay {
		t.Errorf("a write took %s, want at least %s", d, delay)
	}
	short, cancel := context.WithTimeout(ctx, delay/4)
	defer cancel()
	if _, err := gc.CreateGroup(short, tok, kctest.Realm, gocloak.Group{Name: gocloak.StringP("abandoned")}); err == nil {
		t.Fatal("a write outlived its client's deadline")
	}
	time.Sleep(2 * delay) // past the point where it would have taken effect
	if got := s.Paths(kctest.Realm); !slices.Equal(got, []string{"/slow"}) || s.Writes() != 1 {
		t.Errorf("groups %v after %d writes, want /slow alone from 1", got, s.Writes())
	}
}
