package keycloak_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/Nerzal/gocloak/v13"

	"github.com/waldur/waldur-gitops/keycloak/kctest"
)

// TestContract runs the scenarios that need no fault injection against a real
// Keycloak, to check that the fake the other tests use behaves like one. It
// runs only when KEYCLOAK_URL is set (CI has no Keycloak and skips it):
//
//	KEYCLOAK_URL=http://localhost:8080 KEYCLOAK_ADMIN_PASSWORD=admin go test ./keycloak -run TestContract
//
// KEYCLOAK_ADMIN_USER (default admin) and KEYCLOAK_ADMIN_REALM (default master)
// name the administrator. Each scenario works in a realm of its own, created
// for it and deleted afterwards.
func TestContract(t *testing.T) {
	base := os.Getenv("KEYCLOAK_URL")
	if base == "" {
		t.Skip("KEYCLOAK_URL is not set: the contract test needs a real Keycloak (CI uses the in-repo fake, keycloak/kctest)")
	}
	user, pw, loginRealm := envOr("KEYCLOAK_ADMIN_USER", "admin"), os.Getenv("KEYCLOAK_ADMIN_PASSWORD"), envOr("KEYCLOAK_ADMIN_REALM", "master")
	if pw == "" {
		t.Fatal("KEYCLOAK_ADMIN_PASSWORD is not set")
	}
	for _, sc := range scenarios {
		if sc.fakeOnly {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			kc := newRealKeycloak(t, strings.TrimRight(base, "/"), user, pw, loginRealm)
			sc.run(t, newEnv(t, kc, nil))
		})
	}
}

// TestContractHarness runs the contract test's own setup code (realm, users,
// groups, inspection through the admin API) against the fake, so that it is
// known to work before it meets a real Keycloak.
func TestContractHarness(t *testing.T) {
	s := kctest.NewServer()
	defer s.Close()
	for _, sc := range scenarios {
		if sc.fakeOnly {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			kc := newRealKeycloak(t, s.URL, kctest.AdminUser, kctest.AdminPassword, kctest.AdminRealm)
			sc.run(t, newEnv(t, kc, nil))
		})
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// realKeycloak is a realm of a real Keycloak, set up through gocloak.
type realKeycloak struct {
	base, user, pw, loginRealm, realm string
	gc                                *gocloak.GoCloak
}

func newRealKeycloak(t *testing.T, base, user, pw, loginRealm string) *realKeycloak {
	var b [4]byte
	_, _ = rand.Read(b[:])
	k := &realKeycloak{base: base, user: user, pw: pw, loginRealm: loginRealm, realm: "waldur-gitops-test-" + hex.EncodeToString(b[:]), gc: gocloak.NewClient(base)}
	ctx := context.Background()
	if _, err := k.gc.CreateRealm(ctx, k.token(t), gocloak.RealmRepresentation{Realm: &k.realm, Enabled: gocloak.BoolP(true)}); err != nil {
		t.Fatalf("create realm %s: %v", k.realm, err)
	}
	t.Cleanup(func() {
		if err := k.gc.DeleteRealm(ctx, k.token(t), k.realm); err != nil {
			t.Errorf("delete realm %s: %v", k.realm, err)
		}
	})
	return k
}

// token logs in afresh: scenarios are short, and this never meets an expired token.
func (k *realKeycloak) token(t *testing.T) string {
	t.Helper()
	jwt, err := k.gc.LoginAdmin(context.Background(), k.user, k.pw, k.loginRealm)
	if err != nil {
		t.Fatalf("admin login: %v", err)
	}
	return jwt.AccessToken
}

func (k *realKeycloak) URL() string                     { return k.base }
func (k *realKeycloak) Realm() string                   { return k.realm }
func (k *realKeycloak) Login() (string, string, string) { return k.user, k.pw, k.loginRealm }

func (k *realKeycloak) AddUser(t *testing.T, username string) string {
	t.Helper()
	id, err := k.gc.CreateUser(context.Background(), k.token(t), k.realm, gocloak.User{Username: &username, Enabled: gocloak.BoolP(true)})
	if err != nil {
		t.Fatalf("create user %s: %v", username, err)
	}
	return id
}

func (k *realKeycloak) groupID(t *testing.T, tok, path string) (string, bool) {
	t.Helper()
	g, err := k.gc.GetGroupByPath(context.Background(), tok, k.realm, path)
	if err != nil {
		if ae := (*gocloak.APIError)(nil); errors.As(err, &ae) && ae.Code == 404 {
			return "", false
		}
		t.Fatalf("group %s: %v", path, err)
	}
	return *g.ID, true
}

func (k *realKeycloak) AddGroup(t *testing.T, parentPath, name string, attrs map[string][]string) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	g := gocloak.Group{Name: &name, Attributes: &attrs}
	var err error
	if parentPath == "" {
		_, err = k.gc.CreateGroup(ctx, tok, k.realm, g)
	} else {
		pid, ok := k.groupID(t, tok, parentPath)
		if !ok {
			t.Fatalf("no group %s", parentPath)
		}
		_, err = k.gc.CreateChildGroup(ctx, tok, k.realm, pid, g)
	}
	if err != nil {
		t.Fatalf("create group %s: %v", name, err)
	}
}

func (k *realKeycloak) AddMember(t *testing.T, path, username string) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	us, err := k.gc.GetUsers(ctx, tok, k.realm, gocloak.GetUsersParams{Username: &username, Exact: gocloak.BoolP(true)})
	if err != nil || len(us) != 1 {
		t.Fatalf("user %s: %v %v", username, us, err)
	}
	gid, ok := k.groupID(t, tok, path)
	if !ok {
		t.Fatalf("no group %s", path)
	}
	if err := k.gc.AddUserToGroup(ctx, tok, k.realm, *us[0].ID, gid); err != nil {
		t.Fatal(err)
	}
}

func (k *realKeycloak) Group(t *testing.T, path string) (kctest.GroupInfo, bool) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	id, ok := k.groupID(t, tok, path)
	if !ok {
		return kctest.GroupInfo{}, false
	}
	g, err := k.gc.GetGroup(ctx, tok, k.realm, id)
	if err != nil {
		t.Fatal(err)
	}
	info := kctest.GroupInfo{ID: id, Attributes: map[string][]string{}, Members: []string{}, Children: []string{}}
	if g.Attributes != nil {
		info.Attributes = *g.Attributes
	}
	for first := 0; ; first += 100 {
		ms, err := k.gc.GetGroupMembers(ctx, tok, k.realm, id, gocloak.GetGroupsParams{First: gocloak.IntP(first), Max: gocloak.IntP(100)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			info.Members = append(info.Members, *m.Username)
		}
		if len(ms) < 100 {
			break
		}
	}
	for _, c := range k.children(t, tok, id) {
		info.Children = append(info.Children, *c.Name)
	}
	slices.Sort(info.Members)
	slices.Sort(info.Children)
	return info, true
}

func (k *realKeycloak) children(t *testing.T, tok, id string) []*gocloak.Group {
	t.Helper()
	var all []*gocloak.Group
	for first := 0; ; first += 100 {
		var page []*gocloak.Group
		resp, err := k.gc.GetRequestWithBearerAuth(context.Background(), tok).SetResult(&page).
			SetQueryParams(map[string]string{"first": strconv.Itoa(first), "max": "100"}).
			Get(k.base + "/admin/realms/" + url.PathEscape(k.realm) + "/groups/" + id + "/children")
		if err != nil || resp.IsError() {
			t.Fatalf("children of %s: %v %v", id, resp, err)
		}
		all = append(all, page...)
		if len(page) < 100 {
			return all
		}
	}
}

func (k *realKeycloak) Paths(t *testing.T) []string {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	var out []string
	var walk func(g *gocloak.Group, prefix string)
	walk = func(g *gocloak.Group, prefix string) {
		p := prefix + "/" + *g.Name
		out = append(out, p)
		for _, c := range k.children(t, tok, *g.ID) {
			walk(c, p)
		}
	}
	for first := 0; ; first += 100 {
		gs, err := k.gc.GetGroups(ctx, tok, k.realm, gocloak.GetGroupsParams{First: gocloak.IntP(first), Max: gocloak.IntP(100)})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			walk(g, "")
		}
		if len(gs) < 100 {
			break
		}
	}
	slices.Sort(out)
	return out
}
